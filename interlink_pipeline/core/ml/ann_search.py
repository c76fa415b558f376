"""Approximate top-k for large sites, checked every run: a faiss HNSW graph answers, its recall@k is measured
against exact search on a sample of pages, and below a floor the exact search answers instead (and says so).

HNSW was measured against faiss's inverted file (the index this module used before) on 50,000 pages of the
generated site (2 busy cores): exact 30.9 s; the inverted file probing 32 of 447 cells 13.5 s at recall@15
0.971; HNSW (32 links per node, efSearch 64) 9.4 s, building included, at recall@15 0.995. Recall falls as
a site grows at the same search width, so a graph short of the floor is tried wider (efSearch 128, then
256) before the exact search, n² in pages, answers. Each width is tried on the sample's pages alone, and
only the width that holds searches every page: an HNSW query's list does not depend on the other queries,
so the sample's recall is that of the full search.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from interlink_pipeline.core.ml.exact_search import exact_top

RECALL_SAMPLE = 1000  # pages whose approximate lists are checked against exact search, every run
RECALL_FLOOR = 0.98  # below this recall@k, the exact search answers instead
APPROXIMATE_ABOVE = 50_000  # pages above which searches are approximate by default (docs/benchmarks.md)
HNSW_LINKS = 32  # each node's links in the graph (faiss's M)
# candidates kept while searching (faiss's efSearch), recall against time: the first width whose lists reach
# the recall floor answers
HNSW_EF_SEARCH = (64, 128, 256)


@dataclass(frozen=True)
class Approximate:
    """When a full search may be approximate: past `above` pages (None: never), kept only if its recall@`k`
    (0: the search's width) on a sample reaches `recall_floor`."""

    above: int | None = None
    recall_floor: float = RECALL_FLOOR
    k: int = 0


@dataclass(frozen=True)
class SearchCheck:
    """How a search was made, as the run's metadata says it: exact, or approximate with its measured recall
    (and, when that was below the floor, the exact search that answered instead)."""

    method: str  # "exact", or "ann:<index>" when the approximate lists were kept
    recall_at_k: float | None = None  # the approximate search's, on `recall_sample` pages
    recall_sample: int = 0
    fell_back: bool = False
    why: str = ""
    seconds: float = 0.0

    def said(self) -> str:
        """The check in words for the metadata ("" for a plain exact search)."""
        if self.fell_back:
            return f"; {self.why}"
        if self.recall_at_k is None:
            return ""
        return f"; {self.method}, recall {self.recall_at_k:.3f} on {self.recall_sample:,} pages"

    def described(self) -> str:
        """The search in words on its own: "exact", the approximate one with its recall, or why it fell
        back to exact."""
        return self.said().removeprefix("; ") or self.method


class HnswGraph:
    """A faiss HNSW graph of unit `vectors` (inner product), built once and searched at any width."""

    def __init__(self, vectors: np.ndarray):
        import faiss

        self.base = np.ascontiguousarray(vectors, dtype=np.float32)
        self.index = faiss.IndexHNSWFlat(self.base.shape[1], HNSW_LINKS, faiss.METRIC_INNER_PRODUCT)
        self.index.add(self.base)

    def top(self, n: int, ef_search: int, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Approximate top-`n` of every row (or of `rows`) among all rows (self excluded), best first; a
        short list is padded with index 0 and score -inf."""
        count = len(self.base)
        rows = np.arange(count) if rows is None else rows
        self.index.hnsw.efSearch = max(ef_search, n + 1)
        scores, idx = self.index.search(self.base[rows], min(n + 1, count))
        scores[idx == rows[:, None]] = -np.inf  # the page itself, wherever it ranked
        scores[idx < 0] = -np.inf
        order = np.argsort(-scores, axis=1, kind="stable")[:, :n]
        idx, scores = np.take_along_axis(idx, order, axis=1), np.take_along_axis(scores, order, axis=1)
        idx[~np.isfinite(scores)] = 0
        return idx, scores


def recall_at_k(approx_scores: np.ndarray, exact_scores: np.ndarray, k: int) -> float:
    """Share of the approximate top-k that score at least the exact k-th score, averaged over rows.

    Scored, not matched by id, because pages with identical texts tie: any of them is a right answer
    (the convention of ann-benchmarks).
    """
    if not len(exact_scores):
        return 1.0
    width = min(k, exact_scores.shape[1])
    kth = exact_scores[:, width - 1 : width]
    return float(np.mean((approx_scores[:, :width] >= kth - 1e-5).sum(axis=1) / width))


def checked_top(
    vectors: np.ndarray,
    n: int,
    approximate: Approximate,
    device: str = "cpu",
    graph=HnswGraph,
) -> tuple[np.ndarray, np.ndarray, SearchCheck]:
    """Top-`n` of every row among all rows (self excluded): exact, or past `approximate.above` rows from the
    `graph` (HnswGraph) — searched at the first width (HNSW_EF_SEARCH) whose recall@k on a sample reaches
    the floor, else the exact search answers. (On a GPU the exact search is fast enough: it always answers
    there.)"""
    started = time.monotonic()
    count, k = len(vectors), min(approximate.k or n, n)
    check = SearchCheck("exact")
    if approximate.above is not None and count > max(approximate.above, 1) and device == "cpu":
        built, measured = graph(vectors), []
        sample = np.random.default_rng(1).choice(count, size=min(count, RECALL_SAMPLE), replace=False)
        _, exact_scores = exact_top(vectors[sample], vectors, k, query_ids=sample, device=device)
        for ef_search in HNSW_EF_SEARCH:
            recall = recall_at_k(built.top(n, ef_search, sample)[1], exact_scores, k)
            if recall >= approximate.recall_floor:
                idx, scores = built.top(n, ef_search)
                method, seconds = f"ann:HNSW M={HNSW_LINKS} efSearch={ef_search}", time.monotonic() - started
                return idx, scores, SearchCheck(method, recall, len(sample), seconds=seconds)
            measured.append(f"{recall:.3f} at efSearch {ef_search}")
        floor = approximate.recall_floor
        why = f"the approximate lists' recall@{k} was {', '.join(measured)}, < {floor}: searched exactly"
        check = SearchCheck("exact", recall, len(sample), fell_back=True, why=why)
    idx, scores = exact_top(vectors, vectors, n, query_ids=np.arange(count), device=device)
    return idx, scores, replace(check, seconds=time.monotonic() - started)
