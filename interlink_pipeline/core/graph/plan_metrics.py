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

from interlink_pipeline.core.graph.metrics import (
    UNREACHABLE,
    GraphSummary,
    adjacency,
    gini,
    out_degree,
    summarize,
)
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
    before = _measure(adjacency(site.nodes, sources, targets), site.home, planner.page_count)
    if site.counted_inlinks is None:
        return before, after
    planned = np.bincount(np.asarray(planner.planned_targets, dtype=np.int64), minlength=planner.page_count)
    return _counted(before, site.counted_inlinks), _counted(after, site.counted_inlinks + planned)


def _counted(measured: Measured, inlinks: np.ndarray) -> Measured:
    """A graph whose links are known by the crawl's counts only: its in-links (and so its link count and
    their inequality) are those counts; depth and orphans come from the graph of the crawl's depths."""
    summary = dataclasses.replace(
        measured.summary,
        links=int(inlinks.sum()),
        inlink_gini=gini(inlinks),
        mean_outlinks=float(inlinks.sum() / len(inlinks)) if len(inlinks) else 0.0,
    )
    return dataclasses.replace(measured, summary=summary, inlinks=inlinks)


def site_metrics_rows(
    site: str,
    crawl_id: str,
    computed_at: datetime,
    before: Measured | None,
    after: Measured,
    planned_links: int,
    links_known: str,
    waiting_for_review: int = 0,
) -> pl.DataFrame:
    """graph.site_metrics: one row per scenario ('before' when the existing links are known, 'after');
    `links_known` says how (see vocabularies.LINKS_KNOWN); the links held back for review, after."""

    def row(scenario: str, summary: GraphSummary, planned: int, waiting: int = 0) -> dict:
        return {
            "site": site,
            "scenario": scenario,
            "crawl_id": crawl_id,
            "computed_at": computed_at,
            **dataclasses.asdict(summary),
            "planned_links": planned,
            "links_known": links_known,
            "waiting_for_review": waiting,
        }

    rows = ([row("before", before.summary, 0)] if before is not None else []) + [
        row("after", after.summary, planned_links, waiting_for_review)
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
            "waiting_for_review": pl.Int32,
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
            "near_duplicate_of": pages["url"].gather(np.maximum(planner.duplicate_of, 0)),
            "left_for_editor": pl.Series(_editor_sentences(planner, pages["url"].to_list()), dtype=pl.String),
        }
    ).with_columns(
        pl.when(pl.Series(cluster_of >= 0)).then(pl.col("cluster_id")).otherwise(None).alias("cluster_id"),
        pl.when(pl.Series(planner.duplicate_of >= 0)).then(pl.col("near_duplicate_of")).otherwise(None),
        *_before_columns(before),
    )


def _editor_sentences(planner: Planner, urls: list[str]) -> list[str | None]:
    """Each page's task for an editor (left_for_editor.EditorTask.sentence), None for the others."""
    sentences: list[str | None] = [None] * planner.page_count
    for page, task in planner.left_for_editor.items():
        sentences[page] = task.sentence(urls)
    return sentences


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


def equity_moved(page_rows: pl.DataFrame, priority: np.ndarray | None) -> dict[str, list[float] | None]:
    """Where the plan moves internal PageRank: the share of the least linked quarter of pages (by in-links
    before the plan) and of the pages in striking distance (None without a Search Console export), each as
    [before, after] (None before when the site's links are unknown)."""
    rank = page_rows.select("inlinks_before", "pagerank_before", "pagerank_after")
    order = np.argsort(rank["inlinks_before"].to_numpy(), kind="stable")
    weakest = np.zeros(rank.height, dtype=bool)
    weakest[order[: max(1, rank.height // 4)]] = True

    def shares(pages: np.ndarray) -> list[float] | None:
        before = rank["pagerank_before"].to_numpy()
        after = rank["pagerank_after"].to_numpy()
        was = (
            float(before[pages].sum() / before.sum()) if not np.isnan(before).any() and before.sum() else None
        )
        return [was, float(after[pages].sum() / after.sum())] if after.sum() else None

    return {
        "weakest_quarter": shares(weakest),
        "striking_distance": shares(priority) if priority is not None else None,
    }
