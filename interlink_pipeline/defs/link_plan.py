"""link_plan: the links to add, with before/after metrics of the site's link graph."""

import dataclasses
import json
import time
from datetime import UTC, datetime

import numpy as np
import polars as pl
from dagster import AssetCheckResult, AssetCheckSeverity, AssetExecutionContext, Config, MetadataValue
from pydantic import Field

from interlink_pipeline.core.files import load_state, save_state
from interlink_pipeline.core.graph.link_graph import page_links
from interlink_pipeline.core.graph.link_plan import (
    PLAN_INVARIANTS,
    KeptCentrality,
    PlanCheck,
    PlanInputs,
    PlanOptions,
    check_plan,
    existing_links,
    links_to_keep,
    page_fingerprints,
    plan_anchors,
    plan_changes,
    plan_site,
)
from interlink_pipeline.core.graph.metrics import UNREACHABLE, GraphSummary, adjacency, out_degree, summarize
from interlink_pipeline.core.ml.page_embeddings import read_vectors
from interlink_pipeline.core.publish.previews import markdown_table
from interlink_pipeline.core.text import detect_language, function_words
from interlink_pipeline.defs.crawl import raw_links
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.relevance import link_candidates
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.settings import options_from
from interlink_pipeline.defs.similarity import topic_clusters
from interlink_pipeline.defs.tables import persist, site_asset, user_errors

GROUP = "graph"
PREVIOUS_COLUMNS = ["source_page_id", "target_page_id", "source_url", "target_url", "reason", "score",
                    "evidence", "placement"]  # fmt: skip
SUMMARY_ROWS = [
    ("orphan_pages", "orphan pages"),
    ("unreachable_pages", "unreachable pages"),
    ("max_depth", "max depth"),
    ("median_depth", "median depth"),
    ("share_depth_le_3", "share within 3 clicks"),
    ("share_depth_le_5", "share within 5 clicks"),
    ("inlink_gini", "in-link Gini"),
    ("mean_outlinks", "links per page"),
    ("links", "links"),
]


class LinkPlanConfig(Config):
    out_link_budget: int = Field(
        default=10, ge=1, description="In-content links per page, existing ones included."
    )
    hub_links: int = Field(
        default=20, ge=0, description="Links on the home page to hubs, existing ones included."
    )
    section_links: int = Field(
        default=20,
        ge=0,
        description="In-content links of a section index (a page the site's menu lists others under), "
        "existing ones included.",
    )
    min_inlinks: int = Field(
        default=1, ge=0, description="In-content in-link quota of the least central pages."
    )
    max_inlinks: int = Field(
        default=20, ge=0, description="In-content in-link quota of the most central pages."
    )
    max_depth: int = Field(default=4, ge=1, description="Click-depth target from the home page.")
    exact_centrality_below: int = Field(
        default=5000, ge=0, description="Pages below which betweenness is exact."
    )
    centrality_samples: int = Field(
        default=512, ge=8, description="Sampled sources for estimated betweenness."
    )
    recompute_centrality_above: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="A re-crawl reuses the last sampled betweenness estimate (new pages score 0) until this "
        "share of the relatedness graph's edges changed since it was measured; exact betweenness is always "
        "measured.",
    )
    anchor_max_words: int = Field(
        default=6, ge=1, description="Longest anchor phrase, in words (phrases are never cut)."
    )
    anchor_max_targets: int = Field(
        default=1, ge=1, description="Most pages one anchor text may point at across the site."
    )
    min_probability: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="Topical links less probable than this (by the site's ranker) are never added to fill "
        "a budget.",
    )
    keep_previous: bool = Field(
        default=True,
        description="Keep the previous plan's links whose pages are unchanged (a plan the team has half "
        "shipped stays put); false plans from scratch.",
    )


def _index(frame: pl.DataFrame, index: pl.DataFrame, columns: dict[str, str]) -> pl.DataFrame:
    """Replace page-id columns by page indices, in place (rows of pages not in the index are dropped)."""
    order = [columns.get(c, c) for c in frame.columns]
    for column, name in columns.items():
        frame = frame.join(index.rename({"page_id": column, "i": name}), on=column).drop(column)
    return frame.select(order)


def _hubs(existing: pl.DataFrame, planned: pl.DataFrame, home: int) -> np.ndarray:
    """The pages the home page's content links to, in the crawl or by the plan: a site whose home page
    already links its sections has hubs, though the plan adds none."""
    linked = existing.filter((pl.col("source") == home) & pl.col("content"))["target"]
    return np.union1d(linked.to_numpy(), planned.filter(pl.col("reason") == "hub")["target"].to_numpy())


def _clicks(depth: np.ndarray) -> pl.Series:
    """Clicks from home as a column; an unreachable page has no depth (null), not a number to average."""
    return pl.Series(depth, dtype=pl.Int32).replace(UNREACHABLE, None)


def _bars(histogram: str, width: int = 24) -> str:
    """The click-depth histogram as a markdown table with a bar per depth (one row each)."""
    counts = json.loads(histogram)
    top = max(counts.values()) or 1
    bars = {k: "█" * max(1, round(width * v / top)) if v else "" for k, v in counts.items()}
    rows = [f"| {k} | {v:,} | {bars[k]} |" for k, v in counts.items()]
    return "\n".join(["| clicks | pages | |", "|---|---:|---|", *rows])


def plan_inputs(warehouse: Warehouse, site: str) -> PlanInputs:
    columns = ("page_id", "url", "url_key", "path", "title", "h1", "meta_description", "body_text", "is_home",
               "crawl_id", "text_hash")  # fmt: skip
    pages, vectors = read_vectors(warehouse.path, site, columns)
    index = pages.select("page_id", pl.int_range(pl.len(), dtype=pl.Int64).alias("i"))
    clusters = warehouse.read_site("ml.page_clusters", site, ["page_id", "cluster_id"])
    cluster = _index(clusters, index, {"page_id": "i"}).sort("i")
    cluster_of = np.full(len(pages), -1, dtype=np.int64)
    cluster_of[cluster["i"].to_numpy()] = cluster["cluster_id"].to_numpy()
    similar = _index(
        warehouse.read_site("ml.similarity_pairs", site)
        .filter(pl.col("relation") == "similar")
        .select("source_page_id", "target_page_id", "score"),
        index,
        {"source_page_id": "a", "target_page_id": "b"},
    )
    similar = pl.concat([similar, similar.select(pl.col("b").alias("a"), pl.col("a").alias("b"), "score")])
    links = warehouse.read_site("raw.crawl_links", site)
    existing, nodes = existing_links(links, pages["url_key"])
    anchors = page_links(links, pages["url_key"])
    taken: dict[str, set[int]] = {}
    for target, anchor in zip(anchors.target[anchors.content], anchors.anchor[anchors.content], strict=True):
        if anchor:
            taken.setdefault(anchor.strip().lower(), set()).add(int(target))
    return PlanInputs(pages, vectors, index, cluster_of, similar, existing, nodes, taken, anchors.sections)


@site_asset(
    "graph.link_plan",
    "graph.page_metrics",
    "graph.site_metrics",
    "graph.link_plan_changes",
    group=GROUP,
    deps=[link_candidates, topic_clusters, raw_links],
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
        pages, cluster_of, existing = inputs.pages, inputs.cluster_of, inputs.existing
        candidates = _index(
            warehouse.read_site(
                "ml.link_candidates",
                site,
                [
                    "source_page_id",
                    "target_page_id",
                    "probability",
                    "origins",
                    "mention_offset",
                    "mention_words",
                ],
            ),
            inputs.index,
            {"source_page_id": "source", "target_page_id": "target"},
        )
        options = options_from(config, PlanOptions)
        fingerprints = pages.select("page_id", page_fingerprints(pages)).join(inputs.index, on="page_id")
        previous = warehouse.read_site("graph.link_plan", site, PREVIOUS_COLUMNS)
        kept, dropped = links_to_keep(
            previous,
            warehouse.read_site("graph.page_metrics", site, ["page_id", "plan_fingerprint"]),
            fingerprints,
        )
        centrality_path = warehouse.kept_state(site) / "centrality.joblib"
        planned, planner, graph = plan_site(
            inputs,
            candidates,
            existing,
            options,
            kept if options.keep_previous else None,
            load_state(centrality_path, KeptCentrality),
        )
    glue = function_words(detect_language(pages["title"].drop_nulls().head(2000).to_list()))
    anchors, offsets = plan_anchors(inputs, planned, candidates, options, glue)
    ids, urls = pages["page_id"], pages["url"]
    plan = planned.with_columns(
        pl.Series("anchor_text", anchors, dtype=pl.String),
        pl.Series("anchor_offset", offsets, dtype=pl.Int32),
    ).select(
        pl.lit(site).alias("site"),
        pl.Series("source_page_id", ids.gather(planned["source"]), dtype=pl.String),
        pl.Series("target_page_id", ids.gather(planned["target"]), dtype=pl.String),
        pl.Series("source_url", urls.gather(planned["source"]), dtype=pl.String),
        pl.Series("target_url", urls.gather(planned["target"]), dtype=pl.String),
        "anchor_text",
        "anchor_offset",
        "score",
        "probability",
        "reason",
        "evidence",
        "placement",
    )
    refused = pl.DataFrame(
        [(ids[s], ids[t], why) for (s, t), why in planner.refused.items()],
        schema=["source_page_id", "target_page_id", "why"],
        orient="row",
    )
    changes = plan_changes(previous, plan, pl.concat([dropped, refused])).with_columns(
        pl.lit(site).alias("site"),
        pl.lit(datetime.now(UTC).replace(tzinfo=None)).dt.cast_time_unit("us").alias("computed_at"),
    )

    n = len(pages)
    known = not existing.is_empty()
    before_graph = adjacency(graph.nodes, existing["source"].to_numpy(), existing["target"].to_numpy())
    after_graph = planner.graph()
    after, depth_after, in_after, rank_after = summarize(after_graph, graph.home, n)
    before, depth_before, in_before, rank_before = summarize(before_graph, graph.home, n)
    computed = datetime.now(UTC).replace(tzinfo=None)
    crawl_id = pages["crawl_id"][0]

    def site_row(scenario: str, summary: GraphSummary, planned_links: int) -> dict:
        return {
            "site": site,
            "scenario": scenario,
            "crawl_id": crawl_id,
            "computed_at": computed,
            **dataclasses.asdict(summary),
            "planned_links": planned_links,
        }

    site_rows = pl.DataFrame(
        ([site_row("before", before, 0)] if known else []) + [site_row("after", after, planned.height)]
    ).cast(
        {
            "pages": pl.Int32,
            "links": pl.Int64,
            "planned_links": pl.Int32,
            "orphan_pages": pl.Int32,
            "unreachable_pages": pl.Int32,
            "max_depth": pl.Int32,
            "computed_at": pl.Datetime("us"),
        }
    )
    unknown_int = pl.lit(None, dtype=pl.Int32)
    page_rows = pl.DataFrame(
        {
            "site": [site] * n,
            "page_id": ids,
            "url": urls,
            "cluster_id": pl.Series(np.where(cluster_of >= 0, cluster_of, 0), dtype=pl.Int32),
            "betweenness": planner.centrality,
            "inlink_quota": pl.Series(planner.quota, dtype=pl.Int32),
            "is_hub": np.isin(np.arange(n), _hubs(existing, planned, graph.home)),
            "depth_after": _clicks(depth_after),
            "inlinks_after": pl.Series(in_after, dtype=pl.Int32),
            "outlinks_after": pl.Series(out_degree(after_graph)[:n], dtype=pl.Int32),
            "pagerank_after": rank_after,
            "planned_inlinks": pl.Series(
                np.bincount(planned["target"].to_numpy(), minlength=n), dtype=pl.Int32
            ),
            "planned_outlinks": pl.Series(
                np.bincount(planned["source"].to_numpy(), minlength=n), dtype=pl.Int32
            ),
            "plan_fingerprint": fingerprints.sort("i")["plan_fingerprint"],
        }
    ).with_columns(
        pl.when(pl.Series(cluster_of >= 0)).then(pl.col("cluster_id")).otherwise(None).alias("cluster_id"),
        (_clicks(depth_before) if known else unknown_int).alias("depth_before"),
        (pl.Series(in_before, dtype=pl.Int32) if known else unknown_int).alias("inlinks_before"),
        (pl.Series(out_degree(before_graph)[:n], dtype=pl.Int32) if known else unknown_int).alias(
            "outlinks_before"
        ),
        (pl.Series(rank_before) if known else pl.lit(None, dtype=pl.Float64)).alias("pagerank_before"),
    )

    checks = _check_results(
        check_plan(planned, anchors, existing, planner, after.orphan_pages, options, inputs.taken)
    )
    comparison = pl.DataFrame(
        {
            "metric": [label for _, label in SUMMARY_ROWS],
            "before": [round(float(getattr(before, key)), 3) if known else None for key, _ in SUMMARY_ROWS],
            "after": [round(float(getattr(after, key)), 3) for key, _ in SUMMARY_ROWS],
        }
    )
    names = dict(pages.select("page_id", pl.coalesce("title", "h1", "url")).iter_rows())
    counts = dict(changes.group_by("change").len().iter_rows())
    metadata = {
        "planned_links": planned.height,
        "plan_stability": MetadataValue.float(round(counts.get("kept", 0) / previous.height, 4))
        if previous.height
        else "no previous plan",
        "changes_since_last_plan": MetadataValue.md(
            markdown_table(
                changes.group_by("change", "why")
                .len("links")
                .sort("change", "links", descending=[False, True]),
                20,
            )
        ),
        "links_by_reason": MetadataValue.md(
            markdown_table(
                plan.group_by("reason")
                .agg(
                    pl.len().alias("links"),
                    pl.col("probability").mean().round(3).alias("mean_probability"),
                    pl.col("probability").is_null().sum().alias("without_probability"),
                )
                .sort("links", descending=True),
                10,
            )
        ),
        "before_after": MetadataValue.md(
            markdown_table(comparison, 20)
            + (
                ""
                if known
                else "\n\n_No All Inlinks export: the existing links are unknown, so 'after' is the plan "
                "alone and there is no 'before'._"
            )
        ),
        "depth_before": MetadataValue.md(_bars(before.depth_histogram)) if known else "unknown",
        "depth_after": MetadataValue.md(_bars(after.depth_histogram)),
        "hubs": MetadataValue.md(
            markdown_table(pl.DataFrame({"hub": [names[ids[h]] for h in planner.hubs]}), 30)
        ),
        "centrality": planner.stats.centrality,
        "seconds_by_step": MetadataValue.json({k: round(v, 2) for k, v in planner.stats.seconds.items()}),
        "preview": MetadataValue.md(
            markdown_table(
                plan.group_by("reason", maintain_order=True)
                .head(4)
                .with_columns(
                    pl.col("source_page_id").replace_strict(names).alias("on_page"),
                    pl.col("target_page_id").replace_strict(names).alias("link_to"),
                    pl.col("score").cast(pl.Float64).round(3),
                )
                .select("reason", "on_page", "anchor_text", "link_to", "score"),
                20,
            )
        ),
    }
    frames = {
        "graph.link_plan": plan,
        "graph.page_metrics": page_rows,
        "graph.site_metrics": site_rows,
        "graph.link_plan_changes": changes,
    }
    yield from persist(context, warehouse, site, frames, metadata, started, checks)
    if planner.kept_centrality is not None:  # after the write: a run that fails keeps the last estimate
        save_state(planner.kept_centrality, centrality_path)


def _check_results(checks: list[PlanCheck]) -> list[AssetCheckResult]:
    return [
        AssetCheckResult(
            check_name=check.name,
            passed=check.passed,
            severity=AssetCheckSeverity.ERROR if check.blocking else AssetCheckSeverity.WARN,
            metadata={
                key: MetadataValue.json(value) if isinstance(value, list) else value
                for key, value in check.figures.items()
            },
        )
        for check in checks
    ]
