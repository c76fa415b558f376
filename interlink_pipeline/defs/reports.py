"""reports: what people outside the warehouse open — spreadsheets of the plan, and the HTML report."""

import os
import time
from pathlib import Path

import polars as pl
from dagster import AssetExecutionContext, MaterializeResult, MetadataValue

from interlink_pipeline.core.publish import exports, report
from interlink_pipeline.core.publish.previews import markdown_table
from interlink_pipeline.core.publish.warehouse_reads import report_data, spreadsheet_tables
from interlink_pipeline.core.warehouse.database import files_folder
from interlink_pipeline.defs.marts import after_marts
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.tables import readable, user_errors

GROUP = "reports"
EXPORTS_ENV = "INTERLINK_EXPORTS_DIR"


def site_folder(warehouse: Warehouse, site: str) -> Path:
    """$INTERLINK_EXPORTS_DIR/<site>, else exports/<site> in the warehouse's files folder
    (data/exports/<site>)."""
    root = os.environ.get(EXPORTS_ENV) or files_folder(warehouse.path) / "exports"
    return Path(root) / site


@after_marts(
    GROUP,
    {"csv", "excel"},
    "The plan, the similar pages, the topics and the plan's changes since the last run as CSV and one XLSX "
    "workbook per site "
    "(header row, fitted columns, formula injection neutralised); a file whose rows did not change since "
    "the last run is left as it was.",
)
def spreadsheet_exports(context: AssetExecutionContext, warehouse: Warehouse) -> MaterializeResult:
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        tables = spreadsheet_tables(warehouse.path, site, lock_timeout_s=warehouse.lock_timeout_s)
    run = exports.write_exports(site_folder(warehouse, site), tables, "interlink_plan.xlsx")
    csvs = {name: path for name, path in run.files.items() if name != "workbook"}
    return MaterializeResult(
        metadata=readable(
            {
                "workbook": MetadataValue.path(str(run.files["workbook"].resolve())),
                **{f"{name}_csv": MetadataValue.path(str(path.resolve())) for name, path in csvs.items()},
                "rows": MetadataValue.json({name: frame.height for name, frame in tables.items()}),
                "written": MetadataValue.json(run.written),
                "unchanged": MetadataValue.json(run.unchanged),
                "sheets": MetadataValue.json(run.sheets) if run.sheets else "the workbook was unchanged",
                "preview": MetadataValue.md(markdown_table(tables["link_plan"], 10)),
                "seconds": time.monotonic() - started,
            }
        )
    )


@after_marts(
    GROUP,
    {"html", "plotly"},
    "An interactive HTML report per site (opens from the file, no network): topic map, depth "
    "and orphans before/after, hubs → pages, links by reason with their probability, the backtest "
    "against the same-budget baseline, top opportunities.",
    tables=("graph.backtest_runs",),
)
def html_report(context: AssetExecutionContext, warehouse: Warehouse) -> MaterializeResult:
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        data = report_data(warehouse.path, site, context.run.run_id, lock_timeout_s=warehouse.lock_timeout_s)
    path = report.render(data, site_folder(warehouse, site) / "report.html")
    return MaterializeResult(
        metadata=readable(
            {
                # a path to copy: browsers open no file:// link from the UI's http page
                "path": MetadataValue.path(str(path.resolve())),
                "size_kb": round(path.stat().st_size / 1024),
                "charts": MetadataValue.md(
                    markdown_table(
                        pl.DataFrame(
                            {"chart": ["topic map", "depth", "orphans", "hubs → pages", "top links"]}
                        ),
                        10,
                    )
                ),
                "seconds": time.monotonic() - started,
            }
        )
    )
