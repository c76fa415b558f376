"""Similar-page pairs: each page's top-k most similar pages, in bounded memory, exact or approximate.

Exact search multiplies blocks of query vectors with all vectors (PyTorch, CPU or CUDA) and keeps each
block's top candidates: memory is block x n, never n x n. Above `ann_threshold` pages an inverted-file index
(faiss IVF, cosine via inner product) answers instead, and its recall@k is measured against exact search on
a sample of pages. Candidates then go through the rules users asked for:

- near-duplicates (score >= duplicate_threshold) are flagged as duplicate content, not link opportunities;
- a target page keeps at most `max_per_target` incoming suggestions (its best ones), so templated pages
  ("[Keyword] in [City]") cannot absorb every slot;
- each source keeps its best `k` remaining candidates at or above `min_score`;
- source and target pages can be restricted by URL path patterns;
- a pair is reciprocal when the target also lists the source.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import polars as pl

from interlink_pipeline.core.errors import InputError

# Chosen on the real crawls and the sample (see the README's similarity section and bench_similarity).
DEFAULT_MIN_SCORE = 0.5
DEFAULT_DUPLICATE_THRESHOLD = 0.95
BLOCK_BYTES = 256 * 1024**2
RECALL_SAMPLE = 1000

Method = Literal["auto", "exact", "ann"]


@dataclass(frozen=True)
class SimilarityOptions:
    """Every field is a `similarity_pairs` config setting of the same name."""

    k: int = 15
    min_score: float = DEFAULT_MIN_SCORE
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD
    max_per_target: int | None = 50
    candidates_per_page: int = 50  # searched per page before the rules above pick k
    source_paths: tuple[str, ...] = ()  # regexes; a source's path must match one (when any are given)
    target_paths: tuple[str, ...] = ()
    exclude_source_paths: tuple[str, ...] = ()
    exclude_target_paths: tuple[str, ...] = ()
    method: Method = "auto"
    ann_threshold: int = 200_000
    device: str = "cpu"


@dataclass
class SearchStats:
    method: str
    seconds: float
    recall_at_k: float | None = None  # ANN only: against exact search on a sample
    recall_sample: int = 0
    details: dict = field(default_factory=dict)


def exact_top(
    queries: np.ndarray, base: np.ndarray, n: int, *, query_ids: np.ndarray | None = None, device: str = "cpu"
) -> tuple[np.ndarray, np.ndarray]:
    """(indices, scores) of the `n` highest inner products of each query row with `base`, best first.

    `query_ids[i]` is query i's own row in `base` (-1: not in it); that entry scores -inf, which the
    min_score rule removes (no self pairs). Blocks of queries keep memory near BLOCK_BYTES.
    """
    import torch

    n = min(n, base.shape[0])
    out_idx = np.empty((len(queries), n), dtype=np.int64)
    out_score = np.empty((len(queries), n), dtype=np.float32)
    if n == 0 or not len(queries):
        return out_idx, out_score
    base_t = torch.from_numpy(np.ascontiguousarray(base, dtype=np.float32)).to(device)
    rows = max(1, min(len(queries), BLOCK_BYTES // (4 * base.shape[0])))
    with torch.inference_mode():
        for start in range(0, len(queries), rows):
            block = torch.from_numpy(np.ascontiguousarray(queries[start : start + rows], dtype=np.float32))
            scores = block.to(device) @ base_t.T
            if query_ids is not None:
                own = torch.from_numpy(query_ids[start : start + rows]).to(device)
                inside = own >= 0
                scores[torch.arange(len(block), device=device)[inside], own[inside]] = -math.inf
            top = torch.topk(scores, n, dim=1)
            out_idx[start : start + rows] = top.indices.cpu().numpy()
            out_score[start : start + rows] = top.values.cpu().numpy()
    return out_idx, out_score


def ann_top(vectors: np.ndarray, n: int, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray, dict]:
    """Approximate top-`n` of every row among all rows (self excluded): a faiss IVF index on cosine."""
    import faiss

    count, dim = vectors.shape
    nlist = int(min(max(64, 4 * math.sqrt(count)), count // 39))
    nprobe = max(16, nlist // 32)
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
    rng = np.random.default_rng(seed)
    train = vectors[rng.choice(count, size=min(count, nlist * 64), replace=False)]
    started = time.monotonic()
    index.train(train)
    index.add(vectors)
    index.nprobe = nprobe
    built = time.monotonic() - started
    scores, idx = index.search(vectors, n + 1)
    # drop each row's own entry (or the last one when the row itself was not retrieved)
    own = idx == np.arange(count)[:, None]
    keep = ~own
    keep[~own.any(axis=1), -1] = False
    idx = idx[keep].reshape(count, n)
    scores = scores[keep].reshape(count, n).astype(np.float32)
    return idx.astype(np.int64), scores, {"index": f"IVFFlat nlist={nlist} nprobe={nprobe}", "build_s": built}


def recall_at_k(approx: np.ndarray, exact: np.ndarray, k: int) -> float:
    """Share of the exact top-k found in the approximate top-k, averaged over rows."""
    hits = [len(set(a[:k]) & set(e[:k])) / max(1, min(k, len(e))) for a, e in zip(approx, exact, strict=True)]
    return float(np.mean(hits)) if hits else 1.0


def search(
    vectors: np.ndarray, n: int, options: SimilarityOptions
) -> tuple[np.ndarray, np.ndarray, SearchStats]:
    """Top-`n` neighbours of every row (self excluded), exact or approximate by `options.method`."""
    count = len(vectors)
    method = options.method
    if method == "auto":
        method = "ann" if count > options.ann_threshold else "exact"
    started = time.monotonic()
    if method == "exact":
        idx, scores = exact_top(vectors, vectors, n, query_ids=np.arange(count), device=options.device)
        return idx, scores, SearchStats("exact", time.monotonic() - started)
    idx, scores, details = ann_top(vectors, n)
    seconds = time.monotonic() - started
    sample = np.random.default_rng(1).choice(count, size=min(count, RECALL_SAMPLE), replace=False)
    exact_idx, _ = exact_top(vectors[sample], vectors, options.k, query_ids=sample, device=options.device)
    recall = recall_at_k(idx[sample], exact_idx, options.k)
    return idx, scores, SearchStats(f"ann:{details['index']}", seconds, recall, len(sample), details)


def path_mask(paths: pl.Series, include: tuple[str, ...], exclude: tuple[str, ...]) -> np.ndarray:
    mask = pl.Series([True] * len(paths))
    if include:
        mask = paths.str.contains("|".join(f"(?:{p})" for p in include))
    if exclude:
        mask = mask & ~paths.str.contains("|".join(f"(?:{p})" for p in exclude))
    return mask.fill_null(False).to_numpy()


def similar_pairs(
    page_ids: pl.Series, paths: pl.Series, vectors: np.ndarray, options: SimilarityOptions | None = None
) -> tuple[pl.DataFrame, SearchStats]:
    """Pairs (source_page_id, target_page_id, score, rank, relation, reciprocal) for one site."""
    options = options or SimilarityOptions()
    if options.k < 1:
        raise InputError("k must be at least 1.")
    if not -1 <= options.min_score <= options.duplicate_threshold <= 1:
        raise InputError("scores must satisfy -1 <= min_score <= duplicate_threshold <= 1.")
    sources = path_mask(paths, options.source_paths, options.exclude_source_paths)
    targets = path_mask(paths, options.target_paths, options.exclude_target_paths)
    if not sources.any() or not targets.any():
        raise InputError(
            f"the path filters leave {int(sources.sum())} source and {int(targets.sum())} target pages; "
            "loosen source_paths/target_paths."
        )
    wanted = max(options.k, options.candidates_per_page)
    source_rows = np.flatnonzero(sources)
    if sources.all() and targets.all():
        idx, scores, stats = search(vectors, wanted, options)
    else:  # filtered: exact search of the source pages among the target pages
        target_rows = np.flatnonzero(targets)
        position = np.full(len(vectors), -1)
        position[target_rows] = np.arange(len(target_rows))
        started = time.monotonic()
        local, scores = exact_top(
            vectors[source_rows],
            vectors[target_rows],
            wanted,
            query_ids=position[source_rows],
            device=options.device,
        )
        idx = target_rows[local]
        stats = SearchStats("exact", time.monotonic() - started)
    return _apply_rules(page_ids, source_rows, idx, scores, options), stats


def _apply_rules(
    page_ids: pl.Series,
    source_rows: np.ndarray,
    idx: np.ndarray,
    scores: np.ndarray,
    options: SimilarityOptions,
) -> pl.DataFrame:
    width = idx.shape[1]
    candidates = pl.DataFrame(
        {"source": np.repeat(source_rows, width), "target": idx.reshape(-1), "score": scores.reshape(-1)}
    ).filter(pl.col("score") >= options.min_score)
    best_first = pl.col("score").rank("ordinal", descending=True)
    duplicates = candidates.filter(pl.col("score") >= options.duplicate_threshold)
    similar = candidates.filter(pl.col("score") < options.duplicate_threshold)
    if options.max_per_target is not None:
        similar = similar.filter(best_first.over("target") <= options.max_per_target)
    similar = similar.filter(best_first.over("source") <= options.k)
    pairs = pl.concat(
        [
            similar.with_columns(pl.lit("similar").alias("relation")),
            duplicates.with_columns(pl.lit("near_duplicate").alias("relation")),
        ]
    ).with_columns(best_first.over("source", "relation").cast(pl.Int32).alias("rank"))
    reverse = pairs.select(
        pl.col("target").alias("source"),
        pl.col("source").alias("target"),
        "relation",
        pl.lit(True).alias("reciprocal"),
    )
    pairs = (
        pairs.join(reverse, on=["source", "target", "relation"], how="left")
        .with_columns(pl.col("reciprocal").fill_null(False))
        .sort(["source", "relation", "rank"], descending=[False, True, False])
    )
    ids = page_ids.to_numpy()
    return pairs.select(
        pl.Series("source_page_id", ids[pairs["source"].to_numpy()], dtype=pl.String),
        pl.Series("target_page_id", ids[pairs["target"].to_numpy()], dtype=pl.String),
        pl.col("score").cast(pl.Float32),
        "rank",
        "relation",
        "reciprocal",
    )
