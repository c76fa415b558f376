"""What the tests share besides fixtures: the project's paths and sites, SF-shaped export files, and one way
to materialise a site's steps in process and read what the run did."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import polars as pl

from interlink_pipeline.defs.jobs import step_keys

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DIR = PROJECT_ROOT / "data" / "sample"
SHARED_CRAWLS = Path(
    os.environ.get("INTERLINK_SHARED_CRAWLS", PROJECT_ROOT.parent / "shared" / "data" / "crawls")
)
LIGHT = "www.lightchiropractic.sg"
NUTRI = "nutrisport.es"
DBT_DIR = PROJECT_ROOT / "dbt"
# SERP requests retried fast: the tests' local servers answer at once
FAST_SERP = {"backoff_base_s": 0.05, "backoff_max_s": 0.2, "timeout_s": 2.0}
SERP_STEPS = ["raw_crawl", "pages", "serp_results"]
# the site pipeline's steps in three stretches: what the candidates read, the relevance and the plan, and
# what is measured and published from the plan
UPSTREAM = ["raw_crawl", "raw_links", "raw_page_text", "raw_search_console", "pages", "page_embeddings",
            "serp_results", "similarity_pairs", "topic_clusters"]  # fmt: skip
UP_TO_PLAN = [*UPSTREAM, "link_decisions", "link_ranker", "link_candidates", "link_plan"]
AFTER_PLAN = [
    "marts",
    "analyst_snapshot",
    "spreadsheet_exports",
    "html_report",
    "published_files",
    "link_backtest",
    "published_measurement",
]


def write_export(
    path: Path,
    header: list[str],
    rows: list[list[str]],
    *,
    encoding: str = "utf-8",
    delimiter: str = ",",
    preamble: str | None = None,
) -> Path:
    """Write a Screaming Frog-shaped CSV (every field quoted) in a given encoding and delimiter."""
    buffer = io.StringIO()
    if preamble is not None:
        buffer.write(f'"{preamble}"\r\n')
    writer = csv.writer(buffer, delimiter=delimiter, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue().encode(encoding))
    return path


SF_HEADER = [
    "Address",
    "Content Type",
    "Status Code",
    "Status",
    "Indexability",
    "Indexability Status",
    "Title 1",
    "Meta Description 1",
    "H1-1",
    "Canonical Link Element 1",
    "Crawl Depth",
]


def sf_row(
    url: str,
    title: str,
    *,
    status: str = "200",
    indexability: str = "Indexable",
    reason: str = "",
    h1: str = "",
    meta: str = "",
    canonical: str = "",
    depth: str = "1",
    content_type: str = "text/html; charset=UTF-8",
) -> list[str]:
    return [
        url,
        content_type,
        status,
        "OK" if status == "200" else "",
        indexability,
        reason,
        title,
        meta,
        h1,
        canonical,
        depth,
    ]


def chromium_path() -> str | None:
    """A Chromium on this machine ($INTERLINK_CHROMIUM, then PATH); None: Playwright's own build."""
    import shutil

    candidates = [os.environ.get("INTERLINK_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"]
    return next((shutil.which(c) for c in candidates if c and shutil.which(c)), None)


def register_lightchiropractic(inbox_root: Path, crawls: Path, crawl: Path | None = None) -> None:
    """lightchiropractic's crawl (or a variant of it) and its All Inlinks export, in the drop folder."""
    from interlink_pipeline.core.ingest.inbox import register_crawl

    links = crawls / "lightchiropractic/all_inlinks.csv"
    register_crawl(inbox_root, LIGHT, crawl or crawls / "lightchiropractic/internal_all.csv", links)


def run_site(
    warehouse_path: Path | str,
    inbox_root: Path | str,
    instance: dg.DagsterInstance,
    site: str,
    *,
    steps: list[str] | None = None,
    run_config: dict | None = None,
    serp_api=None,
    tags: dict[str, str] | None = None,
    job: str = "site_pipeline",
) -> dg.ExecuteInProcessResult:
    """`job` (or just the named `steps`) for one site, in process, over the given warehouse and drop folder;
    failures are returned, not raised."""
    from interlink_pipeline.definitions import build_defs

    defs = build_defs(str(warehouse_path), str(inbox_root), serp_api=serp_api)
    if not instance.has_dynamic_partition("sites", site):
        instance.add_dynamic_partitions("sites", [site])
    return defs.resolve_job_def(job).execute_in_process(
        partition_key=site,
        instance=instance,
        raise_on_error=False,
        run_config=run_config,
        tags=tags,
        asset_selection=step_keys(defs, steps) if steps else None,
    )


def run_serp(warehouse_path, inbox, instance, serp_api, config=None, steps=SERP_STEPS, site=LIGHT):
    """The steps up to SERP evidence for `site` with `serp_api`, retries fast, `config` on serp_results."""
    run_config = {"ops": {"serp_results": {"config": {**FAST_SERP, **(config or {})}}}}
    return run_site(
        warehouse_path, inbox, instance, site, steps=steps, run_config=run_config, serp_api=serp_api
    )


def failure_message(result: dg.ExecuteInProcessResult) -> str:
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    return failure.event_specific_data.error.message


def materialization_metadata(result: dg.ExecuteInProcessResult, step: str) -> dict:
    """{name: value} of `step`'s (first) materialisation in the run: its main table's, which carries the
    step's figures."""
    metadata = result.asset_materializations_for_node(step)[0].metadata
    return {name: _metadata_value(entry) for name, entry in metadata.items()}


def _metadata_value(entry: dg.MetadataValue) -> object:
    """A metadata entry's value; a table preview as the frame it shows."""
    if isinstance(entry, dg.TableMetadataValue):  # records keep their values; the schema, the columns' order
        columns = [column.name for column in entry.schema.columns]
        return pl.DataFrame([record.data for record in entry.records], schema=columns, orient="row")
    return entry.value


def run_cli(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """`interlink ARGS` as a user runs it: a subprocess in the project folder."""
    return subprocess.run(
        [sys.executable, "-m", "interlink_pipeline.cli", *args],
        env=env,
        cwd=PROJECT_ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
    )


def call_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """`interlink ARGS` through its entry point in this process, with `env` as the environment and what
    it prints captured: for commands whose own process adds nothing to what a test checks (run_cli keeps
    the real process where exit codes, signals and locks are tested)."""
    from unittest.mock import patch

    from interlink_pipeline.cli import main

    out, err = io.StringIO(), io.StringIO()
    with patch.dict(os.environ, env, clear=True), redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as done:  # argparse: --help, --version, a usage error
            code = done.code
    return subprocess.CompletedProcess(["interlink", *args], code, out.getvalue(), err.getvalue())


def run_cli_in_terminal(env: dict[str, str], *args: str) -> str:
    """`interlink ARGS` with its output on a pseudo-terminal, as in a user's shell: what it drew there."""
    import pty

    reader, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "interlink_pipeline.cli", *args],
        env={**env, "TERM": "xterm-256color", "COLUMNS": "120"},
        cwd=PROJECT_ROOT,
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
    )
    os.close(terminal)
    drawn = bytearray()
    while True:
        try:
            chunk = os.read(reader, 65536)
        except OSError:  # the terminal's other end closed: the command has exited
            break
        if not chunk:
            break
        drawn += chunk
    os.close(reader)
    assert process.wait(timeout=600) == 0, drawn.decode(errors="replace")[-3000:]
    return drawn.decode(errors="replace")


def changed_light_crawl(crawls: Path, tmp_path: Path, without: str = "conditions-scoliosis") -> Path:
    """lightchiropractic's export without one of its pages (/`without`/): a new crawl of the same site."""
    export = pl.read_csv(crawls / "lightchiropractic/internal_all.csv", infer_schema=False)
    changed = tmp_path / f"without-{without}" / "internal_all.csv"
    changed.parent.mkdir(parents=True, exist_ok=True)
    export.filter(pl.col("Address") != f"https://www.lightchiropractic.sg/{without}/").write_csv(changed)
    return changed


@dataclass
class OpenedReport:
    page: object  # Playwright's Page
    refused: list[str] = field(default_factory=list)  # requests off the file: none, it needs no network
    dialogs: list[str] = field(default_factory=list)  # alert(), confirm(), prompt(): script that ran


@contextmanager
def opened(report: Path):
    """The report in headless Chromium, its charts drawn, with every request other than the file refused."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        report_page = OpenedReport(page)

        def only_the_file(route):
            if not route.request.url.startswith("file://"):
                report_page.refused.append(route.request.url)
                return route.abort()
            return route.continue_()

        def dismiss(dialog):
            report_page.dialogs.append(dialog.message)
            dialog.dismiss()

        page.route("**/*", only_the_file)
        page.on("dialog", dismiss)
        page.goto(report.as_uri())
        for chart in ("topic-map", "depth-chart", "health-chart", "hub-tree"):  # drawn, or said in words
            page.wait_for_selector(f"#{chart}", timeout=20_000)
        yield report_page
        browser.close()
