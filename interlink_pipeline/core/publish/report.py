"""The per-site HTML report: one self-contained file (ITables' library inlined, the charts drawn as SVG) that
opens with no network.

A header (site, crawl, when, the run, the settings); charts: the topic map (a 2-D projection of the page
vectors, coloured and named by cluster), click depth and orphans before and after the plan, the home page's
hubs and the pages they link on to; the plan as a table to sort, filter, search and download as CSV
(ITables, i.e. DataTables); the backtest; the changes since the last run; one page's links before and
after. The page is a Jinja template (templates/), which escapes every value it is given. Crawled text
(titles, topic labels) is shown as text: escaped by the templates, charts included, and by ITables in the
plan table (it escapes every cell).
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import numpy as np
import polars as pl

from interlink_pipeline.core.files import replaced_atomically
from interlink_pipeline.core.graph.plan_metrics import equity_moved
from interlink_pipeline.core.graph.sentences import ANCHOR_AFTER, ANCHOR_BEFORE
from interlink_pipeline.core.publish import charts
from interlink_pipeline.core.publish.page_drilldown import drilldown_data
from interlink_pipeline.core.publish.plan_table import PLAN_TABLE_ROWS, plan_in_words, plan_table
from interlink_pipeline.core.publish.report_parts import CHARTS, SECTIONS, TEMPLATES, ReportData
from interlink_pipeline.core.publish.review_sections import (
    adoption_section,
    changes_section,
    new_since_review_section,
)
from interlink_pipeline.core.relevance.confidence import probability_text
from interlink_pipeline.core.warehouse.vocabularies import IN_CONTENT, LINKS_NOTES

MAP_POINTS = 3000  # pages drawn on the topic map (a seeded sample beyond that)
LABELLED_TOPICS = 12  # the largest topics are named on the map itself; the legend names them all
PAGES_PER_HUB = 8


def topic_map(data: ReportData) -> str:
    """The pages on the two main directions of their embeddings (PCA), coloured and named by topic."""
    from sklearn.decomposition import PCA

    pages, vectors = data.pages, data.vectors
    if pages.height > MAP_POINTS:
        keep = np.sort(np.random.default_rng(0).choice(pages.height, MAP_POINTS, replace=False))
        pages, vectors = pages[keep], vectors[keep]
    xy = (
        PCA(n_components=2, random_state=0).fit_transform(vectors)
        if len(vectors) > 2
        else np.zeros((len(vectors), 2))
    )
    title = f"Topics: {pages.height:,} pages on the two main directions of their embeddings (PCA)"
    return CHARTS.topic_map("topic-map", title, charts.topic_points(pages, xy, LABELLED_TOPICS))


def depth_chart(data: ReportData) -> str:
    counts = {
        f"{row['scenario']} the plan": json.loads(row["depth_histogram"])
        for row in data.site_metrics.sort("scenario", descending=True).iter_rows(named=True)
    }
    levels = [*sorted({k for c in counts.values() for k in c if k != "unreachable"}, key=int), "unreachable"]
    bars = charts.grouped_bars(levels, {name: [c.get(k, 0) for k in levels] for name, c in counts.items()})
    return CHARTS.bars("depth-chart", "Pages by clicks from the home page", bars, "clicks")


HEALTH_MEASURES = [("orphan_pages", "orphan pages"), ("unreachable_pages", "unreachable pages")]


def health_chart(data: ReportData) -> str:
    """Orphans and unreachable pages before and after, or a sentence when there are none either side."""
    if not any(data.site_metrics[key].fill_null(0).sum() > 0 for key, _ in HEALTH_MEASURES):
        return SECTIONS.nothing_to_draw(
            "health-chart", "No orphan or unreachable page, before or after the plan."
        )
    series = {
        f"{row['scenario']} the plan": [row[key] or 0 for key, _ in HEALTH_MEASURES]
        for row in data.site_metrics.sort("scenario", descending=True).iter_rows(named=True)
    }
    bars = charts.grouped_bars([label for _, label in HEALTH_MEASURES], series)
    return CHARTS.bars("health-chart", "Orphans and unreachable pages, before and after", bars, "")


def hub_tree(data: ReportData) -> str:
    """Every hub, linked from the home page's content in the crawl or by the plan, with the pages the plan
    links on from each: where the home page already links them all, the plan adds no hub link and the hubs
    are the existing ones."""
    onward = (
        data.plan.filter(pl.col("placement").is_in(IN_CONTENT))
        .sort("priority")
        .group_by("source_page_id", maintain_order=True)
        .agg(pl.struct("target_page_id", "target_title").head(PAGES_PER_HUB).alias("pages"))
    )
    tree = [
        {
            "page_id": hub,
            "title": title,
            "pages": [(p["target_page_id"], p["target_title"]) for p in pages or []],
        }
        for hub, title, pages in data.pages.filter("is_hub")
        .select("page_id", "title")
        .join(onward, left_on="page_id", right_on="source_page_id", how="left")
        .iter_rows()
    ]
    if not tree:
        return SECTIONS.nothing_to_draw(
            "hub-tree",
            "No hubs: the home page's content links no page, and the plan adds no hub link: the home page's "
            "links, its menus included, already reach every section.",
        )
    title = "Home page → its hubs (linked now or planned) → the pages the plan links from each"
    return CHARTS.hubs("hub-tree", title, tree)


def reasons_table(data: ReportData) -> str:
    """Links by reason: how many, how probable the site's ranker finds them, and how many structural ones
    have no likely source (weak), counted apart."""
    by_reason = (
        data.plan.group_by("reason")
        .agg(
            pl.len().alias("links"),
            pl.col("probability").mean().alias("mean probability"),
            pl.col("weak").sum().alias("weak (no likely source)"),
        )
        .sort("links", descending=True)
        .with_columns(probability_text(pl.col("mean probability")))
    )
    return SECTIONS.table(by_reason, "reasons")


def topics_table(data: ReportData) -> str:
    """The topics to act on, the least linked first: pages, median in-links before → after, the plan's links
    into them, median clicks from home before → after."""
    pages = data.pages.filter(pl.col("cluster").is_not_null())
    if pages.is_empty():
        return SECTIONS.nothing_to_draw("topics", "No topics: the pages were not grouped.")
    into = data.plan.group_by(pl.col("target_cluster").alias("cluster")).agg(pl.len().alias("planned"))

    def moved(before: str, after: str) -> pl.Expr:
        def said(value: pl.Expr) -> pl.Expr:  # 2, 2.5: no trailing .0
            return value.cast(pl.Float64).round(1).cast(pl.String).str.strip_suffix(".0")

        was, now = pl.col(before).median(), pl.col(after).median()
        return pl.when(was.is_null()).then(said(now)).otherwise(said(was) + pl.lit(" → ") + said(now))

    table = (
        pages.group_by("cluster")
        .agg(
            pl.len().alias("pages"),
            pl.col("inlinks_before").median().alias("order"),
            moved("inlinks_before", "inlinks_after").alias("median in-links"),
            moved("depth_before", "depth_after").alias("median clicks from home (pages within reach)"),
        )
        .join(into, on="cluster", how="left")
        .sort(["order", "pages", "cluster"], descending=[False, True, False], nulls_last=True)
        .select(
            pl.col("cluster").alias("topic"), "pages", "median in-links",
            pl.col("planned").fill_null(0).alias("links the plan adds into it"),
            "median clicks from home (pages within reach)",
        )
    )  # fmt: skip
    return SECTIONS.table(table, "topics")


def backtest_section(data: ReportData) -> str:
    """How the plan did on links the pipeline was not shown, next to the plain baseline: this run's
    measurement, or, while it is being measured (the plan is published first), the last one, said so."""
    if data.backtest.is_empty():
        return SECTIONS.backtest(measurable=not data.content_links.is_empty())
    row = data.backtest.row(0, named=True)
    figures = pl.DataFrame(
        {
            "": ["plan precision", "plan recall", f"candidate precision@{row['k']}",
                 f"candidate recall@{row['k']}"],
            "this plan": [row["plan_precision"], row["plan_recall"], row["candidate_precision_at_k"],
                          row["candidate_recall_at_k"]],
            "top pages by title similarity": [row["baseline_precision"], row["baseline_recall"],
                                              row["baseline_precision_at_k"], row["baseline_recall_at_k"]],
        }
    )  # fmt: skip
    by_reason = pl.DataFrame(json.loads(row["precision_by_reason"]))
    columns = {"reason": "reason", "links": "links", "precision": "precision", "recall": "recall",
               "known": "into pages that lost a link", "known_precision": "their precision",
               "reachable": "… lost one from a page within reach",
               "reachable_precision": "precision within reach"}  # fmt: skip
    by_reason = by_reason.select([c for c in columns if c in by_reason.columns]).rename(columns, strict=False)
    return SECTIONS.backtest(row, figures, by_reason, earlier=row["run_id"] != data.run_id)


def plan_section(data: ReportData) -> str:
    """The plan table (plan_table.py), and how many of the plan's links it holds."""
    return SECTIONS.plan(plan_table(data.plan, data.pages), PLAN_TABLE_ROWS, data.plan.height)


def header(data: ReportData) -> str:
    """Which site, crawl and run the report shows, when the plan was made, and the settings it used."""
    metrics = data.site_metrics.row(0, named=True) if data.site_metrics.height else {}
    made = metrics.get("computed_at")
    facts = {
        "crawl": metrics.get("crawl_id", "–"),
        "plan made": f"{made:%Y-%m-%d %H:%M} UTC" if made else "–",
        "run": data.run_id,
    }
    if metrics.get("links_known") in LINKS_NOTES:
        facts["existing links"] = LINKS_NOTES[metrics["links_known"]]
    settings = "" if data.backtest.is_empty() else data.backtest["settings"][0]
    shown = json.dumps(json.loads(settings), indent=1) if settings else "not recorded (no backtest ran)"
    return SECTIONS.header(facts, shown)


def headline(data: ReportData) -> list[tuple[str, str]]:
    """The cards at the top: what the plan does, before → after, whatever the site's shape — links added,
    pages they reach, median and deepest clicks from home, pages within 3 clicks, orphans, the pages it left
    for an editor (the workbook's for_an_editor sheet), and the internal PageRank share of the least linked
    quarter of pages."""
    metrics = {row["scenario"]: row for row in data.site_metrics.iter_rows(named=True)}
    after = metrics.get("after", {})
    before = metrics.get("before", after)

    def moved(key: str, say=lambda value: f"{value:,}") -> str:
        was, now = before.get(key), after.get(key)
        if now is None:
            return "–"
        return say(now) if was is None or was == now else f"{say(was)} → {say(now)}"

    figures = data.pages.select("inlinks_before", "pagerank_before", "pagerank_after").drop_nulls()
    equity = equity_moved(figures, None)["weakest_quarter"] if figures.height else None
    return [
        ("links to add", f"{after.get('planned_links', 0):,}"),
        ("pages gaining links", f"{data.plan['target_page_id'].n_unique():,} of {after.get('pages', 0):,}"),
        ("median clicks from home", moved("median_depth", lambda value: f"{value:g}")),
        ("deepest page, clicks", moved("max_depth")),
        ("pages within 3 clicks", moved("share_depth_le_3", lambda value: f"{value:.0%}")),
        ("orphans", moved("orphan_pages")),
        ("pages left for an editor", "–" if data.left_for_editor is None else f"{data.left_for_editor:,}"),
        (
            "PageRank share of the least linked quarter",
            "–" if not equity else
            f"{equity[1]:.1%}" if equity[0] is None else f"{equity[0]:.1%} → {equity[1]:.1%}",
        ),
    ]  # fmt: skip


def _static(name: str) -> str:
    """A file from templates/, to inline: the report opens with no network."""
    return files(__package__).joinpath("templates", name).read_text(encoding="utf-8")


def render(data: ReportData, path: Path) -> Path:
    """Write the report (atomically: a temp file renamed into place)."""
    from itables import options
    from itables.javascript import generate_init_offline_itables_html

    charts_drawn = [depth_chart(data), health_chart(data), hub_tree(data), topic_map(data)]
    page = TEMPLATES.get_template("report.html.j2").render(
        site=data.site,
        style=_static("report.css"),
        drilldown_style=_static("drilldown.css"),
        drilldown_script=_static("drilldown.js"),
        header=header(data),
        kpis=headline(data),
        charts=charts_drawn,
        charts_script=_static("charts.js"),
        reasons=reasons_table(data),
        topics=topics_table(data),
        backtest=backtest_section(data),
        changes=changes_section(data),
        new_since_review=new_since_review_section(data),
        adoption=adoption_section(data),
        itables_init=generate_init_offline_itables_html(options.dt_bundle),
        plan=plan_section(data),
        plan_script=_static("plan_table.js"),
        anchor_script=_static("anchor.js"),
        anchor_before="".join(sorted(ANCHOR_BEFORE)),
        anchor_after="".join(sorted(ANCHOR_AFTER)),
        drilldown=drilldown_data(
            data.pages,
            data.content_links,
            plan_in_words(data.plan),
            data.live,
            data.site,
        ),
    )
    with replaced_atomically(path) as partial:
        partial.write_text(page, encoding="utf-8")
    return path
