"""reports: what people outside the warehouse open — spreadsheets of the plan, and the HTML report."""

import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import polars as pl
from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset

from interlink_pipeline.core.environment import environment
from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.publish import exports, report
from interlink_pipeline.core.publish.publication import publish, site_folder, staged_folder
from interlink_pipeline.core.publish.warehouse_reads import published_figures, report_data, spreadsheet_tables
from interlink_pipeline.core.warehouse import lake
from interlink_pipeline.core.warehouse.snapshot import publish_snapshot, staged_snapshot
from interlink_pipeline.defs.groups import PUBLISH
from interlink_pipeline.defs.partitions import site_key, site_partitions
from interlink_pipeline.defs.previews import table_preview
from interlink_pipeline.defs.publish.marts import after_marts, analyst_snapshot
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.tables import WRITER_POOL, table_key
from interlink_pipeline.defs.writes import readable, user_errors


@after_marts(
    {"csv", "excel"},
    "The plan, the similar pages, the topics and the plan's changes since the last run as CSV and one XLSX "
    "workbook per site "
    "(header row, fitted columns, formula injection neutralised; a cell past a workbook's 32,767 "
    "characters cut there, whole in the CSV); a file whose rows did not change since the last run is left "
    "as it was. The plan's rows carry their link id and the standing decision and note, for an editor to "
    "fill in and import. Written for the run's last step to publish.",
    tables=("graph.link_decisions",),
)
def spreadsheet_exports(context: AssetExecutionContext, warehouse: Warehouse) -> MaterializeResult:
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        tables = spreadsheet_tables(warehouse.path, site, lock_timeout_s=warehouse.lock_timeout_s)
        folder = site_folder(warehouse.path, site)
        staged = staged_folder(folder, context.run.run_id)
        run = exports.write_exports(folder, tables, "interlink_plan.xlsx", into=staged)
    csvs = {name: path for name, path in run.files.items() if name != "workbook"}
    warning = (
        {
            "warning": f"{run.cut_cells:,} text cells longer than a workbook cell holds (32,767 characters) "
            "were cut in interlink_plan.xlsx; the CSV files keep them whole."
        }
        if run.cut_cells
        else {}
    )
    if warning:
        context.log.warning(f"{site}: {warning['warning']}")
    return MaterializeResult(
        metadata=readable(
            {
                **warning,
                "workbook": MetadataValue.path(str(run.files["workbook"].absolute())),
                **{f"{name}_csv": MetadataValue.path(str(path.absolute())) for name, path in csvs.items()},
                "rows": MetadataValue.json({name: frame.height for name, frame in tables.items()}),
                "written": MetadataValue.json(run.written),
                "unchanged": MetadataValue.json(run.unchanged),
                "sheets": MetadataValue.json(run.sheets) if run.sheets else "the workbook was unchanged",
                "preview": table_preview(tables["link_plan"], 10),
                "seconds": time.monotonic() - started,
            }
        )
    )


@after_marts(
    {"html"},
    "An interactive HTML report per site (opens from the file, no network): topic map, depth "
    "and orphans before/after, hubs → pages, links by reason with their probability, the backtest "
    "against the same-budget baseline, top opportunities. Made before the run's backtest, with the last "
    "measurement (or 'being measured'); published_measurement replaces it once the backtest is done.",
    tables=("graph.live_links",),
)
def html_report(context: AssetExecutionContext, warehouse: Warehouse) -> MaterializeResult:
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        folder = site_folder(warehouse.path, site)
        staged = _rendered(context, warehouse, staged_folder(folder, context.run.run_id))
    return _report_result(site, folder / staged.name, staged, started)


def _rendered(context: AssetExecutionContext, warehouse: Warehouse, release: Path) -> Path:
    """The site's report with the last backtest measured, written into `release` to be published."""
    site = site_key(context)
    data = report_data(warehouse.path, site, context.run.run_id, lock_timeout_s=warehouse.lock_timeout_s)
    return report.render(data, release / "report.html")


def report_link(site: str, report: Path) -> dict:
    """How to open the site's report from the UI: a link where $INTERLINK_EXPORTS_URL says where the exports
    folder is served, else its path to paste (browsers open no file:// link from the UI's http page)."""
    served = environment().exports_url
    if served:
        return {"report_url": MetadataValue.url(f"{served.rstrip('/')}/{site}/{report.name}")}
    return {"report": MetadataValue.path(str(report.absolute()))}


def _report_result(site: str, path: Path, staged: Path, started: float) -> MaterializeResult:
    """The report's metadata: where it is published (`path`), written as `staged`."""
    return MaterializeResult(
        metadata=readable(
            {
                **report_link(site, path),
                "size_kb": round(staged.stat().st_size / 1024),
                "charts": table_preview(
                    pl.DataFrame({"chart": ["topic map", "depth", "orphans", "hubs → pages", "top links"]}),
                    10,
                ),
                "seconds": time.monotonic() - started,
            }
        )
    )


def _manifest(warehouse: Warehouse, site: str) -> tuple[dict, dict]:
    """The plan's figures, and published.json's content with them."""
    figures = published_figures(warehouse.path, site, lock_timeout_s=warehouse.lock_timeout_s)
    return figures, {"site": site, "published_at": datetime.now(UTC).isoformat(timespec="seconds"), **figures}


def _snapshot(warehouse: Warehouse, release: str) -> tuple[Path, Path] | None:
    """The analysts' snapshot as `release` stages it and where it is published (None: a lake has none)."""
    if lake.is_lake(warehouse.path):
        return None
    final = warehouse.analyst_snapshot().resolve()
    return staged_snapshot(final, release), final


def _running(instance, run_id: str) -> bool:
    run = instance.get_run_by_id(run_id)
    return run is not None and not run.is_finished


@asset(
    partitions_def=site_partitions,
    **PUBLISH.attributes(),
    kinds={"csv", "excel", "html"},
    pool=WRITER_POOL,
    deps=[analyst_snapshot, spreadsheet_exports, html_report],
    description="The run's report, spreadsheets and analysts' snapshot, published together as the run's "
    "last step: the site's folder is switched to the run's release (with published.json saying which run, "
    "crawl and plan it is of) in one rename. A run that fails on the way publishes none of them, so the "
    "files people open are always of one plan; what such a run left is removed by the next publication.",
)
def published_files(context: AssetExecutionContext, warehouse: Warehouse) -> MaterializeResult:
    started = time.monotonic()
    run_id = context.run.run_id
    snapshot = _snapshot(warehouse, run_id)
    with user_errors():
        site = site_key(context)
        folder = site_folder(warehouse.path, site)
        if not staged_folder(folder, run_id).is_dir() and not (snapshot and snapshot[0].exists()):
            raise InputError(
                f"{site}: this run wrote no files to publish; materialise published_files with "
                "html_report, spreadsheet_exports and analyst_snapshot (the published ones stay as they are)."
            )
        figures, manifest = _manifest(warehouse, site)
        published = publish(folder, run_id, manifest, snapshot, partial(_running, context.instance))
    if published.removed:
        context.log.warning(f"{site}: removed what earlier runs left: {'; '.join(published.removed)}")
    if published.switch != "link":
        context.log.warning(f"{site}: published as a {published.switch}")
    return MaterializeResult(
        metadata=readable(
            {
                **report_link(site, folder / "report.html"),
                "path": MetadataValue.path(str(folder.absolute())),
                "release": MetadataValue.path(str(staged_folder(folder, run_id).absolute())),
                "published": MetadataValue.json(published.files),
                "cleaned_up": MetadataValue.json(published.removed),
                "switched_by": published.switch,
                "crawl_id": figures["crawl_id"] or "",
                "seconds": time.monotonic() - started,
            }
        )
    )


MEASURED = "-measured"  # the release name a run's report is republished under once its backtest is done


@asset(
    partitions_def=site_partitions,
    **PUBLISH.attributes(),
    kinds={"html"},
    pool=WRITER_POOL,
    deps=[published_files, table_key("graph.backtest_runs")],
    description="The report and the analysts' snapshot again, with the backtest this run measured after "
    "publishing its plan, republished with the other published files (and published.json's figures) in "
    "one switch: the plan is out as soon as it is made, and its measurement follows.",
)
def published_measurement(context: AssetExecutionContext, warehouse: Warehouse) -> MaterializeResult:
    started = time.monotonic()
    run_id = context.run.run_id
    with user_errors():
        site = site_key(context)
        folder = site_folder(warehouse.path, site)
        staged = _rendered(context, warehouse, staged_folder(folder, run_id + MEASURED))
        snapshot = _snapshot(warehouse, run_id + MEASURED)
        if snapshot is not None:  # the analysts' copy published with the plan, and the measurement
            patching = (snapshot[1], frozenset({"graph.backtest_runs"}))
            publish_snapshot(warehouse.path, snapshot[0], warehouse.lock_timeout_s, patching)
        _figures, manifest = _manifest(warehouse, site)
        running = partial(_running, context.instance)
        publish(folder, run_id, manifest, snapshot, running, release_name=staged.parent.name)
    return _report_result(site, folder / staged.name, staged, started)
