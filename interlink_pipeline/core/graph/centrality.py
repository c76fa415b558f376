"""Centrality: betweenness on the relatedness graph (similar pairs and link candidates, undirected), exact on
small sites and sampled on large ones, and the sampled estimate a re-crawl reuses while the graph holds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.sorted_sets import differing_count, sorted_unique


@dataclass(frozen=True)
class KeptCentrality:
    """A sampled centrality estimate and the graph it was measured on, for the next run to reuse."""

    page_ids: np.ndarray
    scores: np.ndarray
    method: str
    edges: np.ndarray  # sorted hashes of the relatedness graph's undirected edges, by page id
    samples: int


def relatedness_edges(pages: int, similar: pl.DataFrame, candidates: pl.DataFrame) -> pl.DataFrame:
    """The undirected relatedness graph (u < v page indices of `pages`), sorted: similar pairs and link
    candidates. Each edge is one integer key while they are deduplicated: a frame's unique and sort of two
    columns took 0.95 GB more for a 100,000-page site's 7M pairs."""
    a = np.concatenate([similar["a"].to_numpy(), candidates["source"].to_numpy()]).astype(np.uint64)
    b = np.concatenate([similar["b"].to_numpy(), candidates["target"].to_numpy()]).astype(np.uint64)
    keys = np.unique(np.minimum(a, b) * np.uint64(pages) + np.maximum(a, b))  # sorted
    return pl.DataFrame({"u": (keys // pages).astype(np.int64), "v": (keys % pages).astype(np.int64)})


def edge_hashes(page_ids: np.ndarray, pairs: pl.DataFrame) -> np.ndarray:
    """A sorted hash per undirected edge, by its pages' ids: the same edge hashes alike whatever the
    pages' positions, so two runs' graphs compare."""
    by_page = pl.Series(page_ids).cast(pl.String).hash(seed=29).to_numpy()
    low, high = by_page[pairs["u"].to_numpy()], by_page[pairs["v"].to_numpy()]
    lo, hi = np.minimum(low, high), np.maximum(low, high)  # by id, not by position
    with np.errstate(over="ignore"):
        return sorted_unique(lo * np.uint64(0x9E3779B97F4A7C15) + hi)


def betweenness(n: int, pairs: pl.DataFrame, options: PlanOptions) -> tuple[np.ndarray, str]:
    """Betweenness centrality of the undirected graph `pairs` (exact, or sampled on large graphs)."""
    import networkit as nk

    graph = nk.Graph(n, weighted=False, directed=False)
    graph.addEdges((pairs["u"].to_numpy().astype(np.uint64), pairs["v"].to_numpy().astype(np.uint64)))
    if n < options.exact_centrality_below:
        algorithm = nk.centrality.Betweenness(graph, normalized=True)
        method = "exact betweenness"
    else:
        samples = min(options.centrality_samples, n)
        nk.engineering.setSeed(0, False)  # the same graph gives the same sample, so the same plan
        algorithm = nk.centrality.EstimateBetweenness(graph, samples, normalized=True, parallel=True)
        method = f"betweenness estimated from {samples} sampled sources"
    algorithm.run()
    # rounded: threads sum in varying order, and the last bits must not reorder pages between runs;
    # normalising divides by (n-1)(n-2), so graphs of one or two pages give NaN: no page is between others
    scores = np.nan_to_num(np.asarray(algorithm.scores(), dtype=np.float64), nan=0.0)
    return np.round(scores, 12), method


def _changed_share(before: np.ndarray, now: np.ndarray) -> float:
    """The share of edges in one of two sorted, unique hash arrays but not the other (of all edges)."""
    differing = differing_count(before, now)
    return differing / max(1, (len(before) + len(now) + differing) // 2)  # of the union


def _kept_scores(page_ids: np.ndarray, kept: KeptCentrality) -> np.ndarray:
    """The kept estimate's score of each page, by id: 0 (the least central) for a page new since."""
    return (
        pl.DataFrame({"page_id": page_ids})
        .join(
            pl.DataFrame({"page_id": kept.page_ids, "score": kept.scores}),
            on="page_id",
            how="left",
            maintain_order="left",
        )["score"]
        .fill_null(0.0)
        .to_numpy()
    )


def centrality(
    page_ids: np.ndarray, pairs: pl.DataFrame, options: PlanOptions, kept: KeptCentrality | None
) -> tuple[np.ndarray, str, KeptCentrality | None]:
    """Each page's betweenness, how it was had, and the estimate to keep for the next run (None when
    exact: exact scores are cheap below `exact_centrality_below` pages and are always measured).

    A kept sampled estimate is reused while at most `recompute_centrality_above` of the edges changed
    since it was measured: sampling already moves the scores more than such a change does. Pages new
    since then score 0 (the least central); removed ones are dropped."""
    n = len(page_ids)
    if n < options.exact_centrality_below:
        scores, method = betweenness(n, pairs, options)
        return scores, method, None
    edges = edge_hashes(page_ids, pairs)
    samples = min(options.centrality_samples, n)
    if kept is not None and kept.samples == samples:
        changed = _changed_share(kept.edges, edges)
        if changed <= options.recompute_centrality_above:
            limit = options.recompute_centrality_above
            reused = f"{kept.method}, reused: {changed:.1%} of edges changed (limit {limit:.0%})"
            return _kept_scores(page_ids, kept), reused, kept
        reason = f"recomputed: {changed:.1%} of relatedness edges changed since the last estimate"
    else:
        reason = "no estimate kept" if kept is None else "sample size changed"
    scores, method = betweenness(n, pairs, options)
    return scores, f"{method} ({reason})", KeptCentrality(page_ids.copy(), scores, method, edges, samples)
