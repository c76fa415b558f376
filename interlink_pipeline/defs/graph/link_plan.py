"""link_plan: the links to add, with before/after metrics of the site's link graph."""

import json
import time
from datetime import UTC, datetime

import polars as pl
from dagster import AssetExecutionContext, MetadataValue

from interlink_pipeline.core.graph.left_for_editor import task_counts
from interlink_pipeline.core.graph.link_plan import SitePlan, keep_centrality, plan_for_site
from interlink_pipeline.core.graph.plan_invariants import PLAN_INVARIANTS
from interlink_pipeline.core.graph.plan_metrics import comparison, equity_moved
from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.warehouse.vocabularies import LINKS_NOTES
from interlink_pipeline.defs.graph.plan_adoption import adoption_metadata
from interlink_pipeline.defs.groups import GRAPH
from interlink_pipeline.defs.ml.embeddings import Embedder
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.previews import table_preview
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.settings import options_from, settings_config
from interlink_pipeline.defs.tables import site_asset, table_key
from interlink_pipeline.defs.trends import site_trend
from interlink_pipeline.defs.writes import check_results, persist, user_errors

# the figures the `trend` table shows for the site, run after run
TREND_FIGURES = ("planned_links", "orphan_pages_after", "share_depth_le_3_after", "pages_left_for_editor",
                 "links_live", "acceptance_rate")  # fmt: skip


class LinkPlanConfig(settings_config(PlanOptions)):
    """How the plan is made: the settings of PlanOptions (core/graph/plan_options.py)."""


def _bars(histogram: str, width: int = 24) -> str:
    """The click-depth histogram as a markdown table with a bar per depth (one row each)."""
    counts = json.loads(histogram)
    top = max(counts.values()) or 1
    bars = {k: "█" * max(1, round(width * v / top)) if v else "" for k, v in counts.items()}
    rows = [f"| {k} | {v:,} | {bars[k]} |" for k, v in counts.items()]
    return "\n".join(["| clicks | pages | |", "|---|---:|---|", *rows])


@site_asset(
    "graph.link_plan",
    "graph.page_metrics",
    "graph.site_metrics",
    "graph.link_plan_changes",
    "graph.live_links",
    group=GRAPH,
    deps=[
        "graph.link_decisions",
        "ml.link_candidates",
        "staging.pages",
        "ml.page_embeddings",
        "ml.page_clusters",
        "ml.similarity_pairs",
        "raw.crawl_links",
        "raw.search_console",
    ],
    kinds={"duckdb", "networkit"},
    invariants=PLAN_INVARIANTS,
)
def link_plan(
    context: AssetExecutionContext, config: LinkPlanConfig, warehouse: Warehouse, embedder: Embedder
):
    """The plan: the links editors accepted, home -> hubs, every page brought within max_depth level by
    level, then the most probable topical links, never one an editor rejected; and the planned links the
    crawl shows live."""
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        now = datetime.now(UTC).replace(tzinfo=None)
        options = options_from(config, PlanOptions)
        encoder = embedder.for_site(warehouse.path, site)
        result, inputs, history = plan_for_site(warehouse, site, options, now, encoder)
    frames = {
        "graph.link_plan": result.plan,
        "graph.page_metrics": result.page_rows,
        "graph.site_metrics": result.site_rows,
        "graph.link_plan_changes": result.changes,
        "graph.live_links": result.live,
    }
    metadata = {
        **_metadata(result, inputs.pages, history.previous.height, inputs.links_known),
        **adoption_metadata(result, history),
    }
    metadata["trend"] = site_trend(context, table_key("graph.link_plan"), metadata, TREND_FIGURES)
    yield from persist(context, warehouse, site, frames, metadata, started, check_results(result.checks))
    keep_centrality(warehouse, site, result)


def _metadata(result: SitePlan, pages: pl.DataFrame, previous_links: int, links_known: str) -> dict:
    """What the materialisation shows: stability, links by reason, before/after, depths, hubs, a preview."""
    plan, changes, stats = result.plan, result.changes, result.planner.stats
    names = dict(pages.select("page_id", pl.coalesce("title", "h1", "url")).iter_rows())
    counts = dict(changes.group_by("change").len().iter_rows())
    known = result.before is not None
    change_counts = (
        changes.group_by("change", "why").len("links").sort("change", "links", descending=[False, True])
    )
    hubs = pl.DataFrame({"hub": [names[pages["page_id"][h]] for h in result.planner.hubs]})
    return {
        "planned_links": plan.height,
        "plan_stability": MetadataValue.float(counts.get("kept", 0) / previous_links)
        if previous_links
        else "no previous plan",
        "changes_since_last_plan": table_preview(change_counts, 20),
        "links_by_reason": table_preview(_links_by_reason(plan), 10),
        "before_after": table_preview(comparison(result.before, result.after), 20),
        "existing_links": links_known,
        **({"existing_links_note": LINKS_NOTES[links_known]} if links_known in LINKS_NOTES else {}),
        "depth_before": MetadataValue.md(_bars(result.before.depth_histogram)) if known else "unknown",
        "depth_after": MetadataValue.md(_bars(result.after.depth_histogram)),
        "hubs": table_preview(hubs, 30),
        **_left_for_editor(result),
        "budget_rule": f"{result.planner.room.rule}: {result.planner.room.why}",
        **_equity(result),
        **_trends(result),
        "centrality": stats.centrality,
        "near_duplicate_search": stats.near_duplicate_search or "fewer than two orphans with vectors",
        "seconds_by_step": MetadataValue.json(stats.seconds),
        "preview": table_preview(_preview(plan, names), 20),
    }


def _left_for_editor(result: SitePlan) -> dict:
    """The pages the plan left for an editor rather than link anyway: their count by problem (a number for
    the Plots tab too) and the first of them, with why."""
    left = result.page_rows.filter(pl.col("left_for_editor").is_not_null())
    counts = task_counts(result.planner.left_for_editor)
    return {
        "pages_left_for_editor": MetadataValue.int(left.height),
        "left_for_editor_by_problem": table_preview(
            pl.DataFrame({"problem": list(counts), "pages": list(counts.values())}), 10
        ),
        "left_for_editor": table_preview(left.select("url", "left_for_editor"), 20)
        if left.height
        else "none",
    }


def _equity(result: SitePlan) -> dict:
    """The internal PageRank share the plan moves to the least linked quarter and the pages in striking
    distance, before → after."""
    moved = equity_moved(result.page_rows, result.planner.site.priority)
    return {
        f"pagerank_share_{name}": " → ".join("unknown" if v is None else f"{v:.1%}" for v in shares)
        for name, shares in moved.items()
        if shares is not None
    }


def _trends(result: SitePlan) -> dict:
    """The few figures worth a line in the Plots tab, as numbers: orphans and the share within 3 clicks
    after the plan (every summary figure before and after is in the `before_after` table). The Plots tab
    draws every site on one line; the `trend` table is the site's own (defs/trends.py)."""
    after = result.after
    return {
        "orphan_pages_after": MetadataValue.int(int(after.orphan_pages)),
        "share_depth_le_3_after": MetadataValue.float(float(after.share_depth_le_3)),
    }


def _links_by_reason(plan: pl.DataFrame) -> pl.DataFrame:
    return (
        plan.group_by("reason")
        .agg(
            pl.len().alias("links"),
            pl.col("probability").mean().round(3).alias("mean_probability"),
            pl.col("probability").is_null().sum().alias("without_probability"),
            pl.col("weak").sum().alias("weak"),
            (pl.col("placement") == "contextual").sum().alias("in_the_text"),
            (pl.col("placement") == "related").sum().alias("in_related_links"),
            (pl.col("placement") == "listing").sum().alias("in_a_listing"),
            pl.col("in_navigation").sum().alias("already_in_navigation"),
        )
        .sort("links", descending=True)
    )


def _preview(plan: pl.DataFrame, names: dict[str, str]) -> pl.DataFrame:
    """The first few links of each reason, as an editor reads them: on which page, what text, to where."""
    return (
        plan.group_by("reason", maintain_order=True)
        .head(4)
        .with_columns(
            pl.col("source_page_id").replace_strict(names).alias("on_page"),
            pl.col("target_page_id").replace_strict(names).alias("link_to"),
            pl.col("score").cast(pl.Float64).round(3),
        )
        .select("reason", "on_page", "anchor_text", "link_to", "score")
    )
