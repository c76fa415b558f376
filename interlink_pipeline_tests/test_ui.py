"""`make dev` (`dg dev`) for real: the daemon turns two dropped crawls into two successful runs, and a
person in a headless Chromium sees them, launches a materialisation for one of the sites and reads its
metadata."""

import contextlib
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import dagster as dg
import duckdb
import psutil
import pytest

from interlink_pipeline.core.ingest.inbox import register_crawl
from interlink_pipeline.sample import generate_site, write_site
from interlink_pipeline_tests.helpers import (
    LIGHT,
    PROJECT_ROOT,
    changed_light_crawl,
    chromium_path,
    run_cli,
)
from interlink_pipeline_tests.services import free_port, http_ok, service, step_spans, wait_for

RUNS_TIMEOUT_S = 900
# a generated site without links dropped beside lightchiropractic (a real crawl with its links): its run is
# quick, and the site is the one launched from the UI
DROPPED = "www.dropped.example"


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory, model_cache):
    """`make dev`'s command on a free loopback port, over a temporary instance, warehouse and inbox: one
    for the module's tests on a worker (each test tells its own runs from those before it), stopped once
    they are done."""
    tmp_path = tmp_path_factory.mktemp("dagster-dev")
    home, inbox = tmp_path / "dagster_home", tmp_path / "inbox"
    home.mkdir()
    inbox.mkdir()
    shutil.copyfile(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    warehouse = tmp_path / "warehouse" / "interlink.duckdb"
    port = free_port()
    log = tmp_path / "dagster-dev.log"
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "INTERLINK_WAREHOUSE": str(warehouse),
        "INTERLINK_INBOX": str(inbox),
        "INTERLINK_MODEL_CACHE": str(model_cache),
        "INTERLINK_INBOX_SCAN_SECONDS": "5",  # a drop is seen in seconds, not half a minute
    }
    command = make_dev_command(port)
    url = f"http://127.0.0.1:{port}"
    # stopped with SIGINT, what Ctrl-C does: dg dev stops its children
    with service(command, log, cwd=PROJECT_ROOT, env=env):
        wait_for(lambda: http_ok(f"{url}/server_info"), 180, "the webserver", log)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            yield {
                "env": env,
                "url": url,
                "port": port,
                "inbox": inbox,
                "warehouse": warehouse,
                "instance": instance,
                "log": log,
            }


def make_dev_command(port: int) -> list[str]:
    """The command `make dev PORT=port` runs (make's dry run), with this environment's executables."""
    planned = subprocess.run(
        ["make", "--silent", "--dry-run", "dev", f"PORT={port}"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()[-1]
    program, *args = shlex.split(planned)
    assert Path(program).name == "python" and args[:3] == ["-m", "interlink_pipeline.cli.dev_server", "start"]
    return [sys.executable, *args]


def _non_loopback_addresses() -> list[str]:
    return [
        a.address
        for addresses in psutil.net_if_addrs().values()
        for a in addresses
        if a.family == socket.AF_INET and not a.address.startswith("127.")
    ]


def _finished(instance, earlier: set[str], **filters):
    """The finished runs (matching `filters`) other than the `earlier` ones."""
    runs = instance.get_runs(filters=dg.RunsFilter(**filters))
    return [r for r in runs if r.is_finished and r.run_id not in earlier]


def _run_ids(instance) -> set[str]:
    return {run.run_id for run in instance.get_runs()}


def test_two_drops_run_end_to_end_and_the_ui_launches_and_shows_a_materialisation(
    dev_server, crawls, tmp_path
):
    from playwright.sync_api import expect, sync_playwright

    instance, log = dev_server["instance"], dev_server["log"]
    assert not re.search(r"SupersessionWarning|DeprecationWarning", log.read_text())  # the current CLI
    earlier = _run_ids(instance)
    dropped = write_site(generate_site(200, seed=5, host=DROPPED, with_links=False), tmp_path / "dropped")
    register_crawl(dev_server["inbox"], DROPPED, dropped["crawl"])
    light = crawls / "lightchiropractic"
    register_crawl(dev_server["inbox"], LIGHT, light / "internal_all.csv", light / "all_inlinks.csv")

    # the daemon's sensor picks both up; the writer pool queues their DuckDB steps instead of colliding
    def both_inbox_runs():
        done = _finished(instance, earlier, tags={"interlink/trigger": "inbox"})
        return done if len(done) == 2 else None

    inbox_runs = wait_for(
        both_inbox_runs,
        RUNS_TIMEOUT_S,
        "two inbox runs to finish",
        log,
    )
    assert {r.tags["dagster/partition"] for r in inbox_runs} == {DROPPED, LIGHT}
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in inbox_runs), log.read_text()[-6000:]
    # whenever the second run started, no two steps of the two runs wrote the file at once
    spans = sorted(span for run in inbox_runs for span in step_spans(instance, run.run_id))
    assert len(spans) > 20 and all(a[1] <= b[0] for a, b in pairwise(spans))
    with duckdb.connect(str(dev_server["warehouse"]), read_only=True) as con:
        planned = dict(con.execute("SELECT site, count(*) FROM graph.link_plan GROUP BY site").fetchall())
        marts = {row[0] for row in con.execute("SELECT DISTINCT site FROM marts.site_health").fetchall()}
        crawled = con.execute("SELECT count(*) FROM raw.crawl_pages WHERE site = ?", [DROPPED]).fetchone()[0]
    assert set(planned) == marts == {DROPPED, LIGHT} and min(planned.values()) > 0

    # the webserver answers on loopback only: every other address of this machine refuses
    for address in _non_loopback_addresses():
        with pytest.raises(OSError), socket.create_connection((address, dev_server["port"]), timeout=5):
            pass

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(60_000)
        # assertions wait as long as actions: on a loaded CI machine the run list takes over 5 s to load
        expect.set_options(timeout=60_000)
        # Dagster's "join the community" dialog appears once, at some point: skip it whenever it does
        page.add_locator_handler(
            page.get_by_role("button", name="Skip", exact=True), lambda skip: skip.click()
        )

        # both runs are in the run list, successful, each with its site
        page.goto(f"{dev_server['url']}/runs", wait_until="networkidle")
        for run in inbox_runs:
            row = page.locator("[class*=RunsFeedRow_rowGrid]", has_text=run.run_id[:8])
            expect(row).to_contain_text(run.tags["dagster/partition"])
            expect(row).to_contain_text("site_pipeline")
            expect(row).to_contain_text("Success")

        # the jobs listed are the documented ones: Dagster's implicit asset job stays hidden
        page.goto(f"{dev_server['url']}/jobs", wait_until="networkidle")
        expect(page.get_by_text("site_pipeline", exact=True).first).to_be_visible()
        expect(page.get_by_text("__ASSET_JOB")).to_have_count(0)

        # launch `raw.crawl_pages` for nutrisport from its asset page, as a user would
        page.goto(f"{dev_server['url']}/assets/raw/crawl_pages", wait_until="networkidle")
        page.get_by_role("button", name="Materialize…").first.click()
        launch = page.locator(".dagster-dialog")
        launch.get_by_text("Select a partition or create one").click()
        page.keyboard.type(DROPPED)
        page.locator(".dagster-popover span", has_text=DROPPED).first.click()
        launch.get_by_text(re.compile("Launch runs to materialize")).click()  # closes the partition list
        launch.get_by_role("button", name="Launch 1 run").click()

        ui_run = wait_for(
            lambda: next(
                (
                    r
                    for r in _finished(instance, earlier, tags={"dagster/partition": DROPPED})
                    if "interlink/trigger" not in r.tags
                ),
                None,
            ),
            300,
            "the run launched from the UI",
            log,
        )
        assert ui_run.status == dg.DagsterRunStatus.SUCCESS, log.read_text()[-6000:]
        assert ui_run.asset_selection == {dg.AssetKey(["raw", "crawl_pages"])}
        # the sensor kept ticking during all three runs and started nothing more
        inbox_runs_now = instance.get_runs(filters=dg.RunsFilter(tags={"interlink/trigger": "inbox"}))
        assert len({r.run_id for r in inbox_runs_now} - earlier) == 2

        # its run page says so, and the asset page shows the new materialisation's metadata
        page.goto(f"{dev_server['url']}/runs/{ui_run.run_id}", wait_until="networkidle")
        expect(page.get_by_text("Success").first).to_be_visible()
        page.goto(f"{dev_server['url']}/assets/raw/crawl_pages", wait_until="networkidle")
        status = page.get_by_text("Latest materialization").locator("..")
        expect(status).to_contain_text(DROPPED)
        metadata = page.locator("tr", has_text="rows raw.crawl_pages")
        expect(metadata.first).to_contain_text(str(crawled))
        browser.close()


def test_the_readmes_commands_in_order_work_with_make_dev_running(dev_server, tmp_path):
    """Issue 71: with the UI up, `register` started a sensor run and the README's next line, `materialize`,
    was refused; `status` then said to run materialize. Now register names the sensor's run, status says
    it runs and at which step, and `materialize --wait` waits for it and has nothing left to run."""
    site = "www.readme.example"
    env = dev_server["env"]
    files = write_site(generate_site(200, seed=11, host=site), tmp_path / "site")
    registered = run_cli(env, "register", str(files["crawl"]), "--links", str(files["links"]))
    assert registered.returncode == 0, registered.stderr
    run_id = re.search(
        r"the inbox sensor started it: run (\S+) \(started by the inbox sensor\)", registered.stdout
    )
    assert run_id, registered.stdout
    during = run_cli(env, "status", "--site", site)
    assert during.returncode == 0, during.stderr
    assert f"running:   run {run_id[1]} (started by the inbox sensor) is " in during.stdout, during.stdout
    assert f"(interlink materialize --site {site})" not in during.stdout
    waited = run_cli(env, "materialize", "--site", site, "--wait")
    assert waited.returncode == 0, waited.stdout + waited.stderr[-3000:]
    assert f"waiting for run {run_id[1]}" in waited.stdout
    assert f"run {run_id[1]} materialised {site}'s registered exports: nothing left to run" in waited.stdout
    after = run_cli(env, "status", "--site", site)
    assert f"last run: {run_id[1]} SUCCESS" in after.stdout and "running:" not in after.stdout, after.stdout


def test_a_run_killed_under_make_dev_is_failed_its_slot_freed_and_the_next_run_proceeds(
    dev_server, crawls, tmp_path
):
    import signal

    instance, log = dev_server["instance"], dev_server["log"]
    # a crawl of lightchiropractic no run has seen yet (without its FAQ page)
    register_crawl(dev_server["inbox"], LIGHT, changed_light_crawl(crawls, tmp_path, without="faq"))

    # the sensor's run, as soon as one of its writing steps holds the writer pool: its process killed
    def holding_run():
        slots = instance.event_log_storage.get_concurrency_info("duckdb_writer").claimed_slots
        return slots[0].run_id if slots else None

    killed_id = wait_for(holding_run, RUNS_TIMEOUT_S, "the inbox run to hold the writer pool", log)
    # the run worker's pid, as the run's own event log gives it ("Started process for run (pid: N)")
    started = next(
        e.message for e in instance.all_logs(killed_id) if e.message.startswith("Started process for run")
    )
    os.kill(int(re.search(r"pid: (\d+)", started)[1]), signal.SIGKILL)

    # run monitoring notices the dead worker, fails the run and frees its slot; the failure is recorded
    def failed():
        run = instance.get_run_by_id(killed_id)
        return run if run.status == dg.DagsterRunStatus.FAILURE else None

    wait_for(failed, 180, "the killed run to be marked failed", log)
    wait_for(lambda: not holding_run() or None, 60, "its pool slot to be freed", log)

    # a new crawl of the site: its run is not blocked behind the dead one
    earlier = _run_ids(instance)
    register_crawl(dev_server["inbox"], LIGHT, changed_light_crawl(crawls, tmp_path))
    next_run = wait_for(
        lambda: next(iter(_finished(instance, earlier, tags={"interlink/trigger": "inbox"})), None),
        RUNS_TIMEOUT_S,
        "the next run to finish",
        log,
    )
    assert next_run.status == dg.DagsterRunStatus.SUCCESS, log.read_text()[-6000:]

    # the failure sensor records it on its own tick, which may come after the next run has finished
    def recorded():
        try:
            with duckdb.connect(str(dev_server["warehouse"]), read_only=True) as con:
                return con.execute("SELECT 1 FROM ops.run_failures WHERE run_id = ?", [killed_id]).fetchone()
        except (duckdb.IOException, duckdb.CatalogException):  # being written, or not yet created
            return None

    wait_for(recorded, 120, "the killed run to be recorded in ops.run_failures", log)


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_make_dev_in_the_background_stops_on_sigterm_and_on_make_stop(tmp_path, model_cache):
    """Issue 70: SIGINT and SIGTERM to a backgrounded `make dev` stopped nothing (dg dev ignores SIGTERM, a
    background job SIGINT), and there was no `make stop`. Started in the background (SIGINT ignored, as a
    shell's `&` leaves it), make dev stops on SIGTERM to make, and on `make stop`, every process with it."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home), "INTERLINK_WAREHOUSE": str(tmp_path / "w.duckdb"),
           "INTERLINK_INBOX": str(tmp_path / "inbox"), "INTERLINK_MODEL_CACHE": str(model_cache)}  # fmt: skip

    every: list[psutil.Process] = []  # killed at the end, whatever the test found

    def background_make_dev(log: Path) -> tuple[subprocess.Popen, list[psutil.Process]]:
        port = free_port()
        with open(log, "w") as out:
            make = subprocess.Popen(
                ["make", "--silent", "dev", f"PORT={port}"], cwd=PROJECT_ROOT, env=env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
            )  # fmt: skip
        every.append(psutil.Process(make.pid))
        wait_for(lambda: http_ok(f"http://127.0.0.1:{port}/server_info"), 180, "make dev", log)
        started = [psutil.Process(make.pid), *psutil.Process(make.pid).children(recursive=True)]
        every.extend(started)
        return make, started

    try:
        _stop_both_ways(env, home, tmp_path, background_make_dev)
    finally:
        for process in _alive(every):
            with contextlib.suppress(psutil.Error):
                process.kill()


def _stop_both_ways(env: dict, home: Path, tmp_path: Path, background_make_dev) -> None:
    make, started = background_make_dev(tmp_path / "first.log")
    assert len(started) >= 6  # make, the supervisor, dg dev, the webserver, the daemon, the code server
    make.send_signal(signal.SIGTERM)
    make.wait(90)
    wait_for(lambda: not _alive(started), 30, "every process of make dev to stop", tmp_path / "first.log")
    said = (tmp_path / "first.log").read_text()
    assert "dev: SIGTERM: stopping the UI, the daemon and the code server" in said
    assert "The active virtual environment does not match" not in said  # dg warned twice

    make, started = background_make_dev(tmp_path / "second.log")
    stopped = subprocess.run(["make", "--silent", "stop"], cwd=PROJECT_ROOT, env=env, capture_output=True,
                             text=True, timeout=120)  # fmt: skip
    assert stopped.returncode == 0 and stopped.stdout.strip() == "make dev stopped", (
        stopped.stdout + stopped.stderr
    )
    make.wait(30)
    wait_for(lambda: not _alive(started), 30, "every process of make dev to stop", tmp_path / "second.log")
    assert not (home / "dev.pid").exists()
    again = subprocess.run(
        ["make", "--silent", "stop"], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True
    )
    assert again.returncode == 0 and again.stdout.startswith("no make dev is running for")
