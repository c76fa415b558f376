"""The commands that only read — `sites`, `status`, `sql` — answering at once whatever runs: the registered
sites and their runs from the Dagster home's records (runs.home_records), the plan's figures from its
published files and plain queries, never waiting on a run that writes the warehouse."""

from __future__ import annotations

import argparse
from pathlib import Path

from interlink_pipeline.cli.dead_runs import IN_PROGRESS, release_dead_runs
from interlink_pipeline.cli.runs import dagster_instance, home_records, registered
from interlink_pipeline.cli.site_locks import site_held


def _freshness(site: str):
    """The site's published plan against the crawl registered now (core/publish/freshness.py)."""
    from interlink_pipeline.core.ingest.inbox import default_inbox
    from interlink_pipeline.core.publish.freshness import site_freshness
    from interlink_pipeline.core.publish.publication import site_folder
    from interlink_pipeline.core.warehouse.database import default_warehouse

    return site_freshness(site_folder(default_warehouse(), site), default_inbox(), site)


# the warehouse's schemas as the pipeline fills them, for listings
_LAYERS = {
    schema: order for order, schema in enumerate(("raw", "staging", "serp", "ml", "graph", "marts", "ops"))
}


def sites(args: argparse.Namespace) -> int:
    from interlink_pipeline.core.urls import display_host
    from interlink_pipeline.core.warehouse.database import WarehouseHeld, default_warehouse, exists
    from interlink_pipeline.core.warehouse.snapshot import snapshot_path

    sites, warehouse = home_records().sites(), default_warehouse()
    counts: dict[tuple[str, str], int] = {}
    per_site: list[str] = []
    if exists(warehouse):
        try:  # never waiting on a run: while one writes the warehouse, the snapshot of the last one
            per_site, counts = _row_counts(warehouse)
        except WarehouseHeld as exc:
            snapshot = snapshot_path(warehouse)
            if snapshot.exists():
                per_site, counts = _row_counts(snapshot)
            counted = (
                "these counts are the last finished run's (the analysts' snapshot)" if counts else "no counts"
            )
            print(f"note: {exc.holder} is writing the warehouse now; {counted}")
    for site in sites:
        tables = ", ".join(f"{t}={counts[(site, t)]:,}" for t in per_site if (site, t) in counts)
        print(f"{display_host(site)}: {tables or 'not materialised yet'}")
    if not sites:
        print("no sites registered; try: interlink register <crawl.csv>")
    return 0


def _row_counts(location) -> tuple[list[str], dict[tuple[str, str], int]]:
    """The tables with a site column, their layers first, and each site's rows in each."""
    from interlink_pipeline.core.warehouse.database import connect

    counts: dict[tuple[str, str], int] = {}
    with connect(location, read_only=True, lock_timeout_s=0) as con:
        # the tables the file holds with a site column, the marts' too (not the dbt views over them): read
        # off its catalogue, so that listing needs no table contract loaded
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
    return per_site, counts


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
    site, home = registered(args.site), home_records()
    print(f"last run: {_last_run(home, site) or f'none yet (interlink materialize --site {site})'}")
    running = active_run(home, site)
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


def _last_run(home, site: str) -> str | None:
    """The site's last run: its id, how it ended, when and how long it took. A run at work whose process
    may be gone is judged first (a killed run shows as failed, not as running for ever)."""
    from datetime import UTC, datetime

    if _may_have_died(home, site):
        release_dead_runs(dagster_instance(), site)
    runs = home.runs(site, limit=1)
    if not runs:
        return None
    run = runs[0]
    began = datetime.fromtimestamp(run.started or run.created, UTC)
    took = f", {run.ended - run.started:.0f}s" if run.ended and run.started else ""
    resume = (
        f"; interlink materialize --site {site} --resume runs what it left"
        if run.status in ("FAILURE", "CANCELED")
        else ""
    )
    return f"{run.run_id} {run.status} ({began:%Y-%m-%d %H:%M} UTC{took}{resume})"


def _may_have_died(home, site: str) -> bool:
    """Whether a run of the site at work may have lost its process, so that it must be judged
    (release_dead_runs): an interlink command's run whose site lock no process holds (the kernel frees it
    with its holder), or a run of the UI or the daemon while no daemon monitors runs. Otherwise a command
    that only reads answers from the home's records, without Dagster."""
    from interlink_pipeline.cli.site_activity import DAEMON_BEAT_S
    from interlink_pipeline.defs.site_runs import TRIGGER_TAG

    for run in home.runs(site, statuses=IN_PROGRESS):
        if run.tags.get(TRIGGER_TAG) == "cli" and not site_held(site):
            return True
        if run.tags.get(TRIGGER_TAG) != "cli" and not home.beat_within("MONITORING", DAEMON_BEAT_S):
            return True
    return False


def _every_site_status() -> int:
    """A line per registered site: its last run, its published plan (links, within 3 clicks before and
    after, the backtest's precision) and whether the plan is fresh."""
    from interlink_pipeline.core.publish.publication import read_manifest, site_folder
    from interlink_pipeline.core.warehouse.database import default_warehouse

    home = home_records()
    sites = sorted(home.sites())
    if not sites:
        print("no sites registered; try: interlink register <crawl.csv>")
    for site in sites:
        last = _last_run(home, site)
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
    from interlink_pipeline.core.publish.publication import read_manifest
    from interlink_pipeline.core.warehouse.database import default_warehouse
    from interlink_pipeline.core.warehouse.vocabularies import LINKS_NOTES

    warehouse = default_warehouse()
    published = read_manifest(folder)
    current, held = _warehouse_figures(warehouse, site, whole=not published)
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


def _warehouse_figures(warehouse, site: str, whole: bool) -> tuple[dict | None, str | None]:
    """The plan's figures the warehouse holds (`whole`: all that a run publishes; else what it measured,
    the published files holding the rest) and who holds the warehouse, if a run writes it: read once,
    never waiting on it."""
    import duckdb

    from interlink_pipeline.core.publish.plan_figures import measured_plan
    from interlink_pipeline.core.warehouse.database import WarehouseHeld, exists

    if not exists(warehouse):
        return None, None
    if whole:
        from interlink_pipeline.core.publish.warehouse_reads import published_figures as figures
    else:
        figures = measured_plan
    try:
        current = figures(warehouse, site, lock_timeout_s=0, read_only=True)
    except duckdb.CatalogException:  # no plan was ever made in this warehouse
        return None, None
    except WarehouseHeld as exc:
        return None, exc.holder
    return (current if current["site_metrics"] else None), None


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
    from interlink_pipeline.core.publish.plan_figures import plan_made_at
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
    from interlink_pipeline.core.warehouse.vocabularies import NOT_KEPT

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
