"""What each `interlink` command does."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from interlink_pipeline.cli.dead_runs import release_dead_runs
from interlink_pipeline.cli.run_config import run_config
from interlink_pipeline.cli.runs import (
    add_site,
    dagster_instance,
    execute,
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
    from interlink_pipeline.cli.site_activity import SENSOR_GRACE_S, sensor_daemon_alive, sensor_run
    from interlink_pipeline.cli.where import ui_address
    from interlink_pipeline.core.ingest.inbox import default_inbox
    from interlink_pipeline.defs.ingest.inbox_sensor import inbox_run_key, inbox_scan_seconds

    instance, key = dagster_instance(), inbox_run_key(default_inbox(), site)
    run = None
    if key and sensor_daemon_alive(instance):
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


def _freshness(site: str):
    """The site's published plan against the crawl registered now (core/publish/freshness.py)."""
    from interlink_pipeline.core.ingest.inbox import default_inbox
    from interlink_pipeline.core.publish.freshness import site_freshness
    from interlink_pipeline.core.publish.publication import site_folder
    from interlink_pipeline.core.warehouse.database import default_warehouse

    return site_freshness(site_folder(default_warehouse(), site), default_inbox(), site)


def materialize(args: argparse.Namespace) -> int:
    config, site = run_config(args), registered(args.site)
    if args.wait and _waited_for_a_run_of_it(site) and not config:
        return 0
    return run_site(site, run_config=config)


def _waited_for_a_run_of_it(site: str) -> bool:
    """Wait for the site's run in progress, if any; whether the run waited for materialised the exports
    registered now, so that nothing is left to run."""
    from dagster import DagsterRunStatus

    from interlink_pipeline.cli.runs import site_held
    from interlink_pipeline.cli.site_activity import wait_for_site
    from interlink_pipeline.core.ingest.inbox import default_inbox
    from interlink_pipeline.defs.ingest.inbox_sensor import RUN_KEY_TAG, inbox_run_key

    instance = dagster_instance()
    waited = wait_for_site(instance, site, lambda: site_held(instance, site), print)
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
    from interlink_pipeline.core.warehouse.database import default_warehouse
    from interlink_pipeline.core.warehouse.store import query

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


def _plan_again(instance, site: str, not_now: bool) -> int:
    """The plan made again with the decisions just recorded (REPLAN_STEPS), unless `not_now`."""
    if not_now:
        print(f"the site's next run plans with them: interlink materialize --site {site}")
        return 0
    code = execute(instance, site, REPLAN_STEPS)
    if code != 0:
        print(f"the decisions stand; plan again with: interlink materialize --site {site}")
    return code


def decisions(args: argparse.Namespace) -> int:
    """Check an editor's decisions file against the site's pages, keep it in the site's decisions/ folder
    and run link_decisions for the site, then plan again (REPLAN_STEPS; not with --no-plan), all while the
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


# the warehouse's schemas as the pipeline fills them, for listings
_LAYERS = {
    schema: order for order, schema in enumerate(("raw", "staging", "serp", "ml", "graph", "marts", "ops"))
}


def sites(args: argparse.Namespace) -> int:
    from interlink_pipeline.core.urls import display_host
    from interlink_pipeline.core.warehouse.database import connect, default_warehouse, exists
    from interlink_pipeline.defs.partitions import site_partitions

    sites = dagster_instance().get_dynamic_partitions(site_partitions.name)
    counts: dict[tuple[str, str], int] = {}
    per_site: list[str] = []
    if exists(default_warehouse()):
        with connect(default_warehouse(), read_only=True) as con:
            # the tables the file holds with a site column, the marts' too (not the dbt views over them):
            # read off its catalogue, so that listing needs no table contract loaded
            per_site = [
                f"{schema}.{table}"
                for schema, table in con.execute(
                    "SELECT schema_name, table_name FROM duckdb_columns() JOIN duckdb_tables() "
                    "USING (database_name, schema_name, table_name) WHERE column_name = 'site' "
                    "AND database_name = current_database() ORDER BY ALL"
                ).fetchall()
            ]
            per_site.sort(key=lambda table: _LAYERS.get(table.split(".")[0], len(_LAYERS)))
            for table in per_site:
                rows = con.execute(f"SELECT site, count(*) FROM {table} GROUP BY site").fetchall()
                counts.update({(site, table): n for site, n in rows})
    for site in sites:
        tables = ", ".join(f"{t}={counts[(site, t)]:,}" for t in per_site if (site, t) in counts)
        print(f"{display_host(site)}: {tables or 'not materialised yet'}")
    if not sites:
        print("no sites registered; try: interlink register <crawl.csv>")
    return 0


def status(args: argparse.Namespace) -> int:
    """The site's last run (how it ended, when, how long), its plan's figures, whether the plan is fresh
    and where its files are; without --site, a line for each registered site."""
    from interlink_pipeline.cli.site_activity import active_run
    from interlink_pipeline.core.publish.publication import site_folder
    from interlink_pipeline.core.warehouse.database import default_warehouse, describe
    from interlink_pipeline.core.warehouse.lake import is_lake
    from interlink_pipeline.core.warehouse.snapshot import snapshot_path

    if args.site is None:
        return _every_site_status()
    site = registered(args.site)
    print(f"last run: {_last_run(site) or f'none yet (interlink materialize --site {site})'}")
    running = active_run(dagster_instance(), site)
    if running is not None:
        print(f"{'running:':<11}{running.said()} (interlink materialize --site {site} --wait waits for it)")
    warehouse = default_warehouse()
    folder = site_folder(warehouse, site)
    for line in _site_figures(site, folder):
        print(line)
    freshness = _freshness(site)
    again = "" if freshness.fresh or running else f" (interlink materialize --site {site})"
    print(f"{'freshness:':<11}{freshness.said}{again}")
    print(f"{'warehouse:':<11}{describe(warehouse)}")
    files = {"report": folder / "report.html", "workbook": folder / "interlink_plan.xlsx"}
    if not is_lake(warehouse):  # analysts read a lake itself
        files = {"snapshot": snapshot_path(warehouse), **files}
    for name, path in files.items():
        print(f"{name + ':':<11}{path.absolute()}{'' if path.exists() else ' (not written yet)'}")
    return 0


def _last_run(site: str) -> str | None:
    """The site's last run: its id, how it ended, when and how long it took."""
    from datetime import UTC, datetime

    from interlink_pipeline.defs.publish.site_runs import site_runs

    instance = dagster_instance()
    release_dead_runs(instance, site)  # a killed run shows as failed, not as running for ever
    records = site_runs(instance, site)
    if not records:
        return None
    record, run = records[0], records[0].dagster_run
    began = datetime.fromtimestamp(record.start_time or record.create_timestamp.timestamp(), UTC)
    took = f", {record.end_time - record.start_time:.0f}s" if record.end_time and record.start_time else ""
    return f"{run.run_id} {run.status.value} ({began:%Y-%m-%d %H:%M} UTC{took})"


def _every_site_status() -> int:
    """A line per registered site: its last run, its published plan (links, within 3 clicks before and
    after, the backtest's precision) and whether the plan is fresh."""
    from interlink_pipeline.core.publish.publication import read_manifest, site_folder
    from interlink_pipeline.core.warehouse.database import default_warehouse
    from interlink_pipeline.defs.partitions import site_partitions

    sites = sorted(dagster_instance().get_dynamic_partitions(site_partitions.name))
    if not sites:
        print("no sites registered; try: interlink register <crawl.csv>")
    for site in sites:
        last = _last_run(site)
        run = f"last run {last.split(' ', 1)[1]}" if last else "no run yet"  # its id: `status --site`
        published = read_manifest(site_folder(default_warehouse(), site))
        if not published or not published.get("site_metrics"):
            print(f"{site}: {run}; no plan published")
            continue
        rows = {row["scenario"]: row for row in published["site_metrics"]}
        within = f"{rows['after']['share_depth_le_3']:.0%} within 3 clicks"
        if "before" in rows:
            within = f"{rows['before']['share_depth_le_3']:.0%} -> {within}"
        plan = f"{rows['after']['planned_links']:,} links planned, {within}"
        if published.get("backtest"):
            plan += f", precision {published['backtest']['plan_precision']:.1%}"
        print(f"{site}: {run}; {plan}; {_freshness(site).said}")
    return 0


def _site_figures(site: str, folder: Path) -> list[str]:
    """The published plan's figures (before/after, the last backtest) and which run and crawl they are
    of, as lines; a newer plan in the warehouse that no run published is said (a newer crawl registered:
    the freshness line). None before the first plan."""
    import duckdb

    from interlink_pipeline.core.graph.plan_metrics import LINKS_NOTES
    from interlink_pipeline.core.publish.publication import read_manifest
    from interlink_pipeline.core.publish.warehouse_reads import published_figures
    from interlink_pipeline.core.warehouse.database import WarehouseHeld, default_warehouse, exists

    warehouse = default_warehouse()
    published, current, held = read_manifest(folder), None, None
    if exists(warehouse):
        try:  # once: a run writing the warehouse holds it, and status never waits on a run
            current = published_figures(warehouse, site, lock_timeout_s=0, read_only=True)
        except duckdb.CatalogException:  # no plan was ever made in this warehouse
            current = None
        except WarehouseHeld as exc:
            held = exc.holder
    if current is not None and not current["site_metrics"]:
        current = None
    shown = published or current
    busy = (
        [f"note: {held} is writing the warehouse now; these figures are the published files'"] if held else []
    )
    if shown is None:
        return busy
    lines = [_published_line(folder, published), *busy]
    lines += [
        f"{row['scenario']:<7}{row['pages']:,} pages, {row['links']:,} links "
        f"({row['planned_links']:,} planned), {row['orphan_pages']:,} orphans, max depth {row['max_depth']}, "
        f"{row['share_depth_le_3']:.1%} within 3 clicks"
        for row in shown["site_metrics"]
    ]
    known = shown["site_metrics"][0].get("links_known")
    if known in LINKS_NOTES:
        lines.append(f"note: {LINKS_NOTES[known]}")
    if published and current and current["plan_computed_at"] != published["plan_computed_at"]:
        lines.append(
            f"note: the warehouse holds a newer plan (made {current['plan_computed_at']}, crawl "
            f"{current['crawl_id']}) that no run published: its run failed after planning, or is still "
            "running. The files and figures here are the published plan's."
        )
    if published:
        lines += _snapshot_note(warehouse, site, published)
    if left := shown.get("left_for_editor"):
        problems = ", ".join(f"{n:,} {problem}" for problem, n in left.items())
        lines.append(
            f"{'editor:':<11}{sum(left.values()):,} pages left for an editor ({problems}): the workbook's "
            "for_an_editor sheet says why"
        )
    # the last backtest measured, whichever plan is published (`interlink backtest` publishes nothing)
    if (row := (current or shown)["backtest"]) is not None:
        lines.append(_backtest_line(row, shown["crawl_id"]))
    return lines + _decision_lines(shown.get("decisions"))


def _published_line(folder: Path, published: dict | None) -> str:
    """Which run's files the site's folder shows, or what of a user's stands there instead."""
    from interlink_pipeline.core.publish.publication import foreign_folder

    if (foreign := foreign_folder(folder)) is not None:
        return f"published: nothing here: {foreign}, which no publication replaces (move it aside)"
    if published:
        return f"published: run {published['run_id']} at {published['published_at']}"
    return "published: nothing yet (its run has not finished): the warehouse's figures"


def _snapshot_note(warehouse, site: str, published: dict) -> list[str]:
    """A line when the analysts' snapshot holds another plan of the site than the published files (a run
    stopped between replacing the one and switching the others in)."""
    from interlink_pipeline.core.publish.warehouse_reads import plan_made_at
    from interlink_pipeline.core.warehouse import lake
    from interlink_pipeline.core.warehouse.database import LOCK_TIMEOUT_S
    from interlink_pipeline.core.warehouse.snapshot import snapshot_path

    snapshot = snapshot_path(warehouse)
    if lake.is_lake(warehouse) or not snapshot.is_file():
        return []
    held = plan_made_at(snapshot, site, lock_timeout_s=LOCK_TIMEOUT_S)
    if held is None or held == published["plan_computed_at"]:
        return []
    return [
        f"note: the analysts' snapshot ({snapshot}) holds the plan made {held}, not the published one: its "
        f"run stopped between replacing the snapshot and publishing the files; the next run of {site} "
        "publishes both together."
    ]


def _decision_lines(figures: dict | None) -> list[str]:
    """Editors' decisions as the plan shown stands: accepted (and what became of them), rejected; a note
    naming the accepted links the plan could not keep, and why."""
    from interlink_pipeline.core.graph.decided_links import NOT_KEPT

    if not figures or not figures["accepted"] + figures["rejected"]:
        return []
    outcomes = figures["accepted_outcomes"]
    not_kept = {why.removeprefix(NOT_KEPT): n for why, n in outcomes.items() if why.startswith(NOT_KEPT)}
    kept = ", ".join(f"{n:,} {why}" for why, n in outcomes.items() if not why.startswith(NOT_KEPT))
    lines = [
        f"{'decisions:':<11}{figures['accepted']:,} links accepted ({kept or 'none kept'}), "
        f"{figures['rejected']:,} rejected (never planned again)"
    ]
    if figures.get("new_since_review") is not None:
        waiting = figures["waiting_for_review"]
        lines.append(
            f"{'review:':<11}{figures['new_since_review']:,} links new since your last review (the "
            "new_since_review sheet and CSV, each with why)"
            + (f"; {waiting:,} more wait behind the pages you reviewed" if waiting else "")
        )
    if not_kept:
        lines.append(
            f"note: {sum(not_kept.values()):,} accepted links are not kept: "
            + "; ".join(f"{n:,} {why}" for why, n in not_kept.items())
            + " (graph.link_plan_changes lists them)"
        )
    return lines


def _backtest_line(row: dict, plan_crawl: str) -> str:
    """The last backtest's figures, and which crawl and run they are of."""
    which = f"crawl {row['crawl_id']}"
    if row["measured_in_run"] != row["run_id"]:
        which += f", measured in run {row['measured_in_run']} and standing: the crawl changed little"
    if row["crawl_id"] != plan_crawl:
        which = f"an earlier crawl than the plan's: {which}"
    return (
        f"backtest: plan precision {row['plan_precision']:.1%} against {row['baseline_precision']:.1%} "
        f"for as many top-title-cosine links ({row['hidden_links']:,} links hidden, seed {row['seed']}; "
        f"{which})"
    )


def sql(args: argparse.Namespace) -> int:
    """A DuckDB shell on the analysts' snapshot, or read-only on a lake, in DuckDB's safe mode: it reads the
    tables and writes nothing anywhere; the pipeline's runs never wait for it, nor it for them. With a
    query, the query's result and nothing else (`--csv "SELECT …" > file.csv`)."""
    import subprocess

    from interlink_pipeline.core.warehouse.analyst_shell import shell_command
    from interlink_pipeline.core.warehouse.database import default_warehouse
    from interlink_pipeline.core.warehouse.snapshot import snapshot_path

    warehouse = default_warehouse()
    return subprocess.call(shell_command(warehouse, snapshot_path(warehouse), args.query, args.output))
