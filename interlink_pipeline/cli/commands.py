"""What each `interlink` command does."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from interlink_pipeline.cli.run_config import run_config
from interlink_pipeline.cli.runs import (
    add_site,
    dagster_instance,
    execute,
    home_records,
    locked_site,
    registered,
    run_site,
    warehouse_resource,
)


def _register_files(
    crawl: Path,
    links: Path | None,
    site: str | None,
    queries: Path | None = None,
    text: Path | None = None,
    *,
    search_console: Path | None = None,
    keep_links: bool = False,
    encoding: str | None = None,
) -> str:
    from interlink_pipeline.core.ingest.crawl_exports import infer_site
    from interlink_pipeline.core.ingest.inbox import default_inbox, register_crawl
    from interlink_pipeline.core.ingest.tabular_files import as_utf8
    from interlink_pipeline.core.urls import display_host, normalize_host

    if not site:
        with as_utf8(crawl, encoding) as readable:
            site = infer_site(readable)
    site = normalize_host(site)
    drop = register_crawl(
        default_inbox(), site, crawl, links, queries, text,
        search_console_src=search_console, keep_links=keep_links, encoding=encoding,
    )  # fmt: skip
    add_site(site)
    files = (drop.links_file, drop.queries_file, drop.text_file, drop.search_console_file)
    extras = [str(f) for f in files if f]
    print(f"registered {display_host(site)}: {drop.crawl_file}" + "".join(f" + {f}" for f in extras))
    for warning in drop.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return site


def demo(args: argparse.Namespace) -> int:
    crawl = args.sample_dir / "internal_all.csv"
    links = args.sample_dir / "all_inlinks.csv"
    config = run_config(args)
    site = _register_files(crawl, links if links.exists() else None, None)
    return run_site(site, run_config=config)


def register(args: argparse.Namespace) -> int:
    config, since = run_config(args), time.time()
    site = _register_files(
        args.crawl,
        args.links,
        args.site,
        args.queries,
        args.text,
        search_console=args.search_console,
        keep_links=args.keep_links,
        encoding=args.encoding,
    )
    if args.run:
        return run_site(site, run_config=config)
    return _follow_sensor_run(site, since)


def _follow_sensor_run(site: str, since: float) -> int:
    """Say which run the inbox sensor of `make dev` started for the exports just registered (at `since`),
    and how to follow it; else how to run them."""
    from interlink_pipeline.cli.site_activity import DAEMON_BEAT_S, SENSOR_GRACE_S, sensor_run
    from interlink_pipeline.cli.where import ui_address
    from interlink_pipeline.core.ingest.inbox import default_inbox
    from interlink_pipeline.defs.ingest.inbox_sensor import inbox_run_key, inbox_scan_seconds

    instance, key = dagster_instance(), inbox_run_key(default_inbox(), site)
    run = None
    if key and home_records().beat_within("SENSOR", DAEMON_BEAT_S):
        seconds = inbox_scan_seconds() + SENSOR_GRACE_S
        print(
            f"make dev is running: waiting up to {seconds}s for its inbox sensor to start the run of {site}"
        )
        run = sensor_run(instance, site, key, since, seconds)
    if run is None:
        print(
            f"the inbox sensor starts its run (make dev), or run it now: interlink materialize --site {site}"
        )
        return 0
    print(
        f"the inbox sensor started it: {run.said()}. Follow it with interlink status --site {site} or in "
        f"the UI ({ui_address()}); interlink materialize --site {site} --wait waits for it."
    )
    return 0


def materialize(args: argparse.Namespace) -> int:
    config, site = run_config(args), registered(args.site)
    if args.resume:
        return _resume(site, config, args.wait)
    if args.wait and _waited_for_a_run_of_it(site) and not config:
        return 0
    return run_site(site, run_config=config)


def _resume(site: str, config: dict, wait: bool) -> int:
    """The steps of the site's last run that did not finish, run again with its settings (resume.py)."""
    from interlink_pipeline.cli.memory_check import crawl_rows, refuse_over_cap
    from interlink_pipeline.cli.resume import resumption
    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.core.ingest.inbox import default_inbox
    from interlink_pipeline.defs.ingest.inbox_sensor import inbox_run_key

    if config or wait:
        raise InputError(
            "--resume runs what the last run left with that run's settings: leave out --wait, --config and "
            "the setting flags."
        )
    with locked_site(site) as instance:
        left = resumption(instance, site, inbox_run_key(default_inbox(), site))
        refuse_over_cap(instance, site, crawl_rows(site))
        print(
            f"resuming run {left.run_id} of {site}: {len(left.done)} of {len(left.done) + len(left.left)} "
            f"steps finished ({', '.join(left.done) or 'none'}); running {', '.join(left.left)}"
        )
        return execute(instance, site, left.left, left.run_config, left.run_key, left.tags)


def _waited_for_a_run_of_it(site: str) -> bool:
    """Wait for the site's run in progress, if any; whether the run waited for materialised the exports
    registered now, so that nothing is left to run."""
    from dagster import DagsterRunStatus

    from interlink_pipeline.cli.site_activity import wait_for_site
    from interlink_pipeline.cli.site_locks import site_held
    from interlink_pipeline.core.ingest.inbox import default_inbox
    from interlink_pipeline.defs.ingest.inbox_sensor import RUN_KEY_TAG, inbox_run_key

    instance = dagster_instance()
    waited = wait_for_site(instance, site, lambda: site_held(site), print)
    run = instance.get_run_by_id(waited) if waited else None
    if run is None:
        return False
    key = inbox_run_key(default_inbox(), site)
    whole = run.asset_selection is None and key is not None and run.tags.get(RUN_KEY_TAG) == key
    if run.status == DagsterRunStatus.SUCCESS and whole:
        print(f"run {run.run_id} materialised {site}'s registered exports: nothing left to run")
        return True
    print(f"run {run.run_id} ended {run.status.value}: running {site} now")
    return False


def backtest(args: argparse.Namespace) -> int:
    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.core.warehouse.database import default_warehouse, query

    site = registered(args.site)
    if not 0 < args.fraction < 1:
        raise InputError(f"--fraction must be between 0 and 1 (exclusive), not {args.fraction}.")
    config = {"ops": {"link_backtest": {"config": {"fraction": args.fraction, "seed": args.seed}}}}
    code = run_site(site, ["link_backtest"], config)
    if code == 0:
        last = query(
            default_warehouse(),
            "SELECT * FROM graph.backtest_runs WHERE site = ? ORDER BY ran_at DESC LIMIT 1",
            [site],
        )
        if last.height:
            row = last.row(0, named=True)
            print(
                f"{row['hidden_links']:,} links hidden (seed {row['seed']}): the plan's "
                f"{row['plan_links']:,} links found {row['plan_recall']:.1%} of them at precision "
                f"{row['plan_precision']:.1%}; as many top-title-cosine links: precision "
                f"{row['baseline_precision']:.1%}. Candidate precision@{row['k']}: "
                f"{row['candidate_precision_at_k']:.1%} vs {row['baseline_precision_at_k']:.1%}."
            )
        else:
            print(
                f"{site}: nothing to backtest: no in-content links are known (register an All Inlinks export)"
            )
    return code


# what a decisions file changes, re-made after its import: the ranker (only once the decisions add up:
# refit_above), the candidates, the plan and what is published of it; the backtest stands until then
REPLAN_STEPS = ["link_ranker", "link_candidates", "link_plan", "marts", "analyst_snapshot",
                "spreadsheet_exports", "html_report", "published_files", "link_backtest",
                "published_measurement"]  # fmt: skip
# ... while the kept ranker still fits the site with the new decisions: nothing is fitted or scored anew and
# the backtest's measurement stands, so the plan and what is published of it are all that change
PLAN_STEPS = [
    "link_plan",
    "marts",
    "analyst_snapshot",
    "spreadsheet_exports",
    "html_report",
    "published_files",
]


def candidates_current(instance, site: str) -> bool:
    """Whether the site's candidates were built after everything they read (the relevance tables but the
    editors' decisions, and the ranker), by the order of their materialisations: a plan made from them now
    is the plan a whole re-plan would make (a step run alone from the UI, `pages` say, leaves them behind)."""
    from dagster import AssetRecordsFilter

    from interlink_pipeline.core.relevance.site_inputs import RELEVANCE_TABLES
    from interlink_pipeline.defs.tables import table_key

    def last(table: str) -> int | None:
        found = instance.fetch_materializations(
            AssetRecordsFilter(table_key(table), asset_partitions=[site]), limit=1
        ).records
        return found[0].storage_id if found else None

    built = last("ml.link_candidates")
    read = [last(t) for t in (*RELEVANCE_TABLES, "ml.link_ranker_runs") if t != "graph.link_decisions"]
    return built is not None and all(r is None or r < built for r in read)


def replan_steps(instance, site: str) -> tuple[list[str], str]:
    """The steps that plan again after an import of decisions, and why: PLAN_STEPS while the site's kept
    ranker still fits it with them (the question link_ranker asks, with the run's own settings) and its
    candidates are current, else REPLAN_STEPS."""
    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.core.relevance.kept_ranker import kept_ranker_fits
    from interlink_pipeline.defs.ml.embeddings import default_embedder
    from interlink_pipeline.defs.relevance.ranker import CandidateSettings, LinkRankerConfig

    request = LinkRankerConfig().request(CandidateSettings())  # the settings a re-plan's run has
    try:
        warehouse = warehouse_resource()
        model_id = default_embedder().for_site(warehouse.path, site).identity().model_id
        fits, why = kept_ranker_fits(warehouse, site, model_id, request)
    except InputError as error:  # the run's own step says it again, where the decisions already stand
        said = str(error).rstrip(".")
        return REPLAN_STEPS, (
            f"whether the kept ranker still fits could not be asked ({said}): fitting it, scoring and "
            "planning again"
        )
    if not fits:
        return REPLAN_STEPS, f"the ranker learns from them ({why}): fitting it, scoring and planning again"
    if not candidates_current(instance, site):
        return REPLAN_STEPS, (
            "the candidates are not on record as built after the pages, links and ranker they read: "
            "scoring them again"
        )
    return PLAN_STEPS, f"the ranker is kept ({why}): planning again with its scores"


def _plan_again(instance, site: str, not_now: bool) -> int:
    """The plan made again with the decisions just recorded (replan_steps), unless `not_now`."""
    if not_now:
        print(f"the site's next run plans with them: interlink materialize --site {site}")
        return 0
    steps, why = replan_steps(instance, site)
    print(why)
    code = execute(instance, site, steps)
    if code != 0:
        print(f"the decisions stand; plan again with: interlink materialize --site {site}")
    return code


def decisions(args: argparse.Namespace) -> int:
    """Check an editor's decisions file against the site's pages, keep it in the site's decisions/ folder
    and run link_decisions for the site, then plan again (replan_steps; not with --no-plan), all while the
    site is held: a file refused, or an import refused because the site is running, leaves nothing behind;
    the same content again changes nothing."""
    from datetime import UTC, datetime

    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.core.graph.decision_files import read_decisions
    from interlink_pipeline.core.graph.decisions import decision_rows
    from interlink_pipeline.core.ingest.inbox import decision_files, default_inbox, place_decisions
    from interlink_pipeline.core.ingest.tabular_files import file_digest
    from interlink_pipeline.core.publish.exports import XLSX_MAX_CELL_CHARS
    from interlink_pipeline.defs.ingest.inbox_sensor import decisions_run_key

    site = registered(args.site)
    with locked_site(site) as instance:
        pages = warehouse_resource().read_site("staging.pages", site, ["page_id"])["page_id"]
        if pages.is_empty():
            raise InputError(
                f"{site} has no pages yet: materialise it first (interlink materialize --site {site})."
            )
        now = datetime.now(UTC).replace(tzinfo=None)
        rows = decision_rows(site, read_decisions(args.file, site), pages, args.file.name, now)
        digest = file_digest(args.file)
        same = [path for path in decision_files(default_inbox(), site).files if file_digest(path) == digest]
        if same:
            print(f"{args.file.name}: already imported for {site} (as {same[0].name}); nothing changed.")
            return 0
        placed = place_decisions(default_inbox(), site, args.file)
        key, code = decisions_run_key(default_inbox(), site), 1
        try:
            code = execute(instance, site, ["link_decisions"], run_key=key)
        finally:
            if code != 0:  # failed, or interrupted: the file is not kept, so no later run reads it
                placed.unlink(missing_ok=True)
        if code != 0:
            return code
        said = rows["decision"].value_counts()
        counts = dict(zip(said["decision"], said["count"], strict=True))
        print(
            f"{args.file.name}: {counts.get('accept', 0):,} accepted and {counts.get('reject', 0):,} "
            f"rejected links imported for {site} (kept as {placed}); the plan keeps every accepted link "
            "(past a page's link budget if need be) and leaves the rejected ones out, and its ranker learns "
            "from both"
        )
        if (code := _plan_again(instance, site, args.no_plan)) != 0:
            return code
    long_notes = rows.filter(rows["note"].str.len_chars() > XLSX_MAX_CELL_CHARS)["row_number"]
    if long_notes.len():
        print(
            f"warning: {args.file.name}: {long_notes.len():,} note(s) are longer than a workbook cell holds "
            f"({XLSX_MAX_CELL_CHARS:,} characters; rows {', '.join(map(str, long_notes.head(5)))}): kept "
            "whole in the warehouse and the CSV files, cut in interlink_plan.xlsx.",
            file=sys.stderr,
        )
    return 0


def generate(args: argparse.Namespace) -> int:
    from interlink_pipeline.core.urls import normalize_host
    from interlink_pipeline.sample import generate_site, write_site

    _check_generation(args.out, args.pages, with_links=not args.no_links, overwrite=args.overwrite)
    started = time.monotonic()
    host = {"host": normalize_host(args.host)} if args.host else {}
    site = generate_site(args.pages, seed=args.seed, with_links=not args.no_links, **host)
    paths = write_site(site, args.out)
    print(f"generated {site.host}: {site.crawl.height:,} crawl rows in {time.monotonic() - started:.1f}s")
    for kind, path in paths.items():
        print(f"  {kind:<6} {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


def _check_generation(out: Path, pages: int, *, with_links: bool, overwrite: bool) -> None:
    """Refuse, before anything is generated, a site this machine's memory cannot hold, an --out that is a
    file or cannot be written, and one holding exports the site would overwrite (unless `overwrite`)."""
    import tempfile

    import psutil

    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.core.files import file_problem
    from interlink_pipeline.sample.site import GENERATION_BASE_BYTES, GENERATION_BYTES_PER_PAGE, SITE_FILES

    needed = GENERATION_BASE_BYTES + pages * GENERATION_BYTES_PER_PAGE
    available = psutil.virtual_memory().available
    if needed > available:
        most = (available - GENERATION_BASE_BYTES) // GENERATION_BYTES_PER_PAGE
        raise InputError(
            f"--pages {pages:,}: generating that site takes about {needed / 2**30:,.1f} GiB of memory and "
            f"{available / 2**30:,.1f} GiB is available: generate at most about {max(most, 0):,} pages here."
        )
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; name a folder for the exports (made if missing).")
    names = [name for kind, name in SITE_FILES.items() if with_links or kind != "links"]
    held = [name for name in names if (out / name).exists()]
    if held and not overwrite:
        raise InputError(
            f"--out {out} already holds {', '.join(held)}: name a new or empty folder, or pass --overwrite "
            "to replace them."
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise InputError(f"--out {out} cannot be written: {file_problem(exc)}.") from None
