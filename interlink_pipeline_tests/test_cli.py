"""The `interlink` command, run as a user would (a subprocess with its own instance and warehouse), or
through its entry point in process where the process itself is not what is tested."""

import os
import re
import sys
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest

from interlink_pipeline.cli import EXAMPLES
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import (
    NUTRI,
    PROJECT_ROOT,
    SAMPLE_DIR,
    call_cli,
    run_cli,
    run_cli_in_terminal,
)


@pytest.mark.e2e
def test_demo_materialises_the_sample(cli_env, tmp_path, sample_site):
    # over a copy of the session's sample (its cold run is the fixture's, in process): every step runs
    # again through the command, with the embedding cache and the kept model warm, as a user's second
    # `make run` does
    sample = sample_site.folder.copy(tmp_path / "sample")
    cli_env = {**cli_env, "INTERLINK_WAREHOUSE": str(sample.warehouse), "INTERLINK_INBOX": str(sample.inbox)}
    # a newer crawl registered makes the published plan stale: the freshness sensor asks for its check
    # (once), which fails, and status says so
    newer = tmp_path / "recrawl" / "internal_all.csv"
    newer.parent.mkdir()
    newer.write_text((SAMPLE_DIR / "internal_all.csv").read_text().replace("Alpine", "Alpine Gear", 1))
    assert _freshness_requests(cli_env, sample) == []  # the copy's plan is of its crawl
    assert call_cli(cli_env, "register", str(newer), "--site", SAMPLE_HOST).returncode == 0
    assert _freshness_requests(cli_env, sample) == [SAMPLE_HOST]
    assert _freshness_check(cli_env) == "FAILED"
    assert _freshness_requests(cli_env, sample) == []  # asked once per new crawl
    said = call_cli(cli_env, "status", "--site", SAMPLE_HOST).stdout
    assert "freshness: stale: the plan (made" in said and "a newer crawl" in said, said
    # in a terminal, as a user runs it: a bar with the step running, the steps done, the time and the
    # step's latest message, drawn while the steps run (Dagster's capture of a step's output takes the
    # terminal's descriptor), and no step lines (a log gets those: test_cli_safety's killed run)
    drawn = run_cli_in_terminal(cli_env, "demo")
    assert "\x1b[?25l" in drawn  # rich's live display took the terminal (cursor hidden while it draws)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn)  # the text, without the colours
    assert f"registered {SAMPLE_HOST}" in shown and "succeeded in" in shown and "pages" in shown
    assert "[1/" not in shown
    frames = re.findall(r"(\w+)\s+[━╸╺]+\s+(\d+)/(\d+)\s+0:\d\d:\d\d([^\r\n]*)", shown)
    assert any(int(done) < int(steps) for _, done, steps, _ in frames), shown[-2000:]  # while it ran
    step, done, steps, _ = frames[-1]
    assert step == "published_measurement" and done == steps  # every step counted
    # the plan is out before its backtest: said with when, inside the run's time
    published = float(re.search(r"the plan was published ([\d.]+)s into the run", shown)[1])
    assert 0 < published < float(re.search(r"succeeded in ([\d.]+)s", shown)[1])
    assert any(said.strip().startswith(f"{SAMPLE_HOST}: ") for *_, said in frames)  # a step's message
    # what the steps print (dbt's console) is kept in a file, not drawn between the bar's frames
    said = Path(re.search(r"its steps' output:\s+(\S+)\)", shown)[1])
    assert "Running with dbt" not in shown and "Running with dbt" in said.read_text()
    with duckdb.connect(cli_env["INTERLINK_WAREHOUSE"], read_only=True) as con:
        assert con.execute("SELECT count(*) FROM staging.pages").fetchone()[0] == 1700
    # the whole run recorded its peak memory and the crawl's rows: a memory cap under what the next run
    # needs, by that peak, is said before anything runs; a cap that is no size is named
    with dg.DagsterInstance.from_config(cli_env["DAGSTER_HOME"]) as instance:
        ok = dg.RunsFilter(statuses=[dg.DagsterRunStatus.SUCCESS], tags={"dagster/partition": SAMPLE_HOST})
        [ran] = instance.get_runs(ok, limit=1)
        runs_before = len(instance.get_runs())
    peak = float(ran.tags["interlink/peak_memory_gb"])
    assert ran.tags["interlink/pages"] == "1962" and 0.3 < peak < 8
    capped = call_cli({**cli_env, "INTERLINK_MEMORY_LIMIT": "200MB"}, "materialize", "--site", SAMPLE_HOST)
    assert capped.returncode == 2, capped.stdout + capped.stderr
    refusal = (
        f"a run of {SAMPLE_HOST} (1,962 URLs in its crawl) needs about {peak:.1f} GB of memory (its last "
        f"whole run ({ran.run_id}) peaked at {peak:.1f} GB with 1,962 URLs), more than "
        "INTERLINK_MEMORY_LIMIT=200MB"
    )
    assert refusal in capped.stderr
    unread = call_cli({**cli_env, "INTERLINK_MEMORY_LIMIT": "lots"}, "materialize", "--site", SAMPLE_HOST)
    assert unread.returncode == 2 and "INTERLINK_MEMORY_LIMIT must be a size such as 12GB" in unread.stderr
    with dg.DagsterInstance.from_config(cli_env["DAGSTER_HOME"]) as instance:
        assert len(instance.get_runs()) == runs_before  # nothing ran
    listing = call_cli(cli_env, "sites")
    [line] = [line for line in listing.stdout.splitlines() if line.startswith(f"{SAMPLE_HOST}: raw.")]
    assert "raw.crawl_pages=1,962" in line and "marts.link_opportunities=" in line
    # status: the last run, the plan's figures, where the files are
    status = call_cli(cli_env, "status", "--site", SAMPLE_HOST)
    assert status.returncode == 0, status.stderr
    assert "last run: " in status.stdout and " SUCCESS (" in status.stdout
    assert "freshness: fresh: the plan of the crawl registered now" in status.stdout  # the run made it pass
    assert _freshness_check(cli_env) == "SUCCEEDED"
    every = call_cli(cli_env, "status")  # no --site: a line per site
    assert every.returncode == 0 and every.stdout.startswith(f"{SAMPLE_HOST}: last run SUCCESS ("), every
    assert "links planned" in every.stdout and "within 3 clicks, precision" in every.stdout
    assert "after  1,700 pages" in status.stdout and "backtest: plan precision" in status.stdout
    report = sample.warehouse.parent / "exports" / SAMPLE_HOST / "report.html"
    assert f"report:    {report}" in status.stdout and report.exists()
    # sql: a DuckDB shell on the snapshot, its version the library's
    shell = run_cli(
        cli_env, "sql", stdin="SELECT count(*) AS crawls FROM marts.site_health; SELECT version();"
    )
    assert shell.returncode == 0, shell.stderr
    assert "crawls" in shell.stdout and f"v{duckdb.__version__}" in shell.stdout


def _freshness_requests(env: dict[str, str], sample) -> list[str]:
    """The sites plan_freshness_sensor asks a check run for (each request's run executed at once, as the
    daemon would), its cursor kept between calls in `env`."""
    import dagster as dg

    from interlink_pipeline.definitions import build_defs
    from interlink_pipeline.defs.publish.freshness import plan_freshness_sensor

    defs = build_defs(str(sample.warehouse), str(sample.inbox))
    cursor = env.get("freshness_cursor")
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        context = dg.build_sensor_context(instance, cursor=cursor, definitions=defs, resources=defs.resources)
        tick = plan_freshness_sensor(context)
        env["freshness_cursor"] = tick.cursor
        for request in tick.run_requests:
            done = defs.resolve_job_def("plan_freshness").execute_in_process(
                instance=instance, tags=request.tags
            )
            assert done.success
    return [request.tags["dagster/partition"] for request in tick.run_requests]


def _freshness_check(env: dict[str, str]) -> str:
    """How the site's published_plan_is_fresh check last ended (SUCCEEDED, FAILED), in `env`'s instance."""
    import dagster as dg
    from dagster._core.event_api import PartitionKeyFilter

    key = dg.AssetCheckKey(dg.AssetKey("published_files"), "published_plan_is_fresh")
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [key], partition_filter=PartitionKeyFilter(key=SAMPLE_HOST)
        )
    return latest[key].status.value


def test_register_infers_the_site_and_adds_the_partition(cli_env, tmp_path, crawls):
    done = call_cli(cli_env, "register", str(crawls / "nutrisport/internal_html.csv"))
    assert done.returncode == 0, done.stderr
    assert f"registered {NUTRI}" in done.stdout
    assert (tmp_path / "inbox" / NUTRI / "internal_html.csv").read_bytes() == (
        crawls / "nutrisport/internal_html.csv"
    ).read_bytes()
    assert f"{NUTRI}: not materialised yet" in call_cli(cli_env, "sites").stdout


def test_register_bad_input_fails_cleanly(cli_env, tmp_path):
    bad = tmp_path / "export.csv"
    bad.write_text("Page,Title\nx,y\n")
    done = run_cli(cli_env, "register", str(bad))
    assert done.returncode == 2
    assert "error:" in done.stderr and "no header row with a URL column" in done.stderr
    assert not (tmp_path / "inbox").exists()
    done = run_cli(cli_env, "register", str(bad), "--site", "https://www.example.com/")
    assert done.returncode == 2 and "Use the host alone: 'www.example.com'" in done.stderr


def test_generate_site(cli_env, tmp_path):
    out = tmp_path / "site"
    done = call_cli(
        cli_env, "generate-site", "--pages", "500", "--out", str(out), "--no-links", "--host", "Shop.Example"
    )
    assert done.returncode == 0, done.stderr
    assert "generated shop.example" in done.stdout
    assert (out / "internal_all.csv").exists() and not (out / "all_inlinks.csv").exists()
    addresses = pl.read_csv(out / "internal_all.csv", columns=["Address"])["Address"]
    assert addresses.str.starts_with("https://shop.example/").all()


def test_every_command_says_what_it_does_with_an_example(cli_env):
    version = run_cli(cli_env, "--version")  # a real process: what a user's shell gets
    assert version.returncode == 0 and version.stdout.startswith("interlink 0.")
    for command, example in EXAMPLES.items():
        shown = call_cli(cli_env, command, "--help")
        assert shown.returncode == 0, shown.stderr
        assert f"example:\n  {example}" in shown.stdout


def test_settings_from_a_file_or_flags_are_checked_before_anything_runs(cli_env, tmp_path):
    def materialize(*options):
        return call_cli(cli_env, "materialize", "--site", SAMPLE_HOST, *options)

    missing = materialize("--config", str(tmp_path / "none.yaml"))
    assert missing.returncode == 2 and "none.yaml: config file not found." in missing.stderr
    (tmp_path / "bad.yaml").write_text("ops: [unclosed")
    assert "bad.yaml: not valid YAML" in materialize("--config", str(tmp_path / "bad.yaml")).stderr
    (tmp_path / "list.toml").write_text("ops = 1")
    assert "list.toml:" in materialize("--config", str(tmp_path / "list.toml")).stderr
    (tmp_path / "typo.yaml").write_text("ops: {link_plan: {config: {out_link_budgett: 5}}}")
    typo = materialize("--config", str(tmp_path / "typo.yaml"))
    assert typo.returncode == 2 and "out_link_budgett" in typo.stderr
    low = materialize("--out-link-budget", "0")
    assert low.returncode == 2 and "out_link_budget" in low.stderr
    # nothing ran, nothing was written
    assert not (tmp_path / "w.duckdb").exists() and not (tmp_path / "inbox").exists()


def test_the_cli_names_the_ui_where_it_runs(tmp_path):
    """Issue 70: every run ended with "open http://127.0.0.1:3000" whatever port `make dev` served. A
    webserver of this Dagster home is named at its own port; without one, the port make would use."""
    from unittest.mock import patch

    from interlink_pipeline.cli.where import ui_address
    from interlink_pipeline_tests.services import free_port, http_ok, service, wait_for

    home = tmp_path / "home"
    home.mkdir()
    with patch.dict(os.environ, {"DAGSTER_HOME": str(home), "PORT": "3007"}):
        assert ui_address() == "make dev PORT=3007, then open http://127.0.0.1:3007"
        port, log = free_port(), tmp_path / "webserver.log"
        command = [sys.executable, "-m", "dagster_webserver", "--port", str(port), "--host", "127.0.0.1",
                   "-m", "interlink_pipeline.definitions"]  # fmt: skip
        with service(command, log, cwd=PROJECT_ROOT, env={**os.environ, "DAGSTER_HOME": str(home)}):
            wait_for(lambda: http_ok(f"http://127.0.0.1:{port}/server_info"), 180, "the webserver", log)
            assert ui_address() == f"http://127.0.0.1:{port} (running)"
    with patch.dict(os.environ, {"DAGSTER_HOME": str(home)}):
        os.environ.pop("PORT", None)
        assert ui_address() == "make dev, then open http://127.0.0.1:3000"
