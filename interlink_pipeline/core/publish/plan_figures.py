"""What a site's plan measured (its before/after figures and the last backtest) as a run publishes it and
`interlink status` reads it: plain queries of the warehouse, so that status answers without the table
contract or the planner's code loaded."""

from __future__ import annotations

from pathlib import Path

import duckdb

from interlink_pipeline.core.warehouse.database import connect

# every site's rows, the site's picked out in Python: a bound parameter makes DuckDB's client import
# pandas, 0.4 s of a status that should answer at once
METRICS_SQL = """
SELECT site, scenario, crawl_id, computed_at, pages, links, planned_links, orphan_pages, max_depth,
       share_depth_le_3, links_known
FROM graph.site_metrics ORDER BY site, scenario DESC
"""
LAST_BACKTEST_SQL = """
SELECT site, run_id, measured_in_run, crawl_id, seed, hidden_links, plan_precision, baseline_precision
FROM graph.backtest_runs QUALIFY row_number() OVER (PARTITION BY site ORDER BY ran_at DESC) = 1
"""
MADE_SQL = "SELECT site, max(computed_at) AS made FROM graph.site_metrics GROUP BY site"


def measured_plan(
    warehouse: str | Path, site: str, *, lock_timeout_s: float, read_only: bool = False
) -> dict:
    """The plan's crawl, when it was made, its before/after metrics and the last backtest, as JSON values."""
    with connect(warehouse, lock_timeout_s=lock_timeout_s, read_only=read_only) as con:
        metrics = [_as_json(row) for row in _records(con, METRICS_SQL, site)]
        backtest = _records(con, LAST_BACKTEST_SQL, site)
    return {
        "crawl_id": metrics[0]["crawl_id"] if metrics else None,
        "plan_computed_at": metrics[0]["computed_at"] if metrics else None,
        "site_metrics": metrics,
        "backtest": backtest[0] if backtest else None,
    }


def plan_made_at(warehouse: str | Path, site: str, *, lock_timeout_s: float) -> str | None:
    """When the plan a warehouse (or the analysts' snapshot) holds for the site was made, as published.json
    writes it; None where it holds none."""
    try:
        with connect(warehouse, lock_timeout_s=lock_timeout_s, read_only=True) as con:
            made = _records(con, MADE_SQL, site)
    except duckdb.Error:  # no plan table yet
        return None
    return _as_json(made[0])["made"] if made else None


def _records(con: duckdb.DuckDBPyConnection, sql: str, site: str) -> list[dict]:
    """The site's rows of `sql` (the column `site` left out) as dicts of plain Python values."""
    result = con.execute(sql)
    names = [column[0] for column in result.description]
    rows = (dict(zip(names, row, strict=True)) for row in result.fetchall())
    return [{k: v for k, v in row.items() if k != "site"} for row in rows if row["site"] == site]


def _as_json(row: dict) -> dict:
    return {key: value.isoformat() if hasattr(value, "isoformat") else value for key, value in row.items()}
