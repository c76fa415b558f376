"""A backtest's figures: the rebuilt plan and candidates scored against the hidden links, next to the
same-budget baseline (each page's most similar pages by title), each figure with its 95% interval."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from interlink_pipeline.core.ingest.link_graph import LinkGraph
from interlink_pipeline.core.ml.ann_search import Approximate, SearchCheck, checked_top
from interlink_pipeline.core.ml.exact_search import exact_top
from interlink_pipeline.core.relevance.intervals import Interval, ratio_figures, ratio_intervals

PAIR = ["source", "target"]


@dataclass(frozen=True)
class Baseline:
    """The plain "most similar pages" lists a backtest measures the plan against."""

    lists: pl.DataFrame  # source, target, cosine, position (baseline_lists)
    closest: np.ndarray  # per page row, its most similar other page by title (-1: none found)
    search: SearchCheck  # how the lists were searched


def baseline_lists(
    title_vectors: np.ndarray, visible: LinkGraph, depth: int, approximate: Approximate | None = None
) -> Baseline:
    """source, target, cosine, position: each page's `depth` most similar pages by title, without itself
    and its visible in-content links; pages equally similar (the same title) in target order. Each page is
    searched as deep as it needs (depth, itself and its links), pages of like need together: searching
    every page as deep as the page with the most links made each list 1,205 long on a 100,000-page site,
    and took 121 s and 5.5 GB. The narrowest search (nearly every page's) is approximate past
    `approximate.above` pages where its recall holds (ann_search.checked_top); the few deeper ones exact.
    Each page's most similar page, its links aside, comes of the same search (an orphan's baseline
    source: searched apart, the orphans' search grew with the square of the site)."""
    n = len(title_vectors)
    needed = depth + 1 + np.bincount(visible.source[visible.content], minlength=n)
    width = np.minimum(n, 2 ** np.ceil(np.log2(needed)).astype(np.int64))
    narrowest = int(width.min()) if n else 0
    idx, scores, check = checked_top(title_vectors, narrowest, approximate or Approximate())
    parts = []
    for searched in np.unique(width):
        rows = np.flatnonzero(width == searched)
        if searched == narrowest:
            found, cosine = idx[rows], scores[rows]
        else:
            found, cosine = exact_top(title_vectors[rows], title_vectors, int(searched), query_ids=rows)
        parts.append(
            pl.DataFrame(
                {"source": np.repeat(rows, found.shape[1]), "target": found.ravel(), "cosine": cosine.ravel()}
            )
        )
    ranked = (
        pl.concat(parts)
        .filter(pl.col("cosine").is_finite())  # an approximate list's padding
        .sort(pl.col("source"), pl.col("cosine").round(5), pl.col("target"), descending=[False, True, False])
        .filter(pl.col("source") != pl.col("target"))
    )
    first = ranked.filter(pl.col("source").is_first_distinct())
    closest = np.full(n, -1, dtype=np.int64)
    closest[first["source"].to_numpy()] = first["target"].to_numpy()
    lists = (
        ranked.join(visible.content_pairs(), on=PAIR, how="anti", maintain_order="left")
        .with_columns(pl.int_range(pl.len()).over("source").add(1).alias("position"))
        .filter(pl.col("position") <= depth)
    )
    return Baseline(lists, closest, check)


def same_budget_baseline(lists: pl.DataFrame, size: int) -> pl.DataFrame:
    """`size` links from the baseline lists, every page's best first, then every page's second, …"""
    return lists.sort(["position", "cosine", "source"], descending=[False, True, False]).head(size)


def precision_recall(links: pl.DataFrame, hidden: pl.DataFrame) -> tuple[int, float, float]:
    hits = links.select(PAIR).unique().join(hidden.select(PAIR), on=PAIR).height
    return hits, hits / links.height if links.height else 0.0, hits / hidden.height if hidden.height else 0.0


def top_k(ranked: pl.DataFrame, score: str, hidden: pl.DataFrame, k: int) -> pl.DataFrame:
    """Each source's top-k pairs (source, target, `score`) by `score`, over the sources with a hidden link
    (the pairs alone are sorted: a large site's candidates carry their origins' text beside them)."""
    return (
        ranked.select("source", "target", score)
        .filter(pl.col("source").is_in(hidden["source"].unique().implode()))
        .sort(["source", score, "target"], descending=[False, True, False])
        .group_by("source", maintain_order=True)
        .head(k)
    )


def hit_flags(hidden: pl.DataFrame) -> pl.DataFrame:
    """source, target, hit = 1: the hidden pairs, to left-join onto links and count the hits."""
    return hidden.select(PAIR).with_columns(pl.lit(1).alias("hit"))


def per_source(name: str, links: pl.DataFrame, hidden: pl.DataFrame) -> pl.DataFrame:
    """source, `name`_links, `name`_hits: how many of `links` each source has, and how many were hidden."""
    return (
        links.select(PAIR)
        .unique()
        .join(hit_flags(hidden), on=PAIR, how="left")
        .group_by("source")
        .agg(pl.len().alias(f"{name}_links"), pl.col("hit").fill_null(0).sum().alias(f"{name}_hits"))
    )


FIGURE_RATIOS = {
    "plan_precision": ("plan_hits", "plan_links"),
    "plan_recall": ("plan_hits", "hidden"),
    "baseline_precision": ("baseline_hits", "baseline_links"),
    "baseline_recall": ("baseline_hits", "hidden"),
    "candidate_precision_at_k": ("candidate_top_hits", "top_slots"),
    "candidate_recall_at_k": ("candidate_top_hits", "hidden"),
    "baseline_precision_at_k": ("baseline_top_hits", "top_slots"),
    "baseline_recall_at_k": ("baseline_top_hits", "hidden"),
    "candidate_coverage": ("candidate_hits", "hidden"),
}


def figures_against_baseline(
    planned: pl.DataFrame,
    candidates: pl.DataFrame,
    lists: pl.DataFrame,
    hidden: pl.DataFrame,
    k: int,
    seed: int,
) -> tuple[dict[str, float], dict[str, Interval]]:
    """The plan and the candidates scored against the hidden links, next to the baseline `lists` (the plan
    against as many of their links, the candidates' top k against theirs), and each figure's interval
    (resampling source pages)."""
    baseline = same_budget_baseline(lists, planned.height)
    counts = pl.concat(
        [
            per_source("plan", planned, hidden),
            per_source("baseline", baseline, hidden),
            per_source("candidate_top", top_k(candidates, "probability", hidden, k), hidden),
            per_source("baseline_top", top_k(lists, "cosine", hidden, k), hidden),
            # every source with candidates (the intervals resample them), its hits counted among the
            # hidden pairs only: never a copy of a large site's millions of candidate pairs
            candidates.select(pl.col("source").unique()),
            per_source("candidate", candidates.join(hidden, on=PAIR, how="semi"), hidden).drop(
                "candidate_links"
            ),
            hidden.group_by("source").agg(pl.len().alias("hidden"), pl.lit(k).alias("top_slots")),
        ],
        how="align",
    ).fill_null(0)
    figures, intervals = ratio_figures(counts, "source", FIGURE_RATIOS, seed, empty=0.0)
    figures |= {
        "plan_links": planned.height,
        "plan_hits": int(counts["plan_hits"].sum()),
        "baseline_hits": int(counts["baseline_hits"].sum()),
        "candidates": candidates.height,
    }
    return figures, intervals


def orphan_figures(
    planned: pl.DataFrame, hidden: pl.DataFrame, orphaned: np.ndarray, closest: np.ndarray, seed: int
) -> tuple[dict[str, float | None], dict[str, Interval]]:
    """The orphans made by hiding their in-links: how many the plan rescued, how often a rescue's source
    is a page that linked to the orphan in content, and how often the orphan's most similar page by title
    (`closest`, per page row: Baseline.closest) is (the baseline: "link it from its closest page");
    intervals resampling the orphans."""
    truth = hidden.filter(pl.col("target").is_in(pl.Series(orphaned).implode()))
    orphans = truth["target"].unique()
    rescues = planned.filter(
        (pl.col("reason") == "orphan-rescue") & pl.col("target").is_in(orphans.implode())
    ).select(PAIR)
    baseline = pl.DataFrame(
        {"source": closest[orphans.to_numpy()], "target": orphans.to_numpy()},
        schema=dict.fromkeys(PAIR, pl.Int64),
    )
    hit = hit_flags(truth)
    counts = pl.concat(
        [
            rescues.join(hit, on=PAIR, how="left")
            .group_by("target")
            .agg(pl.len().alias("rescues"), pl.col("hit").fill_null(0).sum().alias("rescue_hits")),
            baseline.join(hit, on=PAIR, how="left").select(
                "target", pl.col("hit").fill_null(0).alias("baseline_hits"), pl.lit(1).alias("orphans")
            ),
        ],
        how="align",
    ).fill_null(0)
    ratios = {
        "orphan_rescue_precision": ("rescue_hits", "rescues"),
        "orphan_baseline_precision": ("baseline_hits", "orphans"),
    }
    figures, intervals = ratio_figures(counts, "target", ratios, seed, empty=None)
    return figures | {"orphaned_pages": len(orphans), "orphan_rescues": rescues.height}, intervals


# per reason: figure -> (numerator, denominator) of its per-source counts
REASON_RATIOS = {
    "precision": ("hits", "links"),
    "known_precision": ("hits", "known"),
    "reachable_precision": ("reachable_hits", "reachable"),
}


def figures_by_reason(
    planned: pl.DataFrame, hidden: pl.DataFrame, reach: np.ndarray, seed: int = 0
) -> pl.DataFrame:
    """The plan's figures per reason: links, hits, precision, recall (the share of the hidden links it
    found), mean probability; for the links into a page that lost an in-link to the hiding (`known`), their
    precision; and for those into a page that lost one from a page within `reach` (`reachable`), theirs: a
    structural link's target is forced and only its source chosen, and a page the editors linked only from
    pages the plan may not use (deeper ones, for a depth shortcut) has no source to find. Each precision
    has its interval (`_low`, `_high`), resampling the source pages."""
    lost = hidden.select(pl.col("target").unique(), pl.lit(True).alias("known"))
    lost_within_reach = (
        hidden.filter(pl.Series(reach[hidden["source"].to_numpy()]))
        .select(pl.col("target").unique(), pl.lit(True).alias("reachable"))
    )  # fmt: skip
    by_source = (
        planned.join(hit_flags(hidden), on=PAIR, how="left")
        .join(lost, on="target", how="left")
        .join(lost_within_reach, on="target", how="left")
        .group_by("reason", "source")
        .agg(
            pl.len().alias("links"),
            pl.col("hit").fill_null(0).sum().alias("hits"),
            pl.col("known").fill_null(False).sum().alias("known"),
            pl.col("reachable").fill_null(False).sum().alias("reachable"),
            (pl.col("hit").fill_null(0) * pl.col("reachable").fill_null(False)).sum().alias("reachable_hits"),
        )
    )
    intervals = pl.DataFrame(
        [
            {"reason": reason}
            | {
                f"{name}_{end}": (interval[i] if interval else None)
                for name, interval in ratio_intervals(rows, "source", REASON_RATIOS, seed).items()
                for i, end in enumerate(("low", "high"))
            }
            for (reason,), rows in by_source.group_by("reason")
        ],
        schema={"reason": pl.String}
        | {f"{n}_{e}": pl.Float64 for n in REASON_RATIOS for e in ("low", "high")},
    )
    return (
        by_source.group_by("reason")
        .agg(pl.col("links", "hits", "known", "reachable", "reachable_hits").sum())
        .join(
            planned.group_by("reason").agg(pl.col("probability").mean().alias("mean_probability")), "reason"
        )
        .with_columns(
            (pl.col("hits") / pl.col("links")).alias("precision"),
            (pl.col("hits") / max(hidden.height, 1)).alias("recall"),
            (pl.col("hits") / pl.col("known")).fill_nan(None).alias("known_precision"),
            (pl.col("reachable_hits") / pl.col("reachable")).fill_nan(None).alias("reachable_precision"),
        )
        .drop("reachable_hits")
        .join(intervals, on="reason", how="left")
        .sort(["links", "reason"], descending=[True, False])  # group_by's order is not stable
    )
