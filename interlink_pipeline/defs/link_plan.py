"""link_plan: the links to add, with before/after metrics of the site's link graph."""

import json
import time
from datetime import UTC, datetime

import numpy as np
import polars as pl
from dagster import AssetExecutionContext, MetadataValue

from interlink_pipeline.core.files import load_state, save_state
from interlink_pipeline.core.graph.centrality import KeptCentrality
from interlink_pipeline.core.graph.link_plan import PlanInputs, SitePlan, build_site_plan, plan_inputs_from
from interlink_pipeline.core.graph.plan_invariants import PLAN_INVARIANTS
from interlink_pipeline.core.graph.plan_metrics import SUMMARY_ROWS, comparison
from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.ml.page_embeddings import read_vectors
from interlink_pipeline.core.publish.previews import markdown_table
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.settings import options_from, settings_config
from interlink_pipeline.defs.tables import check_results, persist, site_asset, user_errors

GROUP = "graph"
PAGE_COLUMNS = ("page_id", "url", "url_key", "path", "title", "h1", "meta_description", "body_text",
                "is_home", "crawl_id", "text_hash")  # fmt: skip
CANDIDATE_COLUMNS = ["source_page_id", "target_page_id", "probability", "origins", "mention_offset",
                     "mention_words"]  # fmt: skip
PREVIOUS_COLUMNS = ["source_page_id", "target_page_id", "source_url", "target_url", "reason", "score",
                    "evidence", "placement"]  # fmt: skip


class LinkPlanConfig(settings_config(PlanOptions)):
    """How the plan is made: the settings of PlanOptions (core/graph/plan_options.py)."""


def _bars(histogram: str, width: int = 24) -> str:
    """The click-depth histogram as a markdown table with a bar per depth (one row each)."""
    counts = json.loads(histogram)
    top = max(counts.values()) or 1
    bars = {k: "█" * max(1, round(width * v / top)) if v else "" for k, v in counts.items()}
    rows = [f"| {k} | {v:,} | {bars[k]} |" for k, v in counts.items()]
    return "\n".join(["| clicks | pages | |", "|---|---:|---|", *rows])


def plan_inputs(warehouse: Warehouse, site: str) -> PlanInputs:
    """A site's plan inputs, read off the warehouse."""
    pages, vectors = read_vectors(warehouse.path, site, PAGE_COLUMNS)
    return plan_inputs_from(
        pages,
        vectors,
        warehouse.read_site("ml.page_clusters", site, ["page_id", "cluster_id"]),
        warehouse.read_site("ml.similarity_pairs", site),
        warehouse.read_site("raw.crawl_links", site),
    )


@site_asset(
    "graph.link_plan",
    "graph.page_metrics",
    "graph.site_metrics",
    "graph.link_plan_changes",
    group=GROUP,
    deps=[
        "ml.link_candidates",
        "staging.pages",
        "ml.page_embeddings",
        "ml.page_clusters",
        "ml.similarity_pairs",
        "raw.crawl_links",
    ],
    kinds={"duckdb", "networkit"},
    invariants=PLAN_INVARIANTS,
)
def link_plan(context: AssetExecutionContext, config: LinkPlanConfig, warehouse: Warehouse):
    """The plan: home -> hubs, every page brought within max_depth level by level, then the most probable
    topical links."""
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        inputs = plan_inputs(warehouse, site)
        previous = warehouse.read_site("graph.link_plan", site, PREVIOUS_COLUMNS)
        centrality_path = warehouse.kept_state(site) / "centrality.joblib"
        result = build_site_plan(
            site,
            inputs,
            warehouse.read_site("ml.link_candidates", site, CANDIDATE_COLUMNS),
            previous,
            warehouse.read_site("graph.page_metrics", site, ["page_id", "plan_fingerprint"]),
            options_from(config, PlanOptions),
            load_state(centrality_path, KeptCentrality),
            datetime.now(UTC).replace(tzinfo=None),
        )
    frames = {
        "graph.link_plan": result.plan,
        "graph.page_metrics": result.page_rows,
        "graph.site_metrics": result.site_rows,
        "graph.link_plan_changes": result.changes,
    }
    metadata = _metadata(result, inputs.pages, previous.height)
    yield from persist(context, warehouse, site, frames, metadata, started, check_results(result.checks))
    kept_centrality = result.planner.kept_centrality
    if kept_centrality is not None:  # after the write: a run that fails keeps the last estimate
        save_state(kept_centrality, centrality_path)


def _metadata(result: SitePlan, pages: pl.DataFrame, previous_links: int) -> dict:
    """What the materialisation shows: stability, links by reason, before/after, depths, hubs, a preview."""
    plan, changes, stats = result.plan, result.changes, result.planner.stats
    names = dict(pages.select("page_id", pl.coalesce("title", "h1", "url")).iter_rows())
    counts = dict(changes.group_by("change").len().iter_rows())
    known = result.before is not None
    unknown_note = (
        "\n\n_No All Inlinks export: the existing links are unknown, so 'after' is the plan alone and there "
        "is no 'before'._"
    )
    change_counts = (
        changes.group_by("change", "why").len("links").sort("change", "links", descending=[False, True])
    )
    hubs = pl.DataFrame({"hub": [names[pages["page_id"][h]] for h in result.planner.hubs]})
    return {
        "planned_links": plan.height,
        "plan_stability": MetadataValue.float(counts.get("kept", 0) / previous_links)
        if previous_links
        else "no previous plan",
        "changes_since_last_plan": MetadataValue.md(markdown_table(change_counts, 20)),
        "links_by_reason": MetadataValue.md(markdown_table(_links_by_reason(plan), 10)),
        "before_after": MetadataValue.md(
            markdown_table(comparison(result.before, result.after), 20) + ("" if known else unknown_note)
        ),
        "depth_before": MetadataValue.md(_bars(result.before.depth_histogram)) if known else "unknown",
        "depth_after": MetadataValue.md(_bars(result.after.depth_histogram)),
        "hubs": MetadataValue.md(markdown_table(hubs, 30)),
        **_figures(result),
        "centrality": stats.centrality,
        "seconds_by_step": MetadataValue.json(stats.seconds),
        "preview": MetadataValue.md(markdown_table(_preview(plan, names), 20)),
    }


def _figures(result: SitePlan) -> dict:
    """Each summary figure after the plan (and before it, when the links are known) as a number: the UI's
    Plots tab charts them run after run, per site."""
    scenarios = {"after": result.after, "before": result.before}
    figures = {
        f"{key}_{scenario}": getattr(summary, key)
        for scenario, summary in scenarios.items()
        if summary is not None
        for key, _ in SUMMARY_ROWS
    }
    return {
        name: MetadataValue.int(int(value))
        if isinstance(value, int | np.integer)
        else MetadataValue.float(value)
        for name, value in figures.items()
    }


def _links_by_reason(plan: pl.DataFrame) -> pl.DataFrame:
    return (
        plan.group_by("reason")
        .agg(
            pl.len().alias("links"),
            pl.col("probability").mean().round(3).alias("mean_probability"),
            pl.col("probability").is_null().sum().alias("without_probability"),
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
