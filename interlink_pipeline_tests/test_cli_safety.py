"""The `interlink` command given what users give it: every refusal says what is wrong, exits non-zero and
leaves the drop folder, the sites and the warehouse byte for byte as they were."""

import contextlib
import hashlib
import os
import re
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import psutil
import pytest
import sqlalchemy

from interlink_pipeline.cli.dead_runs import RunProcess, process_gone, run_process
from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.crawl_exports import read_page_text
from interlink_pipeline.core.ingest.exclusions import rule_warnings
from interlink_pipeline.core.ingest.inbox import latest_exports
from interlink_pipeline.core.ingest.pages import clean_pages
from interlink_pipeline.core.warehouse.database import connect, ensure_tables
from interlink_pipeline.definitions import build_defs
from interlink_pipeline.defs.ingest.inbox_sensor import crawl_inbox_sensor
from interlink_pipeline.defs.site_runs import InstanceHome, SqliteHome
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import (
    LIGHT,
    PROJECT_ROOT,
    SAMPLE_DIR,
    call_cli,
    changed_light_crawl,
    run_cli,
    write_export,
)
from interlink_pipeline_tests.services import Webhook

CRAWL_HEADER = ["Address", "Content Type", "Status Code", "Indexability", "Title 1", "H1-1"]
LINK_HEADER = ["Type", "Source", "Destination", "Anchor", "Link Position", "Follow"]


def _state(*roots: Path) -> dict[str, str]:
    """Every file under `roots`, by path, with its SHA-256; not an SQLite file's -wal and -shm, which a
    reader may make and a writer folds into the file itself (where its digest shows any change)."""
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for root in roots
        if root.exists()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


@pytest.fixture()
def registered(cli_env, tmp_path, crawls):
    """lightchiropractic registered with its crawl and links; the state every refusal must leave."""
    light = crawls / "lightchiropractic"
    done = call_cli(
        cli_env, "register", str(light / "internal_all.csv"), "--links", str(light / "all_inlinks.csv")
    )
    assert done.returncode == 0, done.stderr
    return cli_env, tmp_path


def _bad_files(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """Hostile inputs: name -> (CLI arguments after `register`, the message expected)."""
    crawl = "../shared-crawl"  # replaced below by the real crawl path
    files = tmp_path / "bad"
    files.mkdir()
    (files / "empty_inlinks.csv").write_bytes(b"")
    write_export(files / "header_only_inlinks.csv", LINK_HEADER, [])
    write_export(
        files / "foreign_inlinks.csv",
        LINK_HEADER,
        [["Hyperlink", f"https://other.example/{i}/", "https://other.example/", "a", "Content", "true"]
         for i in range(5)],
    )  # fmt: skip
    write_export(
        files / "no_position_inlinks.csv",
        ["Source", "Destination", "Anchor"],
        [[f"https://{LIGHT}/", f"https://{LIGHT}/about/", "About"]],
    )
    write_export(
        files / "unplaced_inlinks.csv",
        LINK_HEADER,
        [["Hyperlink", f"https://{LIGHT}/", f"https://{LIGHT}/page-{i}/", "a", "", "true"] for i in range(5)],
    )  # fmt: skip
    write_export(
        files / "external_inlinks.csv",
        LINK_HEADER,
        [["Hyperlink", f"https://{LIGHT}/", f"https://partner-{i % 2}.example/", "a", "Content", "true"]
         for i in range(5)],
    )  # fmt: skip
    (files / "random.csv").write_bytes(os.urandom(4096))
    write_export(files / "header_only.csv", CRAWL_HEADER, [])
    write_export(
        files / "page_text.csv", ["Address", "Text"], [["https://other.example/", "another site's text"]]
    )
    write_export(
        files / "uncrawled_text.csv",
        ["Address", "Text"],
        [[f"https://{LIGHT}/never-crawled-{i}/", "text of a page the crawl lacks"] for i in range(3)],
    )
    (files / "random_text.csv").write_bytes(os.urandom(4096))
    home = [f"https://{LIGHT}/", "text/html; charset=UTF-8", "200", "Indexable", "Home", "Home"]
    write_export(files / "copies.csv", CRAWL_HEADER, [home] * 50_000)
    (files / "cp1252_text.csv").write_bytes(
        f"Address,Text\nhttps://{LIGHT}/,Caf\u00e9 r\u00e9sum\u00e9\n".encode("cp1252")
    )
    return {
        "an empty links file": (
            [crawl, "--links", str(files / "empty_inlinks.csv")], "empty"),
        "a header-only links file": (
            [crawl, "--links", str(files / "header_only_inlinks.csv")], "rows"),
        "links from another host": (
            [crawl, "--links", str(files / "foreign_inlinks.csv")],
            f"this links export is not for site '{LIGHT}'"),
        "links without Link Position": (
            [crawl, "--links", str(files / "no_position_inlinks.csv")], "no Link Position column"),
        "links with an empty Link Position": (
            [crawl, "--links", str(files / "unplaced_inlinks.csv")],
            "unplaced_inlinks.csv: its Link Position column is empty, so menu links cannot be told"),
        "links that leave the site (an External export)": (
            [crawl, "--links", str(files / "external_inlinks.csv")],
            f"external_inlinks.csv: only 0 of these 5 links go to a page of '{LIGHT}'; most go to "
            "'partner-0.example' (3), as in an External links export"),
        "random bytes as the crawl, with --site": (
            [str(files / "random.csv"), "--site", LIGHT], "random.csv"),
        "a header-only crawl, with --site": (
            [str(files / "header_only.csv"), "--site", LIGHT], "header_only.csv"),
        "page text for another host": (
            [crawl, "--text", str(files / "page_text.csv")], "is not for site"),
        "page text for pages the crawl lacks": (
            [crawl, "--text", str(files / "uncrawled_text.csv")], "none of its 3 pages is in the crawl"),
        "page text in Windows-1252": (
            [crawl, "--text", str(files / "cp1252_text.csv")],
            "(line 2) is invalid. Export from Screaming Frog again (it writes UTF-8), or give its real "
            "encoding: interlink register … --encoding cp1252"),
        "random bytes as page text": ([crawl, "--text", str(files / "random_text.csv")], "random_text.csv"),
        "50,000 copies of one page's row as the crawl": (
            [str(files / "copies.csv")],
            f"copies.csv: 49,999 of its 50,000 rows repeat an address given above (https://{LIGHT}/ 50,000 "
            "times) and it names only 1 distinct address: a crawler lists each page once"),
        "a crawl file that does not exist": ([str(files / "missing.csv"), "--site", LIGHT], "file not found"),
        "a path in --site": ([crawl, "--site", "../../etc"], "is not a host name"),
        "shell characters in --site": ([crawl, "--site", "x;rm -rf /"], "is not a host name"),
        "a space in --site": ([crawl, "--site", "www.light chiro.sg"], "is not a host name"),
        "a URL in --site": ([crawl, "--site", f"https://{LIGHT}/"], f"Use the host alone: '{LIGHT}'"),
    }  # fmt: skip


BAD_REGISTRATIONS = [
    "an empty links file", "a header-only links file", "links from another host",
    "links without Link Position", "links with an empty Link Position",
    "links that leave the site (an External export)", "random bytes as the crawl, with --site",
    "a header-only crawl, with --site", "page text for another host", "page text for pages the crawl lacks",
    "page text in Windows-1252", "random bytes as page text", "50,000 copies of one page's row as the crawl",
    "a crawl file that does not exist",
    "a path in --site", "shell characters in --site", "a space in --site", "a URL in --site",
]  # fmt: skip


@pytest.mark.parametrize("case", BAD_REGISTRATIONS)
def test_a_bad_registration_is_refused_and_the_previous_one_stays(case, registered, crawls):
    env, tmp_path = registered
    args, message = _bad_files(tmp_path)[case]
    args = [str(crawls / "lightchiropractic/internal_all.csv") if a == "../shared-crawl" else a for a in args]
    before, sites = _state(tmp_path / "inbox"), call_cli(env, "sites").stdout
    done = call_cli(env, "register", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: ") and message in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) <= 3  # a message, not a stack trace
    assert _state(tmp_path / "inbox") == before
    assert call_cli(env, "sites").stdout == sites


@pytest.mark.parametrize("command", ["materialize", "backtest"])
def test_an_unregistered_site_is_refused_with_the_registered_ones(command, registered):
    env, tmp_path = registered
    before, sites = _state(tmp_path / "inbox"), call_cli(env, "sites").stdout
    done = call_cli(env, command, "--site", "www.lightchiropractic.com")
    assert done.returncode == 2
    assert f"'www.lightchiropractic.com' is not a registered site (registered: {LIGHT})" in done.stderr, (
        done.stderr
    )
    assert call_cli(env, "sites").stdout == sites and _state(tmp_path / "inbox") == before
    assert not Path(env["INTERLINK_WAREHOUSE"]).exists()  # nothing ran


@pytest.mark.e2e
@pytest.mark.parametrize(
    "titles",
    [["Home of one page site"], ["Home", "Page of the site"]],
    ids=["one page of stop words", "two pages"],
)
def test_the_smallest_sites_get_a_complete_plan_through_the_cli(titles, cli_env, tmp_path):
    host = "tiny.example"
    crawl = tmp_path / "internal_all.csv"
    rows = [[f"https://{host}/" + ("" if i == 0 else f"guide-{i}/"), "text/html", "200", "Indexable", t, t]
            for i, t in enumerate(titles)]  # fmt: skip
    write_export(crawl, CRAWL_HEADER, rows)
    done = run_cli(cli_env, "register", str(crawl), "--run")
    assert done.returncode == 0, done.stderr
    with duckdb.connect(cli_env["INTERLINK_WAREHOUSE"], read_only=True) as con:
        pages = con.execute("SELECT count(*) FROM staging.pages").fetchone()[0]
        unreachable = con.execute(
            "SELECT count(*) FROM graph.page_metrics WHERE depth_after IS NULL"
        ).fetchone()[0]
        plan = con.execute("SELECT count(*) FROM graph.link_plan").fetchone()[0]
    assert pages == len(titles) and unreachable == 0 and plan == len(titles) - 1
    # `make dev` after the CLI's run: its inbox sensor does not run the same exports again
    inbox = Path(cli_env["INTERLINK_INBOX"])
    settled = time.time() - 60
    for path in inbox.rglob("*"):
        os.utime(path, (settled, settled))
    defs = build_defs(cli_env["INTERLINK_WAREHOUSE"], str(inbox))
    with dg.DagsterInstance.from_config(cli_env["DAGSTER_HOME"]) as instance:
        context = dg.build_sensor_context(instance=instance, definitions=defs, resources=defs.resources)
        tick = crawl_inbox_sensor(context)
    assert not tick.run_requests


def test_a_damaged_warehouse_is_reported_at_once_with_how_to_recover(tmp_path):
    path = tmp_path / "interlink.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t AS SELECT range AS a FROM range(200000)")
    with open(path, "r+b") as f:  # damaged blocks after the headers
        f.seek(12288)
        f.write(b"\x07" * 300_000)
    before = _state(tmp_path)
    started = time.monotonic()
    with pytest.raises(InputError, match="the file is damaged") as raised, connect(path, lock_timeout_s=120):
        pass
    assert time.monotonic() - started < 10  # not retried as if another process held a lock
    assert f"mv {path} {path}.damaged" in str(raised.value)
    assert _state(tmp_path) == before


def test_product_urls_shaped_like_pagination_are_pages_and_a_dominant_rule_warns(tmp_path):
    from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export

    host = "shop.example"
    urls = [f"https://{host}/"] + [f"https://{host}/p/{10000 + i}/" for i in range(1, 60)]
    urls += [f"https://{host}/blog/", f"https://{host}/blog/page/2/", f"https://{host}/blog/page/3/"]
    write_export(
        tmp_path / "crawl.csv", CRAWL_HEADER, [[u, "text/html", "200", "Indexable", u, u] for u in urls]
    )
    raw = read_crawl_export(tmp_path / "crawl.csv", host).frame
    cleaned = clean_pages(raw, host)
    excluded = dict(zip(cleaned.excluded["crawled_url"], cleaned.excluded["reason"], strict=True))
    assert cleaned.pages.height == 61  # the home page, 59 products, the blog index
    assert excluded == {
        f"https://{host}/blog/page/2/": "paginated",
        f"https://{host}/blog/page/3/": "paginated",
    }
    assert rule_warnings(cleaned) == []
    # a listing numbered from 2 that outnumbers the pages: excluded, and the run says so and how to stop it
    listing = [f"https://{host}/"] + [f"https://{host}/?page={i}" for i in range(2, 40)]
    write_export(
        tmp_path / "listing.csv", CRAWL_HEADER, [[u, "text/html", "200", "Indexable", u, u] for u in listing]
    )
    cleaned = clean_pages(read_crawl_export(tmp_path / "listing.csv", host).frame, host)
    [warning] = rule_warnings(cleaned)
    assert "the 'paginated' rule excluded 38 pages and 1 were kept" in warning
    assert "drop_paginated: false" in warning


@pytest.mark.e2e
def test_a_failed_cli_run_says_it_in_a_few_lines_records_it_and_posts_it(cli_env, tmp_path):
    host = "noindex.example"
    crawl = tmp_path / "internal_all.csv"
    write_export(
        crawl,
        CRAWL_HEADER,
        [
            [f"https://{host}/{p}", "text/html", "200", "Non-Indexable", p or "Home", p]
            for p in ("", "a/", "b/")
        ],
    )
    hook = Webhook()
    try:
        done = run_cli({**cli_env, "INTERLINK_FAILURE_WEBHOOK": hook.url}, "register", str(crawl), "--run")
    finally:
        hook.close()
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) <= 6, done.stderr  # no stack trace on the console
    assert lines[0].startswith("error: run ") and f"for {host} failed at pages" in lines[0]
    assert "no page of noindex.example's crawl is worth linking" in done.stderr
    log = Path(next(line for line in lines if line.startswith("full log: ")).removeprefix("full log: "))
    assert "Traceback" in log.read_text() or "Stack Trace" in log.read_text()
    assert "DEBUG" not in done.stdout + done.stderr
    with duckdb.connect(cli_env["INTERLINK_WAREHOUSE"], read_only=True) as con:
        rows = con.execute("SELECT run_id, site, step, notified FROM ops.run_failures").fetchall()
    assert len(rows) == 1 and rows[0][1:] == (host, "pages", True)
    assert [m["run_id"] for m in hook.received] == [rows[0][0]]
    summary = f"interlink_pipeline: site_pipeline failed for {host} at pages"
    assert hook.received[0]["text"].startswith(summary)


def _materialize_in_background(
    env: dict[str, str], log: Path, command: str = "materialize"
) -> subprocess.Popen:
    """`interlink materialize --site` lightchiropractic (or another command of the site), left running;
    its output in `log`."""
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "interlink_pipeline.cli", command, "--site", LIGHT],
            env=env, cwd=PROJECT_ROOT, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    return process


def _wait_while_running(process: subprocess.Popen, log: Path, condition, timeout_s: float = 300) -> None:
    """Until `condition()` holds; the process's output (`log`) if it ends first or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


def _at_a_writing_step(instance: dg.DagsterInstance, home: Path) -> bool:
    """Whether a run holds the writer and has said which step holds it: the slot is claimed before the
    step's start is written, and status names the step only from then on."""
    if not instance.event_log_storage.get_concurrency_info("duckdb_writer").claimed_slots:
        return False
    started = instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    events = [kind for run in started for kind, _ in SqliteHome(home).step_events(run.dagster_run.run_id)]
    return "STEP_START" in events


SQLITE_HELD = ("database is locked", "locking protocol")  # a writer holds the file (or its WAL)


def _unless_locked(condition):
    """`condition`, read as not holding while the run writes to Dagster's SQLite storage (a run stopped
    there holds the lock: "database is locked", or, stopped inside a WAL lock, SQLite's "locking
    protocol"): asked again later."""

    def asked() -> bool:
        try:
            return condition()
        except (sqlite3.OperationalError, sqlalchemy.exc.OperationalError) as exc:
            if any(held in str(exc) for held in SQLITE_HELD):
                return False
            raise

    return asked


def _stop_at_a_writing_step(process: subprocess.Popen, log: Path, condition) -> None:
    """SIGSTOP `process` where `condition()` holds, checked again once stopped: a quick step may end (and
    free the writer) between a check and the signal, and then the process goes on to the next chance."""
    condition = _unless_locked(condition)
    while True:
        _wait_while_running(process, log, condition)
        os.kill(process.pid, signal.SIGSTOP)
        while (
            process.poll() is None
            and Path(f"/proc/{process.pid}/stat").read_text().split(")")[1].split()[0] != "T"
        ):
            time.sleep(0.01)  # the signal is sent, not yet taken
        if condition():
            return
        os.kill(process.pid, signal.SIGCONT)


def _steps_finished(home: Path) -> list[str]:
    """The steps the run at work has finished, in order."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        started = instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    return [
        step
        for run in started
        for kind, step in SqliteHome(home).step_events(run.dagster_run.run_id)
        if kind == "STEP_SUCCESS"
    ]


@pytest.mark.e2e
def test_a_killed_cli_run_is_marked_failed_and_resumed_from_its_last_finished_step(registered):
    env, tmp_path = registered
    home = Path(env["DAGSTER_HOME"])
    killed = _materialize_in_background(env, tmp_path / "killed.log")
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        _stop_at_a_writing_step(
            killed,
            tmp_path / "killed.log",
            lambda: len(_steps_finished(home)) >= 2 and _at_a_writing_step(instance, home),
        )
        os.kill(killed.pid, signal.SIGKILL)  # in the middle of a writing step, two or more finished
        killed.wait()
        [held] = instance.event_log_storage.get_concurrency_info("duckdb_writer").claimed_slots
        finished_before = [
            step for kind, step in SqliteHome(home).step_events(held.run_id) if kind == "STEP_SUCCESS"
        ]
        refused = run_cli(env, "materialize", "--site", LIGHT, "--resume", "--max-depth", "3")
        assert refused.returncode == 2
        assert "leave out --wait, --config and the setting flags" in refused.stderr
        done = run_cli(env, "materialize", "--site", LIGHT, "--resume")
        assert done.returncode == 0, done.stderr
        assert f"run {held.run_id} had stopped: its process (pid {killed.pid}) is gone" in done.stderr
        assert instance.get_run_by_id(held.run_id).status == dg.DagsterRunStatus.FAILURE
        said = f"resuming run {held.run_id} of {LIGHT}: {len(finished_before)} of "
        assert said in done.stdout and ", ".join(finished_before) in done.stdout, done.stdout
        # outside a terminal, a line per finished step (a terminal gets a bar: test_cli's demo): the steps
        # the killed run finished are not run again, every other one is
        finished = [step for *_, step in re.findall(r"\[(\d+)/(\d+)\] (\w+): success in", done.stdout)]
        assert finished[0] not in finished_before and not set(finished) & set(finished_before), done.stdout
        assert {"link_plan", "published_measurement"} <= set(finished), done.stdout
        [resumed] = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.SUCCESS]))
        assert resumed.tags["dagster/parent_run_id"] == held.run_id
        again = run_cli(env, "materialize", "--site", LIGHT, "--resume")
        assert again.returncode == 2 and f"last run ({resumed.run_id}) succeeded" in again.stderr
        assert not instance.event_log_storage.get_concurrency_info("duckdb_writer").claimed_slots
        # the process a later command judges is in the run's events (the UI shows its start as a date)
        process = run_process(instance, resumed)
        assert process.cli and process.host == socket.gethostname() and process.pid not in (os.getpid(), None)
        assert set(resumed.tags) & {"interlink/pid", "interlink/host", "interlink/process_started"} == set()
    with duckdb.connect(env["INTERLINK_WAREHOUSE"], read_only=True) as con:
        assert con.execute("SELECT count(*) FROM graph.link_plan").fetchone()[0] > 0
        recorded = con.execute("SELECT run_id, site FROM ops.run_failures").fetchall()
    assert recorded == [(held.run_id, LIGHT)]


def _reading(env: dict[str, str], *command: str) -> subprocess.CompletedProcess:
    """An `interlink` command whose last line says which of Dagster, pandera and pandas it imported."""
    script = (
        "import sys\nfrom interlink_pipeline.cli import main\ncode = main(sys.argv[1:])\n"
        "heavy = {m.split('.')[0] for m in sys.modules} & {'dagster', 'pandera', 'pandas'}\n"
        "print('imported:', sorted(heavy))\nsys.exit(code)"
    )
    return subprocess.run(
        [sys.executable, "-c", script, *command], env=env, cwd=PROJECT_ROOT, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


@pytest.mark.e2e
def test_a_second_run_of_a_site_is_refused_and_the_reading_commands_answer_while_a_run_writes(registered):
    env, tmp_path = registered
    first = _materialize_in_background(env, tmp_path / "first.log")
    home = Path(env["DAGSTER_HOME"])
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        _wait_while_running(
            first,
            tmp_path / "first.log",
            lambda: instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])),
        )
        started = time.monotonic()
        second = run_cli(env, "materialize", "--site", LIGHT)
        refused_in = time.monotonic() - started
        assert first.wait(timeout=600) == 0, (tmp_path / "first.log").read_text()
        runs = instance.get_run_records()
        logs = [p.name for p in (Path(env["INTERLINK_WAREHOUSE"]).parent / "logs").iterdir()]
        # the lock went with the first run: the next one goes ahead (a run of one step takes the same lock);
        # while it holds the writer, status and sites answer from the home's files, the published ones
        # and the snapshot: no Dagster and no table contract loaded, nothing of theirs waits on it
        again = _materialize_in_background(env, tmp_path / "again.log", "backtest")
        # held there, however quick its step: the commands meet it
        _stop_at_a_writing_step(again, tmp_path / "again.log", lambda: _at_a_writing_step(instance, home))
        try:
            status, sites = _reading(env, "status", "--site", LIGHT), _reading(env, "sites")
            [running] = instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
        finally:
            os.kill(again.pid, signal.SIGCONT)
        assert again.wait(timeout=600) == 0, (tmp_path / "again.log").read_text()
        # what the commands read of the home's files is what Dagster reads of it
        records, through_dagster = SqliteHome(home), InstanceHome(instance)
        assert records.sites() == through_dagster.sites() == [LIGHT]
        assert records.runs(LIGHT) == through_dagster.runs(LIGHT) and len(records.runs(LIGHT)) == 2
        unfinished = ("STARTED", "QUEUED")
        assert records.runs(LIGHT, unfinished) == through_dagster.runs(LIGHT, unfinished) == []
        run_id = runs[0].dagster_run.run_id
        assert records.step_events(run_id) == through_dagster.step_events(run_id) != []
    assert second.returncode == 2 and refused_in < 30
    assert f"a run of {LIGHT} is already in progress (interlink, process {first.pid})" in second.stderr
    assert len(runs) == 1 and runs[0].dagster_run.status == dg.DagsterRunStatus.SUCCESS  # never interleaved
    # the refused run left no file: every run file is of the run that ran (its steps' output)
    assert logs == [f"{LIGHT}-{runs[0].dagster_run.run_id}.out"]
    assert status.returncode == 0 and sites.returncode == 0, status.stderr + sites.stderr
    assert status.stdout.splitlines()[-1] == sites.stdout.splitlines()[-1] == "imported: []"
    said = rf"^running: +run {running.dagster_run.run_id} \(started by an interlink command\) is at step \w+"
    assert re.search(said, status.stdout, re.M), status.stdout
    assert any(line.startswith(f"{LIGHT}: ") for line in sites.stdout.splitlines()), sites.stdout


def test_a_run_waiting_in_make_devs_queue_is_not_overtaken_by_a_cli_run(registered):
    from dagster._core.remote_origin import (
        InProcessCodeLocationOrigin,
        RemoteJobOrigin,
        RemoteRepositoryOrigin,
    )
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
    from dagster._daemon.types import DaemonHeartbeat

    env, tmp_path = registered
    kept, warehouse = tmp_path / "inbox", Path(env["INTERLINK_WAREHOUSE"])
    location = InProcessCodeLocationOrigin(LoadableTargetOrigin(module_name="interlink_pipeline.definitions"))
    origin = RemoteJobOrigin(RemoteRepositoryOrigin(location, "__repository__"), "site_pipeline")
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        queued = instance.add_run(  # as the UI or a sensor of make dev queues it
            dg.DagsterRun(
                job_name="site_pipeline", status=dg.DagsterRunStatus.QUEUED, remote_job_origin=origin,
                tags={"dagster/partition": LIGHT},
            )
        )  # fmt: skip
        # make dev's queue is moving: its run would start beside the CLI's
        instance.add_daemon_heartbeat(DaemonHeartbeat(time.time(), "QUEUED_RUN_COORDINATOR", None))
        before = _state(kept)
        refused = call_cli(env, "materialize", "--site", LIGHT)
        runs = instance.get_run_records()
    assert refused.returncode == 2
    assert refused.stderr == (
        f"error: a run of {LIGHT} is waiting in make dev's run queue (run {queued.run_id}) and starts once "
        f"the queue lets it; interlink materialize --site {LIGHT} --wait waits for it, or cancel it in the "
        "UI.\n"
    )
    assert _state(kept) == before and not warehouse.exists()
    assert [r.dagster_run.run_id for r in runs] == [queued.run_id]


@pytest.mark.e2e
def test_a_warehouse_an_analyst_holds_open_for_writing_fails_the_run_in_seconds(registered):
    env, _ = registered
    warehouse = env["INTERLINK_WAREHOUSE"]
    session = (
        "import duckdb, sys, time\n"
        "con = duckdb.connect(sys.argv[1])\n"
        "con.execute('CREATE TABLE notes AS SELECT 42 AS answer')\n"
        "print('open', flush=True)\n"
        "time.sleep(600)\n"
    )
    analyst = subprocess.Popen([sys.executable, "-c", session, warehouse], stdout=subprocess.PIPE, text=True)
    try:
        assert analyst.stdout.readline().strip() == "open"
        started = time.monotonic()
        done = run_cli(env, "materialize", "--site", LIGHT)
        seconds = time.monotonic() - started
        # status reads the warehouse once, without waiting on its holder, and says who holds it; so does
        # sites, which would count the last finished run's snapshot (there is none yet)
        status, sites = call_cli(env, "status", "--site", LIGHT), call_cli(env, "sites")
    finally:
        analyst.kill()
        analyst.wait()
    assert status.returncode == 0, status.stderr
    assert f"note: process {analyst.pid} (" in status.stdout
    assert "is writing the warehouse now" in status.stdout
    assert sites.returncode == 0 and re.fullmatch(
        rf"note: process {analyst.pid} \(.*\) is writing the warehouse now; no counts\n"
        rf"{re.escape(LIGHT)}: not materialised yet\n",
        sites.stdout,
    ), sites.stdout
    assert done.returncode == 1 and seconds < 90  # 10 s for the run's step, 10 s to record the failure
    assert f"process {analyst.pid} (" in done.stderr and "has held it for 10s" in done.stderr
    assert "analysts query the read-only snapshot" in done.stderr
    with duckdb.connect(warehouse, read_only=True) as con:  # the analyst's work is intact
        assert con.execute("SELECT answer FROM notes").fetchall() == [(42,)]


def test_page_text_for_some_pages_not_crawled_is_registered_with_a_warning(registered, crawls):
    env, tmp_path = registered
    crawled = [f"https://{LIGHT}/", f"https://{LIGHT}/headaches-and-migraines/"]
    text = tmp_path / "page_text.csv"
    rows = [[url, f"Caf\u00e9 r\u00e9sum\u00e9 \u2013 page {i}"] for i, url in enumerate(crawled)]
    write_export(text, ["Address", "Text"], [*rows, [f"https://{LIGHT}/not-crawled/", "orphan text"]])
    done = call_cli(env, "register", str(crawls / "lightchiropractic/internal_all.csv"), "--text", str(text))
    assert done.returncode == 0, done.stderr
    assert "warning: page_text.csv: 1 of its 3 pages are not in the crawl" in done.stderr
    assert f"https://{LIGHT}/not-crawled/" in done.stderr
    frame = read_page_text(Path(env["INTERLINK_INBOX"]) / LIGHT / "page_text.csv", LIGHT).frame
    assert frame["text"].to_list()[:2] == [row[1] for row in rows]


def test_page_text_in_windows_1252_is_registered_as_utf8_with_encoding(registered, crawls):
    env, tmp_path = registered
    crawl = crawls / "lightchiropractic/internal_all.csv"
    text = tmp_path / "cp1252_text.csv"
    text.write_bytes(f"Address,Text\nhttps://{LIGHT}/,Caf\u00e9 r\u00e9sum\u00e9\n".encode("cp1252"))
    done = call_cli(env, "register", str(crawl), "--text", str(text), "--encoding", "cp1252")
    assert done.returncode == 0, done.stderr
    folder = Path(env["INTERLINK_INBOX"]) / LIGHT
    # the text is stored as UTF-8, read by the run with its default settings; the crawl, already UTF-8,
    # is copied byte for byte (never re-read as cp1252)
    assert read_page_text(folder / "cp1252_text.csv", LIGHT).frame["text"].to_list() == [
        "Caf\u00e9 r\u00e9sum\u00e9"
    ]
    assert (folder / "internal_all.csv").read_bytes() == crawl.read_bytes()
    unknown = call_cli(env, "register", str(crawl), "--text", str(text), "--encoding", "klingon")
    assert unknown.returncode == 2 and "--encoding 'klingon' is not a known text encoding" in unknown.stderr


def test_a_new_crawl_registered_without_links_sets_the_old_links_aside(registered, crawls):
    env, tmp_path = registered
    folder = Path(env["INTERLINK_INBOX"]) / LIGHT
    links = (folder / "all_inlinks.csv").read_bytes()
    # the same crawl again: its links still pair with it
    same = call_cli(env, "register", str(crawls / "lightchiropractic/internal_all.csv"))
    assert same.returncode == 0 and "warning" not in same.stderr
    assert (folder / "all_inlinks.csv").read_bytes() == links
    # a new crawl with --keep-links: paired, as asked
    kept = call_cli(env, "register", str(changed_light_crawl(crawls, tmp_path, "faq")), "--keep-links")
    assert kept.returncode == 0 and (folder / "all_inlinks.csv").read_bytes() == links
    # a new crawl without links: the earlier crawl's links are moved aside, kept, and the user told
    done = call_cli(env, "register", str(changed_light_crawl(crawls, tmp_path)))
    assert done.returncode == 0, done.stderr
    [moved] = (folder / "superseded").iterdir()
    assert moved.read_bytes() == links and not (folder / "all_inlinks.csv").exists()
    assert done.stderr == (
        f"warning: all_inlinks.csv came with an earlier crawl, so it was moved to {moved} rather than "
        "paired with this one; register this crawl's links export with --links, or keep the old one with "
        "--keep-links.\n"
    )
    assert sorted(latest_exports(folder)) == ["crawl"]  # what the next run reads
    # files are created as the umask says (a daemon or web server under another user reads them)
    mode = 0o666 & ~_umask()
    assert {stat.S_IMODE(p.stat().st_mode) for p in folder.rglob("*.csv")} == {mode}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_unicode_host_is_one_site_whichever_way_it_is_spelt(cli_env, tmp_path, crawls):
    crawl, links = tmp_path / "internal_all.csv", tmp_path / "all_inlinks.csv"
    source = crawls / "lightchiropractic"
    # Screaming Frog writes the host as people read it; a links export or a user may spell it in punycode
    crawl.write_text(
        (source / "internal_all.csv")
        .read_text(encoding="utf-8-sig")
        .replace(LIGHT, "www.b\u00fccher.example")
    )
    links.write_text(
        (source / "all_inlinks.csv")
        .read_text(encoding="utf-8-sig")
        .replace(LIGHT, "www.xn--bcher-kva.example")
    )
    for site in ("www.xn--bcher-kva.example", "www.B\u00fccher.example", None):
        done = call_cli(
            cli_env, "register", str(crawl), "--links", str(links), *(["--site", site] if site else [])
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("registered www.xn--bcher-kva.example (www.b\u00fccher.example): ")
    listed = call_cli(cli_env, "sites").stdout
    assert listed == "www.xn--bcher-kva.example (www.b\u00fccher.example): not materialised yet\n"


BAD_ARGUMENTS = {
    "a config file that is not UTF-8": (
        ["materialize", "--site", LIGHT, "--config", "{bad}/latin1.yaml"],
        "latin1.yaml: not UTF-8 text (byte 0xe9 at offset 54); save it as UTF-8."),
    "a YAML alias bomb": (
        ["materialize", "--site", LIGHT, "--config", "{bad}/bomb.yaml"],
        "bomb.yaml, line 2: YAML aliases (*a) are not allowed in a run config"),
    "a regex setting that does not compile": (
        ["materialize", "--site", LIGHT, "--config", "{bad}/regex.yaml"],
        "regex.yaml: ops.pages.config.branding_pattern: '(unclosed[' is not a valid regex (Rust syntax): "
        "unclosed character class"),
    "a regex among several": (
        ["materialize", "--site", LIGHT, "--config", "{bad}/paths.yaml"],
        "paths.yaml: ops.similarity_pairs.config.exclude_target_paths: '*.pdf' is not a valid regex"),
    "a negative seed": (["backtest", "--site", LIGHT, "--seed", "-1"],
        "argument --seed: a seed is from 0 to 4294967295, not -1"),
    "a seed past 2**32": (["backtest", "--site", LIGHT, "--seed", str(2**32)],
        "argument --seed: a seed is from 0 to 4294967295, not 4294967296"),
    "a seed that is not a number": (["generate-site", "--out", "{bad}/site", "--seed", "x"],
        "argument --seed: 'x' is not a whole number"),
    "no pages": (["generate-site", "--pages", "0", "--out", "{bad}/site"],
        "argument --pages: the synthetic site has at least 200 pages (20 topics with categories), not 0"),
    "negative pages": (["generate-site", "--pages", "-5", "--out", "{bad}/site"], "not -5"),
    "--out naming a file": (["generate-site", "--pages", "200", "--out", "{bad}/latin1.yaml"],
        "--out {bad}/latin1.yaml is a file; name a folder for the exports (made if missing)."),
    "a site larger than memory": (["generate-site", "--pages", "1000000000000", "--out", "{bad}/site"],
        "--pages 1,000,000,000,000: generating that site takes about 3,725,290.6 GiB of memory and "),
    "--out a special path": (["generate-site", "--pages", "200", "--out", "/proc/1"],
        "--out /proc/1 cannot be written: /proc/1/"),
    "--out a folder holding a crawl export": (["generate-site", "--pages", "200", "--out", "{bad}/crawl"],
        "--out {bad}/crawl already holds internal_all.csv: name a new or empty folder, or pass --overwrite "
        "to replace them."),
}  # fmt: skip


def test_a_file_error_raised_with_its_own_sentence_reaches_the_user_as_written(monkeypatch, capsys):
    """A checkout without its dbt manifest (`make install` not run) fails on import with a sentence saying
    what to run; the command line printed "a file: FileNotFoundError (None)" in its place."""
    from interlink_pipeline.cli import commands, main

    said = "dbt/target/manifest.json is missing: run `make install`"

    def missing_manifest(args):
        raise FileNotFoundError(said)

    monkeypatch.setattr(commands, "materialize", missing_manifest)
    assert main(["materialize", "--site", SAMPLE_HOST]) == 2
    assert capsys.readouterr().err == f"error: {said}; nothing more was done.\n"


@pytest.mark.parametrize("case", list(BAD_ARGUMENTS))
def test_a_bad_argument_or_setting_is_refused_in_a_sentence_naming_it(case, registered):
    env, tmp_path = registered
    bad = tmp_path / "bad_settings"
    bad.mkdir()
    (bad / "latin1.yaml").write_bytes(
        "ops:\n  link_plan:\n    config:\n      max_depth: 3 # caf\u00e9\n".encode("latin-1")
    )
    nested = [f"{chr(97 + i)}: &{chr(97 + i)} [{', '.join([f'*{chr(96 + i)}'] * 9)}]" for i in range(1, 9)]
    (bad / "bomb.yaml").write_text("\n".join(['a: &a ["lol", "lol"]', *nested]) + "\n")
    (bad / "regex.yaml").write_text('ops: {pages: {config: {branding_pattern: "(unclosed["}}}\n')
    (bad / "paths.yaml").write_text(
        "ops: {similarity_pairs: {config: {exclude_target_paths: ['^/tags/', '*.pdf']}}}\n"
    )
    write_export(bad / "crawl" / "internal_all.csv", CRAWL_HEADER, [])  # a crawl export someone keeps
    args, message = BAD_ARGUMENTS[case]
    before = _state(tmp_path / "inbox", tmp_path / "home", bad)
    started = time.monotonic()
    done = call_cli(env, *[a.replace("{bad}", str(bad)) for a in args])
    assert time.monotonic() - started < 10  # the bomb is refused before it expands
    assert done.returncode == 2, done.stdout + done.stderr
    assert message.replace("{bad}", str(bad)) in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) <= 3 and "Traceback" not in done.stderr
    assert _state(tmp_path / "inbox", tmp_path / "home", bad) == before  # nothing ran, nothing written
    assert not Path(env["INTERLINK_WAREHOUSE"]).exists() and not (bad / "site").exists()


def test_a_warehouse_that_is_not_duckdb_is_named_and_never_makes_duckdb_fetch_an_extension(registered):
    env, tmp_path = registered
    sqlite = tmp_path / "analytics.db"
    with contextlib.closing(sqlite3.connect(sqlite)) as con:
        con.execute("CREATE TABLE t (a)")
        con.commit()
    env = {**env, "INTERLINK_WAREHOUSE": str(sqlite)}
    before = _state(tmp_path / "inbox", sqlite)
    for command in (["status", "--site", LIGHT], ["sites"]):
        done = call_cli(env, *command)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.endswith(
            f"error: {sqlite} is not a DuckDB warehouse (a SQLite database); nothing was changed. Set "
            "INTERLINK_WAREHOUSE to a DuckDB file (a new name makes a new warehouse) or to a lake "
            "(ducklake:...).\n"
        )
    assert _state(tmp_path / "inbox", sqlite) == before
    with connect(tmp_path / "w.duckdb") as con:  # no extension is ever installed at run time
        assert con.execute("SELECT current_setting('autoinstall_known_extensions')").fetchone() == (False,)


@pytest.mark.e2e
def test_an_immutable_warehouse_is_read_by_status_and_a_run_says_why_it_cannot_write(registered):
    env, tmp_path = registered
    warehouse = Path(env["INTERLINK_WAREHOUSE"])
    with connect(warehouse) as con:
        ensure_tables(con)
    subprocess.run(["chattr", "+i", str(warehouse)], check=True)
    try:
        before = _state(tmp_path / "inbox", warehouse)
        status = call_cli(env, "status", "--site", LIGHT)
        assert status.returncode == 0, status.stderr
        assert f"warehouse: {warehouse}" in status.stdout
        run = run_cli(env, "materialize", "--site", LIGHT)
        assert run.returncode == 1
        [failure] = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
        # the step's own message, without Dagster's class names
        assert re.fullmatch(
            rf"error: run \S+ for {re.escape(LIGHT)} failed at raw_crawl after [\d.]+s: cannot open the "
            rf"warehouse {re.escape(str(warehouse))}: the file is immutable or append-only \(lsattr shows i "
            r"or a; chattr -i undoes it\) \(IO Error: .*Operation not permitted\)",
            failure,
        ), failure
        assert len(run.stderr.splitlines()) <= 3
        assert _state(tmp_path / "inbox", warehouse) == before
    finally:
        subprocess.run(["chattr", "-i", str(warehouse)], check=True)


@pytest.mark.parametrize("damage", ["overwritten", "pages damaged"])
def test_a_damaged_dagster_home_is_named_with_how_to_recover(registered, damage):
    env, tmp_path = registered
    runs = Path(env["DAGSTER_HOME"]) / "history" / "runs.db"
    with open(runs, "r+b") as f:
        f.seek(0 if damage == "overwritten" else 100)
        f.write(b"\x07" * 8192)
    before = _state(tmp_path)
    why = "not an SQLite database" if damage == "overwritten" else "database disk image is malformed"
    commands = [["status", "--site", LIGHT], ["materialize", "--site", LIGHT]]
    # every command checks the home's files are SQLite; `sites` reads no page of the runs' file
    for command in [["sites"], *commands] if damage == "overwritten" else commands:
        done = call_cli(env, *command)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr == (
            f"error: the Dagster home's {runs} is damaged ({why}); nothing was changed. Move it aside (mv "
            f"{runs} {runs}.damaged) and run again: Dagster starts a new one, without the run history. "
            "The warehouse keeps every table.\n"
        )
    assert _state(tmp_path) == before


@pytest.mark.e2e
def test_a_backtest_hiding_no_link_is_refused_and_status_says_which_crawl_its_figures_are_of(
    cli_env, tmp_path, sample_site, crawls
):
    sample = sample_site.folder.copy(tmp_path / "sample")
    env = {**cli_env, "INTERLINK_WAREHOUSE": str(sample.warehouse), "INTERLINK_INBOX": str(sample.inbox)}
    crawl, links = SAMPLE_DIR / "internal_all.csv", SAMPLE_DIR / "all_inlinks.csv"
    assert call_cli(env, "register", str(crawl), "--links", str(links)).returncode == 0  # the same crawl
    with duckdb.connect(str(sample.warehouse), read_only=True) as con:
        planned = con.execute("SELECT crawl_id FROM graph.site_metrics LIMIT 1").fetchone()[0]
        backtests = con.execute("SELECT count(*) FROM graph.backtest_runs").fetchone()
    done = run_cli(env, "backtest", "--site", SAMPLE_HOST, "--fraction", "0.000000001")
    assert done.returncode == 1
    assert re.search(
        r"failed at link_backtest after [\d.]+s: fraction 1e-09 hides none of the site's [\d,]+ in-content "
        r"link pairs \(seed 0\): nothing would be measured. Hide more, e.g. --fraction 0.0\d+\.",
        done.stderr,
    ), done.stderr
    with duckdb.connect(str(sample.warehouse), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM graph.backtest_runs").fetchone() == backtests
    status = call_cli(env, "status", "--site", SAMPLE_HOST)
    assert f"seed 0; crawl {planned})" in status.stdout and "note:" not in status.stdout
    # a new crawl registered, not run yet: the figures shown are said to be the earlier crawl's
    changed = tmp_path / "new" / "internal_all.csv"
    changed.parent.mkdir()
    changed.write_bytes(crawl.read_bytes().rstrip(b"\r\n").rsplit(b"\n", 1)[0] + b"\n")
    assert call_cli(env, "register", str(changed), "--keep-links").returncode == 0
    status = call_cli(env, "status", "--site", SAMPLE_HOST)
    assert "freshness: stale: the plan (made " in status.stdout
    assert f") is of crawl {planned}, and a newer crawl (" in status.stdout
    assert f"is registered: run the site again (interlink materialize --site {SAMPLE_HOST})" in status.stdout


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["an empty folder", "PostgreSQL"])
def test_a_killed_run_never_holds_its_site_whatever_the_dagster_home(
    kind, cli_env, tmp_path, crawls, request
):
    home = tmp_path / "own-home"
    home.mkdir()
    if kind == "PostgreSQL":
        port, database = request.getfixturevalue("postgres_port"), request.getfixturevalue("new_database")
        url = f"postgresql+psycopg2://postgres@127.0.0.1:{port}/{database('dagster')}"
        (home / "dagster.yaml").write_text(f"storage:\n  postgres:\n    postgres_url: {url}\n")
    env = {**cli_env, "DAGSTER_HOME": str(home)}
    light = crawls / "lightchiropractic"
    assert call_cli(env, "register", str(light / "internal_all.csv")).returncode == 0
    killed = _materialize_in_background(env, tmp_path / "killed.log")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        started = dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])
        # working: started, and its process reported on it (a run killed in the moment between is judged
        # by the in-process executor's own event, where the home is SQLite)
        _wait_while_running(
            killed,
            tmp_path / "killed.log",
            lambda: [run for run in instance.get_runs(started) if run_process(instance, run)],
        )
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        [dead] = instance.get_runs()
        assert dead.status == dg.DagsterRunStatus.STARTED  # as the killed process left it
        status = call_cli(env, "status", "--site", LIGHT)
        assert instance.get_run_by_id(dead.run_id).status == dg.DagsterRunStatus.FAILURE
    said = f"run {dead.run_id} had stopped: its process (pid {killed.pid}) is gone: it was killed or crashed"
    assert status.returncode == 0 and said in status.stderr
    assert f"last run: {dead.run_id} FAILURE" in status.stdout
    assert f"--site {LIGHT} --resume runs what it left" in status.stdout
    # the next command that needs the site goes ahead (here it says what it needs: pages)
    decisions = tmp_path / "decisions.csv"
    decisions.write_text("source_url,target_url,decision\n")
    after = call_cli(env, "decisions", "import", str(decisions), "--site", LIGHT, "--no-plan")
    assert after.returncode == 2 and "already in progress" not in after.stderr, after.stderr
    assert f"{LIGHT} has no pages yet: materialise it first" in after.stderr


# A run as the UI or the daemon leaves it when `make dev` is killed as a whole: its worker process said
# "Started process for run (pid: N)", as Dagster's run worker does, and then died with the rest.
DAEMON_RUN_WORKER = """
import os, sys, time
import dagster as dg
from dagster._core.events import EngineEventData

@dg.op
def working(context):
    pid = os.getpid()
    context.instance.report_engine_event(
        f"Started process for run (pid: {pid}).", context.dagster_run, EngineEventData.in_process(pid)
    )
    print("started", flush=True)
    time.sleep(600)

@dg.job
def site_pipeline():
    working()

with dg.DagsterInstance.from_config(sys.argv[1]) as instance:
    site_pipeline.execute_in_process(instance=instance, tags={"dagster/partition": sys.argv[2]})
"""


def test_a_run_of_a_killed_make_dev_never_holds_its_site(registered):
    """Issue 70: `make dev` killed with a run in flight left the site locked ("already in progress … in the
    UI or the daemon") until `make dev` ran again for two minutes. The next command sees the run's worker
    is gone, marks the run failed and goes ahead."""
    env, tmp_path = registered
    log = tmp_path / "worker.log"
    with open(log, "w") as out:
        worker = subprocess.Popen(
            [sys.executable, "-c", DAEMON_RUN_WORKER, env["DAGSTER_HOME"], LIGHT], env=env, stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        _wait_while_running(worker, log, lambda: "started" in log.read_text())
        [run] = instance.get_runs()
        decisions = tmp_path / "decisions.csv"
        decisions.write_text("source_url,target_url,decision\n")
        refused = call_cli(
            env, "decisions", "import", str(decisions), "--site", LIGHT, "--no-plan"
        )  # the worker works
        assert (
            f"a run of {LIGHT} is already in progress (run {run.run_id}, in the UI or the daemon)"
            in refused.stderr
        )
        worker.kill()
        worker.wait()
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.STARTED
        after = call_cli(env, "decisions", "import", str(decisions), "--site", LIGHT, "--no-plan")
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE
    said = f"run {run.run_id} had stopped: its process (pid {worker.pid}) is gone: it was killed or crashed"
    assert said in after.stderr and "already in progress" not in after.stderr, after.stderr
    assert f"{LIGHT} has no pages yet: materialise it first" in after.stderr


def test_a_run_whose_process_id_was_reused_is_dead():

    now = psutil.Process().create_time()
    here = RunProcess(os.getpid(), socket.gethostname(), now, cli=True)
    assert not process_gone(here)
    assert process_gone(replace(here, started=now - 3600))  # another process, same id
    assert not process_gone(replace(here, host="another-machine", started=0))  # its own machine's to judge
    assert not process_gone(replace(here, started=now + 3600, cli=False))  # a worker says it works later


def _fill(folder: Path) -> None:
    """Every byte left on `folder`'s file system taken."""
    with open(folder / "filler", "wb") as filler, contextlib.suppress(OSError):
        while True:
            filler.write(b"\0" * 65536)
            filler.flush()


@pytest.mark.e2e
def test_a_full_disk_ends_each_command_in_a_sentence_and_leaves_nothing_half_made(
    cli_env, tmp_path, crawls, small_disk
):
    """Issue 56: with 0 bytes left, `materialize` ended in a 20-line OSError traceback raised while writing
    its log, the step's own message lost and nothing recorded. The warehouse, drop folder and logs on a full
    disk: the step's message, the log and the record each said in a line, and no empty warehouse or log
    left to be taken for a damaged one. The Dagster home on it too: one line before anything runs."""
    disk, mount, _ = small_disk
    mount(4096)
    env = {**cli_env, "INTERLINK_WAREHOUSE": str(disk / "w.duckdb"), "INTERLINK_INBOX": str(disk / "inbox")}
    light = crawls / "lightchiropractic"
    assert call_cli(env, "register", str(light / "internal_all.csv")).returncode == 0
    (disk / "home").mkdir()
    shutil.copyfile(PROJECT_ROOT / "dagster_home/dagster.yaml", disk / "home" / "dagster.yaml")
    home_on_disk = {**env, "DAGSTER_HOME": str(disk / "home")}
    assert call_cli(home_on_disk, "register", str(light / "internal_all.csv")).returncode == 0
    _fill(disk)
    done = run_cli(env, "materialize", "--site", LIGHT)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    error, log, recorded = done.stderr.strip().splitlines()
    assert error.startswith("error: run ") and "failed at raw_crawl after" in error
    assert (
        f"cannot open the warehouse {disk / 'w.duckdb'}: the disk is full (No space left on device)" in error
    )
    assert log.startswith(f"full log: not kept: {disk / 'logs'}/") and "the disk is full: free space" in log
    assert recorded.startswith("not recorded: ") and "the disk is full" in recorded
    assert not (disk / "w.duckdb").exists() and not list((disk / "logs").iterdir())  # no empty file left

    home = call_cli(home_on_disk, "materialize", "--site", LIGHT)
    assert home.returncode == 2
    assert home.stderr == (
        f"error: the Dagster home {disk / 'home'} cannot be written: its disk is full (df -h shows how much "
        "is left); nothing was run. Free space there (or set DAGSTER_HOME to a folder on another disk) and "
        "run again.\n"
    )


@pytest.mark.e2e
def test_a_log_folder_that_cannot_be_written_never_hides_the_runs_own_message(cli_env, tmp_path):
    host = "noindex.example"
    crawl = tmp_path / "internal_all.csv"
    write_export(
        crawl, CRAWL_HEADER, [[f"https://{host}/{p}", "text/html", "200", "Non-Indexable", p or "Home", p]
                              for p in ("", "a/", "b/")]
    )  # fmt: skip
    logs = tmp_path / "logs"  # beside the warehouse (w.duckdb)
    logs.mkdir()
    subprocess.run(["chattr", "+i", str(logs)], check=True)
    try:
        done = run_cli(cli_env, "register", str(crawl), "--run")
    finally:
        subprocess.run(["chattr", "-i", str(logs)], check=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    error, log, recorded = done.stderr.strip().splitlines()
    assert "no page of noindex.example's crawl is worth linking" in error
    assert log.startswith(f"full log: not kept: {logs}/{host}-") and "not permitted" in log
    assert recorded.startswith("recorded in ops.run_failures")


@pytest.mark.e2e
def test_a_links_export_with_almost_no_link_position_is_said_at_every_step_it_thins(
    cli_env, tmp_path, crawls
):
    """Issue 56: 4 of 5,518 rows with a Link Position was accepted without a word (the plan had 2 links, 12
    of 14 orphans stayed, the backtest read 0.0% against 0.0%). Now: registered with a warning naming the
    share; the links without a position count as navigation, so the plan still rescues every orphan; the
    ranker and the backtest say what they fall back to."""
    light = crawls / "lightchiropractic"
    export = pl.read_csv(light / "all_inlinks.csv", infer_schema=False)
    thin = tmp_path / "all_inlinks.csv"
    export.with_columns(
        pl.when(pl.int_range(pl.len()) < 4)
        .then(pl.col("Link Position"))
        .otherwise(pl.lit(""))
        .alias("Link Position")
    ).write_csv(thin)
    done = run_cli(cli_env, "register", str(light / "internal_all.csv"), "--links", str(thin), "--run")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("warning")]
    assert said[0] == (
        "warning: all_inlinks.csv: Link Position is filled for only 4 of its 5,518 links (0.1%): the others "
        "count as navigation (where they sit is unknown), so the plan learns from, and is measured on, 1 "
        "in-content link(s), and ranks with the default weights if that is too few. Export Bulk Export > "
        "Links > All Inlinks again from Screaming Frog (it fills Link Position for every link)."
    )
    assert any(
        line.startswith("warning (ml/link_ranker_runs): only 0 of the site's in-content links")
        for line in said
    )
    assert any(
        line.startswith("warning (graph/backtest_runs): the links export has no in-content link")
        for line in said
    )
    with duckdb.connect(cli_env["INTERLINK_WAREHOUSE"], read_only=True) as con:
        orphans = con.execute("SELECT orphan_pages FROM graph.site_metrics ORDER BY scenario DESC").fetchall()
        planned = con.execute("SELECT count(*) FROM graph.link_plan").fetchone()[0]
    assert orphans == [(14,), (5,)] and planned > 20  # before, after (5 utility pages left to the menus)


OVERLAPPING_SETTINGS = {
    "the snapshot path is the warehouse's": (
        lambda tmp: {"INTERLINK_SNAPSHOT_PATH": str(tmp / "w.duckdb")},
        "the warehouse (INTERLINK_WAREHOUSE) ({tmp}/w.duckdb) and the analysts' snapshot "
        "(INTERLINK_SNAPSHOT_PATH) ({tmp}/w.duckdb) are the same file: one would overwrite the other",
    ),
    "the snapshot path is a link to the warehouse": (
        lambda tmp: {"INTERLINK_SNAPSHOT_PATH": str(tmp / "link.duckdb")},
        "are the same file: one would overwrite the other",
    ),
    "the exports folder is the drop folder": (
        lambda tmp: {"INTERLINK_EXPORTS_DIR": str(tmp / "inbox")},
        "the drop folder (INTERLINK_INBOX) ({tmp}/inbox) and the exports folder (INTERLINK_EXPORTS_DIR) "
        "({tmp}/inbox) are the same folder",
    ),
    "the drop folder and the warehouse inside the exports folder": (
        lambda tmp: {"INTERLINK_EXPORTS_DIR": str(tmp)},
        "is inside the exports folder (INTERLINK_EXPORTS_DIR) ({tmp}): what one writes there the other may "
        "replace or delete",
    ),
    "Dagster's home is the drop folder": (
        lambda tmp: {"DAGSTER_HOME": str(tmp / "inbox")},
        "the drop folder (INTERLINK_INBOX) ({tmp}/inbox) and Dagster's home (DAGSTER_HOME) ({tmp}/inbox) "
        "are the same folder",
    ),
}


@pytest.mark.parametrize("case", sorted(OVERLAPPING_SETTINGS))
def test_settings_that_name_one_place_twice_are_refused_before_anything_is_written(case, registered):
    """A snapshot published over the warehouse would replace it with its copy: every command refuses such
    settings in one sentence, and every file (warehouse, inbox, Dagster's home) keeps its bytes."""
    env, tmp_path = registered
    with duckdb.connect(env["INTERLINK_WAREHOUSE"]) as con:  # a warehouse with something in it
        con.execute("CREATE TABLE kept AS SELECT 42 AS answer")
    (tmp_path / "link.duckdb").symlink_to(tmp_path / "w.duckdb")
    settings, message = OVERLAPPING_SETTINGS[case]
    env = {**env, **settings(tmp_path)}
    before = _state(tmp_path)
    for command in (["materialize", "--site", LIGHT], ["sql", "SELECT 1"], ["status", "--site", LIGHT]):
        done = run_cli(env, *command)
        assert done.returncode == 2, done.stdout + done.stderr
        assert message.replace("{tmp}", str(tmp_path)) in done.stderr, done.stderr
        assert "nothing was written" in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert _state(tmp_path) == before


def test_the_sql_shell_opens_only_a_duckdb_snapshot_and_never_fetches_an_extension(registered):
    """A SQLite file where the snapshot should be would make DuckDB install its SQLite extension from the
    network before safe mode holds: the shell refuses it, and nothing is installed."""
    env, tmp_path = registered
    sqlite = tmp_path / "snapshot.db"
    with contextlib.closing(sqlite3.connect(sqlite)) as con:
        con.execute("CREATE TABLE t (a)")
        con.commit()
    home = tmp_path / "user"
    home.mkdir()
    env = {**env, "INTERLINK_SNAPSHOT_PATH": str(sqlite), "HOME": str(home)}
    before = _state(tmp_path)
    done = run_cli(env, "sql", "SELECT 1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == (
        f"error: {sqlite} is not a DuckDB file (a SQLite database): INTERLINK_SNAPSHOT_PATH names the "
        "analysts' snapshot, which the pipeline writes; nothing was opened."
    )
    assert _state(tmp_path) == before and not (home / ".duckdb").exists()


@pytest.mark.parametrize("value", ["1000000000", "99999999999", "²", "٣"])
def test_a_plan_age_past_any_calendar_or_in_other_digits_is_refused_in_a_sentence(value, registered):
    """Issue 70: these gave 29-line tracebacks (OverflowError, ValueError), and "٣" was read as 3."""
    env, _ = registered
    done = call_cli({**env, "INTERLINK_PLAN_MAX_AGE_DAYS": value}, "status", "--site", LIGHT)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr == (
        "error: $INTERLINK_PLAN_MAX_AGE_DAYS must be a whole number of days from 1 to 36,500, not "
        f"{value!r}.\n"
    )
