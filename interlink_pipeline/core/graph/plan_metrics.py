"""The plan's before/after figures: the site's link graph measured without and with the plan (the rows of
graph.site_metrics and graph.page_metrics) and the table that compares the two."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from numbers import Integral

import numpy as np
import polars as pl
from scipy import sparse

from interlink_pipeline.core.graph.metrics import UNREACHABLE, GraphSummary, adjacency, out_degree, summarize
from interlink_pipeline.core.graph.planner import Planner
from interlink_pipeline.core.numbers import significant

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


@dataclass(frozen=True)
class Measured:
    """A link graph's figures: its summary and, per kept page, clicks from home, in- and out-links and
    internal PageRank."""

    summary: GraphSummary
    depth: np.ndarray
    inlinks: np.ndarray
    outlinks: np.ndarray
    pagerank: np.ndarray


def _measure(graph: sparse.csr_matrix, home: int, pages: int) -> Measured:
    summary, depth, inlinks, rank = summarize(graph, home, pages)
    return Measured(summary, depth, inlinks, out_degree(graph)[:pages], rank)


def before_and_after(planner: Planner) -> tuple[Measured | None, Measured]:
    """The site's link graph measured without the plan and with it; no 'before' when the existing links
    are unknown (no All Inlinks export): the plan is then built from nothing."""
    site = planner.site
    after = _measure(planner.current_graph(), site.home, planner.page_count)
    if site.existing.is_empty():
        return None, after
    sources, targets = site.existing["source"].to_numpy(), site.existing["target"].to_numpy()
    return _measure(adjacency(site.nodes, sources, targets), site.home, planner.page_count), after


def site_metrics_rows(
    site: str,
    crawl_id: str,
    computed_at: datetime,
    before: Measured | None,
    after: Measured,
    planned_links: int,
) -> pl.DataFrame:
    """graph.site_metrics: one row per scenario ('before' when the existing links are known, 'after')."""

    def row(scenario: str, summary: GraphSummary, planned: int) -> dict:
        return {
            "site": site,
            "scenario": scenario,
            "crawl_id": crawl_id,
            "computed_at": computed_at,
            **dataclasses.asdict(summary),
            "planned_links": planned,
        }

    rows = ([row("before", before.summary, 0)] if before is not None else []) + [
        row("after", after.summary, planned_links)
    ]
    return pl.DataFrame(rows).cast(
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


def page_metrics_rows(
    site: str,
    pages: pl.DataFrame,
    planner: Planner,
    planned: pl.DataFrame,
    fingerprints: pl.Series,
    before: Measured | None,
    after: Measured,
) -> pl.DataFrame:
    """graph.page_metrics: each page's cluster, centrality, quota and hub role, its links and depth after
    the plan (and before it, null when the existing links are unknown), and its plan fingerprint."""
    n, cluster_of = planner.page_count, planner.site.cluster
    return pl.DataFrame(
        {
            "site": [site] * n,
            "page_id": pages["page_id"],
            "url": pages["url"],
            "cluster_id": pl.Series(np.where(cluster_of >= 0, cluster_of, 0), dtype=pl.Int32),
            "betweenness": planner.centrality,
            "inlink_quota": pl.Series(planner.quota, dtype=pl.Int32),
            "is_hub": np.isin(np.arange(n), _hubs(planner.site.existing, planned, planner.site.home)),
            "depth_after": _clicks(after.depth),
            "inlinks_after": pl.Series(after.inlinks, dtype=pl.Int32),
            "outlinks_after": pl.Series(after.outlinks, dtype=pl.Int32),
            "pagerank_after": after.pagerank,
            "planned_inlinks": pl.Series(
                np.bincount(planned["target"].to_numpy(), minlength=n), dtype=pl.Int32
            ),
            "planned_outlinks": pl.Series(
                np.bincount(planned["source"].to_numpy(), minlength=n), dtype=pl.Int32
            ),
            "plan_fingerprint": fingerprints,
        }
    ).with_columns(
        pl.when(pl.Series(cluster_of >= 0)).then(pl.col("cluster_id")).otherwise(None).alias("cluster_id"),
        *_before_columns(before),
    )


def _before_columns(before: Measured | None) -> list[pl.Series | pl.Expr]:
    if before is None:
        unknown_int = pl.lit(None, dtype=pl.Int32)
        return [
            unknown_int.alias("depth_before"),
            unknown_int.alias("inlinks_before"),
            unknown_int.alias("outlinks_before"),
            pl.lit(None, dtype=pl.Float64).alias("pagerank_before"),
        ]
    return [
        _clicks(before.depth).alias("depth_before"),
        pl.Series(before.inlinks, dtype=pl.Int32).alias("inlinks_before"),
        pl.Series(before.outlinks, dtype=pl.Int32).alias("outlinks_before"),
        pl.Series(before.pagerank).alias("pagerank_before"),
    ]


def _hubs(existing: pl.DataFrame, planned: pl.DataFrame, home: int) -> np.ndarray:
    """The pages the home page's content links to, in the crawl or by the plan: a site whose home page
    already links its sections has hubs, though the plan adds none."""
    linked = existing.filter((pl.col("source") == home) & pl.col("content"))["target"]
    return np.union1d(linked.to_numpy(), planned.filter(pl.col("reason") == "hub")["target"].to_numpy())


def _clicks(depth: np.ndarray) -> pl.Series:
    """Clicks from home as a column; an unreachable page has no depth (null), not a number to average."""
    return pl.Series(depth, dtype=pl.Int32).replace(UNREACHABLE, None)


def comparison(before: GraphSummary | None, after: GraphSummary) -> pl.DataFrame:
    """The before/after table people read: each summary figure without and with the plan, counts as
    counts (14,243) and the rest to significant digits."""

    def shown(summary: GraphSummary | None, key: str) -> str | None:
        if summary is None:
            return None
        value = getattr(summary, key)
        return f"{value:,}" if isinstance(value, Integral) else f"{significant(float(value)):g}"

    return pl.DataFrame(
        {
            "metric": [label for _, label in SUMMARY_ROWS],
            "before": [shown(before, key) for key, _ in SUMMARY_ROWS],
            "after": [shown(after, key) for key, _ in SUMMARY_ROWS],
        },
        schema={"metric": pl.String, "before": pl.String, "after": pl.String},
    )
