"""Link-graph metrics: click depth from the home page, orphans, in-link inequality, internal PageRank.

Graphs are edge arrays over page indices 0..n-1 (directed source -> target); everything is vectorised
with scipy's sparse graph routines, so 100k-page sites take well under a second per metric.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

UNREACHABLE = -1


def adjacency(n: int, sources: np.ndarray, targets: np.ndarray) -> sparse.csr_matrix:
    """Unweighted directed adjacency (duplicate edges collapse)."""
    matrix = sparse.csr_matrix((np.ones(len(sources), dtype=np.float32), (sources, targets)), shape=(n, n))
    matrix.data[:] = 1.0
    return matrix


def click_depth(graph: sparse.csr_matrix, home: int) -> np.ndarray:
    """Clicks from the home page to each page (UNREACHABLE when no path)."""
    distances = csgraph.shortest_path(graph, method="D", unweighted=True, indices=home)
    return np.where(np.isinf(distances), UNREACHABLE, distances).astype(np.int32)


def in_degree(graph: sparse.csr_matrix) -> np.ndarray:
    return np.asarray(graph.sum(axis=0)).ravel().astype(np.int32)


def out_degree(graph: sparse.csr_matrix) -> np.ndarray:
    return np.asarray(graph.sum(axis=1)).ravel().astype(np.int32)


def gini(values: np.ndarray) -> float:
    """0 = every page has the same in-links, 1 = one page has them all."""
    if not len(values) or values.sum() == 0:
        return 0.0
    ordered = np.sort(values.astype(np.float64))
    n = len(ordered)
    return float((2 * np.arange(1, n + 1) - n - 1) @ ordered / (n * ordered.sum()))


def pagerank(
    graph: sparse.csr_matrix, damping: float = 0.85, iterations: int = 100, tol: float = 1e-10
) -> np.ndarray:
    """Internal PageRank (sums to 1); pages without out-links spread their rank evenly."""
    n = graph.shape[0]
    out = out_degree(graph).astype(np.float64)
    transition = sparse.diags(np.divide(1.0, out, out=np.zeros(n), where=out > 0)) @ graph
    rank = np.full(n, 1.0 / n)
    dangling = out == 0
    for _ in range(iterations):
        spread = (rank[dangling].sum() / n) if dangling.any() else 0.0
        updated = (1 - damping) / n + damping * (transition.T @ rank + spread)
        if np.abs(updated - rank).sum() < tol:
            return updated
        rank = updated
    return rank


@dataclass(frozen=True)
class GraphSummary:
    pages: int
    links: int
    orphan_pages: int  # no in-link from another page (the home page excepted)
    unreachable_pages: int
    max_depth: int
    median_depth: float
    share_depth_le_3: float
    share_depth_le_5: float
    inlink_gini: float
    mean_outlinks: float
    depth_histogram: str  # JSON {"0": n, "1": n, ..., "unreachable": n}


def summarize(
    graph: sparse.csr_matrix, home: int, pages: int | None = None
) -> tuple[GraphSummary, np.ndarray, np.ndarray, np.ndarray]:
    """(summary, depth, in-degree, PageRank) of a site's link graph, for its first `pages` nodes (the kept
    pages; later nodes only carry click paths). PageRank is renormalised over those pages."""
    pages = graph.shape[0] if pages is None else pages
    depth = click_depth(graph, home)[:pages]
    inbound = in_degree(graph)[:pages]
    rank = pagerank(graph)[:pages]
    rank = rank / rank.sum() if rank.sum() else rank
    reachable = depth >= 0
    orphans = int(((inbound == 0) & (np.arange(pages) != home)).sum())
    counts = {str(d): int(c) for d, c in zip(*np.unique(depth[reachable], return_counts=True), strict=True)}
    counts["unreachable"] = int((~reachable).sum())
    links = graph[:pages][:, :pages].nnz
    summary = GraphSummary(
        pages=pages,
        links=int(links),
        orphan_pages=orphans,
        unreachable_pages=int((~reachable).sum()),
        max_depth=int(depth[reachable].max()) if reachable.any() else 0,
        median_depth=float(np.median(depth[reachable])) if reachable.any() else 0.0,
        share_depth_le_3=float(((depth >= 0) & (depth <= 3)).mean()),
        share_depth_le_5=float(((depth >= 0) & (depth <= 5)).mean()),
        inlink_gini=gini(inbound),
        mean_outlinks=float(links / pages) if pages else 0.0,
        depth_histogram=json.dumps(counts),
    )
    return summary, depth, inbound, rank
