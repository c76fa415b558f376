"""What the report's sections are drawn from and with: the site's data (ReportData) and the templates whose
macros each section renders (every value escaped there)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape


@dataclass
class ReportData:
    """Everything the report draws of a site (warehouse_reads.report_data reads it)."""

    site: str
    pages: pl.DataFrame  # page_id, url, title, cluster (label), is_hub and the drill-down's PAGE_FIGURES
    vectors: np.ndarray  # aligned with pages
    site_metrics: pl.DataFrame  # graph.site_metrics rows (scenario before/after)
    plan: pl.DataFrame  # marts.link_opportunities rows
    backtest: pl.DataFrame  # the latest graph.backtest_runs row (empty: never backtested)
    content_links: pl.DataFrame  # the in-content links the site has: source_page_id, target_page_id
    changes: pl.DataFrame | None = None  # graph.link_plan_changes rows (None: not known)
    decisions: pl.DataFrame | None = None  # marts.decisions rows: each decided link's standing decision
    live: pl.DataFrame | None = None  # graph.live_links rows
    adoption: pl.DataFrame | None = None  # marts.adoption_by_week rows
    run_id: str = "–"  # the run that writes the report
    left_for_editor: int | None = None  # pages the plan left for an editor (None: not known)
    new_since_review: pl.DataFrame | None = None  # warehouse_reads.NEW_SQL's rows (None: not known)


def _cell(value) -> str:
    if value is None:
        return "–"
    return (
        f"{value:.3f}" if isinstance(value, float) else f"{value:,}" if isinstance(value, int) else str(value)
    )


TEMPLATES = Environment(
    loader=PackageLoader(__package__, "templates"),
    autoescape=select_autoescape(["html", "j2"]),
    undefined=StrictUndefined,  # a name the template misspells fails the report, not prints nothing
)
TEMPLATES.filters.update(cell=_cell, percent=lambda share, digits: f"{share:.{digits}%}")
# `tojson` as compact as json.dumps can (the drill-down's data is most of the file's text); it still escapes
# <, >, & and ' so that no title ends its <script> element
TEMPLATES.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "separators": (",", ":")}
SECTIONS = TEMPLATES.get_template("sections.html.j2").module  # its macros, each returning escaped HTML
CHARTS = TEMPLATES.get_template("charts.html.j2").module
