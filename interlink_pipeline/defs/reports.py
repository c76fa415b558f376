"""reports: what people outside the warehouse open — spreadsheets of the plan, and the HTML report."""

import os
import time
from pathlib import Path

import polars as pl
from dagster import AssetExecutionContext, MaterializeResult, MetadataValue

from interlink_pipeline.core.ml.page_embeddings import read_vectors
from interlink_pipeline.core.publish import exports, report
from interlink_pipeline.core.publish.previews import markdown_table
from interlink_pipeline.defs.marts import after_marts
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.tables import user_errors

GROUP = "reports"
EXPORTS_ENV = "INTERLINK_EXPORTS_DIR"

PLAN_SQL = """
SELECT source_url, source_title, target_url, target_title, anchor_text, reason, evidence, placement,
       round(probability, 4) AS probability, round(score, 4) AS score, round(similarity, 4) AS similarity,
       target_cluster, priority
FROM marts.link_opportunities WHERE site = ? ORDER BY source_url, priority, target_url
"""
PAIRS_SQL = """
SELECT s.url AS page_url, s.title AS page_title, t.url AS similar_url, t.title AS similar_title,
       p.rank, round(p.score, 4) AS score, p.relation, p.reciprocal
FROM ml.similarity_pairs p
JOIN staging.pages s ON s.site = p.site AND s.page_id = p.source_page_id
JOIN staging.pages t ON t.site = p.site AND t.page_id = p.target_page_id
WHERE p.site = ? ORDER BY s.url, p.relation DESC, p.rank
"""
CLUSTERS_SQL = """
SELECT cluster_id, label, top_terms, size, round(cohesion, 3) AS cohesion, representative_url, hubs,
       orphans_before, round(mean_depth_before, 2) AS mean_depth_before,
       round(mean_depth_after, 2) AS mean_depth_after, planned_inlinks
FROM marts.cluster_summary WHERE site = ? ORDER BY size DESC, cluster_id
"""

CHANGES_SQL = """
SELECT change, why, source_url, target_url, reason, computed_at
FROM graph.link_plan_changes WHERE site = ? AND change <> 'kept' ORDER BY change, source_url, target_url
"""


def site_folder(warehouse: Warehouse, site: str) -> Path:
    """$INTERLINK_EXPORTS_DIR/<site>, else exports/<site> beside the warehouse (data/exports/<site>)."""
    root = os.environ.get(EXPORTS_ENV) or Path(warehouse.path).parent / "exports"
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
        tables = {
            "link_plan": warehouse.query(PLAN_SQL, [site]),
            "similar_pages": warehouse.query(PAIRS_SQL, [site]),
            "topics": warehouse.query(CLUSTERS_SQL, [site]),
            "changes_since_last_run": warehouse.query(CHANGES_SQL, [site]),
        }
    run = exports.write_exports(site_folder(warehouse, site), tables, "interlink_plan.xlsx")
    csvs = {name: path for name, path in run.files.items() if name != "workbook"}
    return MaterializeResult(
        metadata={
            "workbook": MetadataValue.path(str(run.files["workbook"].resolve())),
            **{f"{name}_csv": MetadataValue.path(str(path.resolve())) for name, path in csvs.items()},
            "rows": MetadataValue.json({name: frame.height for name, frame in tables.items()}),
            "written": MetadataValue.json(run.written),
            "unchanged": MetadataValue.json(run.unchanged),
            "sheets": MetadataValue.json(run.sheets) if run.sheets else "the workbook was unchanged",
            "preview": MetadataValue.md(markdown_table(tables["link_plan"], 10)),
            "seconds": round(time.monotonic() - started, 2),
        }
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
        pages, vectors = read_vectors(warehouse.path, site, ("page_id",))
        scorecard = warehouse.query(
            "SELECT page_id, title, cluster, is_hub FROM marts.page_scorecard WHERE site = ?", [site]
        )
        data = report.ReportData(
            site=site,
            pages=pages.join(scorecard, on="page_id", how="left", maintain_order="left"),
            vectors=vectors,
            site_metrics=warehouse.query("SELECT * FROM graph.site_metrics WHERE site = ?", [site]),
            plan=warehouse.query(
                "SELECT * FROM marts.link_opportunities WHERE site = ? ORDER BY link_key", [site]
            ),
            backtest=warehouse.query(
                "SELECT * FROM graph.backtest_runs WHERE site = ? ORDER BY ran_at DESC LIMIT 1", [site]
            )
            if "graph.backtest_runs" in warehouse.tables()
            else pl.DataFrame(),
            changes=warehouse.read_site("graph.link_plan_changes", site),
        )
    path = report.render(data, site_folder(warehouse, site) / "report.html")
    return MaterializeResult(
        metadata={
            # a path to copy: browsers open no file:// link from the UI's http page
            "path": MetadataValue.path(str(path.resolve())),
            "size_kb": round(path.stat().st_size / 1024),
            "charts": MetadataValue.md(
                markdown_table(
                    pl.DataFrame({"chart": ["topic map", "depth", "orphans", "hubs → pages", "top links"]}),
                    10,
                )
            ),
            "seconds": round(time.monotonic() - started, 2),
        }
    )
