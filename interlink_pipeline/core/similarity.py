"""Similar-page pairs: each page's top-k most similar pages, in bounded memory, exact or approximate.

Exact search multiplies blocks of query vectors with all vectors (PyTorch, CPU or CUDA) and keeps each
block's top candidates: memory is block x n, never n x n. Above `ann_threshold` pages an inverted file answers
instead (faiss k-means cells, each searched exactly among its nearest cells), and its recall@k is measured
against exact search on a sample of pages. Candidates then go through the rules users asked for:

- near-duplicates (pages sharing a duplicate key: the crawler's content hash, or the same H1 and body text)
  are flagged as duplicate content, not link opportunities — never on title cosine alone;
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
BLOCK_BYTES = 256 * 1024**2
RECALL_SAMPLE = 1000

Method = Literal["auto", "exact", "ann"]


@dataclass(frozen=True)
class SimilarityOptions:
    """Every field is a `similarity_pairs` config setting of the same name."""

    k: int = 15
    min_score: float = DEFAULT_MIN_SCORE
    max_per_target: int | None = 50
    candidates_per_page: int = 50  # searched per page before the rules above pick k
    source_paths: tuple[str, ...] = ()  # regexes; a source's path must match one (when any are given)
    target_paths: tuple[str, ...] = ()
    exclude_source_paths: tuple[str, ...] = ()
    exclude_target_paths: tuple[str, ...] = ()
    method: Method = "auto"
    ann_threshold: int = 200_000
    ann_cells_probed: int = 32  # more: higher recall, slower (recall is measured on every run)
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


def ann_top(
    vectors: np.ndarray, n: int, *, cells_probed: int = 32, device: str = "cpu", seed: int = 0
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Approximate top-`n` of every row among all rows (self excluded): an inverted file, cell by cell.

    faiss's spherical k-means splits the rows into about 2*sqrt(n) cells. All rows of one cell are then
    scored together, exactly, against the rows of the `cells_probed` cells whose centroids are nearest to
    theirs: one matrix product per cell (BLAS on CPU, CUDA when given) instead of one list scan per row,
    which is what makes a million rows take minutes rather than an hour on two cores.
    """
    import faiss
    import torch

    count, dim = vectors.shape
    cells = max(1, int(min(2 * math.sqrt(count), count // 40)))
    probed = min(cells_probed, cells)
    started = time.monotonic()
    rng = np.random.default_rng(seed)
    train = vectors[np.sort(rng.choice(count, size=min(count, cells * 40), replace=False))]
    kmeans = faiss.Kmeans(dim, cells, niter=10, spherical=True, seed=seed + 1, max_points_per_centroid=40)
    kmeans.train(np.ascontiguousarray(train, dtype=np.float32))
    base = torch.from_numpy(np.ascontiguousarray(vectors, dtype=np.float32)).to(device)
    centroids = torch.from_numpy(kmeans.centroids).to(device)
    rows = max(1, BLOCK_BYTES // (4 * cells))
    with torch.inference_mode():
        cell_of = torch.cat([(base[i : i + rows] @ centroids.T).argmax(1) for i in range(0, count, rows)])
        nearest = torch.topk(centroids @ centroids.T, probed, dim=1).indices.cpu().numpy()
    cell_of = cell_of.cpu().numpy()
    order = np.argsort(cell_of, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(cell_of, minlength=cells))])
    built = time.monotonic() - started
    out_idx = np.zeros((count, n), dtype=np.int64)
    out_score = np.full((count, n), -np.inf, dtype=np.float32)
    with torch.inference_mode():
        for cell in np.flatnonzero(np.diff(bounds)):
            members = order[bounds[cell] : bounds[cell + 1]]
            # the cell itself first, so each member's own row sits on the diagonal of the first block
            others = [c for c in nearest[cell] if c != cell][: probed - 1]
            candidates = np.concatenate([members, *(order[bounds[c] : bounds[c + 1]] for c in others)])
            candidate_vectors = base[torch.from_numpy(candidates).to(device)]
            width = min(n, len(candidates))
            step = max(1, BLOCK_BYTES // (4 * len(candidates)))
            for first in range(0, len(members), step):
                block = members[first : first + step]
                scores = base[torch.from_numpy(block).to(device)] @ candidate_vectors.T
                diagonal = torch.arange(len(block), device=device)
                scores[diagonal, diagonal + first] = -math.inf
                top = torch.topk(scores, width, dim=1)
                out_idx[block, :width] = candidates[top.indices.cpu().numpy()]
                out_score[block, :width] = top.values.cpu().numpy()
    return out_idx, out_score, {"index": f"IVF cells={cells} probed={probed}", "build_s": built}


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
    idx, scores, details = ann_top(vectors, n, cells_probed=options.ann_cells_probed, device=options.device)
    seconds = time.monotonic() - started
    sample = np.random.default_rng(1).choice(count, size=min(count, RECALL_SAMPLE), replace=False)
    _, exact_scores = exact_top(vectors[sample], vectors, options.k, query_ids=sample, device=options.device)
    recall = recall_at_k(scores[sample], exact_scores, options.k)
    return idx, scores, SearchStats(f"ann:{details['index']}", seconds, recall, len(sample), details)


def path_mask(paths: pl.Series, include: tuple[str, ...], exclude: tuple[str, ...]) -> np.ndarray:
    mask = pl.Series([True] * len(paths))
    if include:
        mask = paths.str.contains("|".join(f"(?:{p})" for p in include))
    if exclude:
        mask = mask & ~paths.str.contains("|".join(f"(?:{p})" for p in exclude))
    return mask.fill_null(False).to_numpy()


def similar_pairs(
    page_ids: pl.Series,
    paths: pl.Series,
    vectors: np.ndarray,
    options: SimilarityOptions | None = None,
    duplicate_keys: pl.Series | None = None,
) -> tuple[pl.DataFrame, SearchStats]:
    """Pairs (source_page_id, target_page_id, score, rank, relation, reciprocal) for one site.

    A pair is a near-duplicate only when both pages share a `duplicate_keys` value (strong evidence: the
    crawler's content hash, or the same H1 and body text); however close their titles, template pages
    that differ in what they are about ('The Brazos Floor Plan' / 'The Colorado Floor Plan') stay similar."""
    options = options or SimilarityOptions()
    if options.k < 1:
        raise InputError("k must be at least 1.")
    if not -1 <= options.min_score <= 1:
        raise InputError("min_score must be between -1 and 1.")
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
    return _apply_rules(page_ids, source_rows, idx, scores, options, duplicate_keys), stats


def _apply_rules(
    page_ids: pl.Series,
    source_rows: np.ndarray,
    idx: np.ndarray,
    scores: np.ndarray,
    options: SimilarityOptions,
    duplicate_keys: pl.Series | None,
) -> pl.DataFrame:
    width = idx.shape[1]
    candidates = pl.DataFrame(
        {
            "source": np.repeat(source_rows.astype(np.uint32), width),
            "target": idx.reshape(-1).astype(np.uint32),
            "score": scores.reshape(-1),
        }
    ).filter(pl.col("score") >= options.min_score)
    best_first = pl.col("score").rank("ordinal", descending=True)
    if duplicate_keys is not None and duplicate_keys.null_count() < len(duplicate_keys):
        keys = pl.DataFrame({"row": np.arange(len(duplicate_keys), dtype=np.uint32), "key": duplicate_keys})
        candidates = candidates.join(
            keys.rename({"row": "source", "key": "source_key"}),
            on="source",
            how="left",
            maintain_order="left",
        ).join(
            keys.rename({"row": "target", "key": "target_key"}),
            on="target",
            how="left",
            maintain_order="left",
        )
        candidates = candidates.with_columns(
            (pl.col("source_key") == pl.col("target_key")).fill_null(False).alias("duplicate")
        ).drop("source_key", "target_key")
    else:
        candidates = candidates.with_columns(pl.lit(False).alias("duplicate"))
    duplicate = pl.col("duplicate")
    similar = candidates.filter(~duplicate)
    if options.max_per_target is not None:
        similar = similar.filter(best_first.over("target") <= options.max_per_target)
    similar = similar.filter(best_first.over("source") <= options.k)
    pairs = pl.concat([similar, candidates.filter(duplicate)]).with_columns(
        (pl.col("source").cast(pl.UInt64) * 2**32 + pl.col("target")).alias("key"),
    )
    # cosine is symmetric, so a reversed pair always has the same relation: one u64 key per pair suffices
    reverse = pl.col("target").cast(pl.UInt64) * 2**32 + pl.col("source")
    pairs = (
        pairs.with_columns(
            best_first.over("source", "duplicate").cast(pl.Int32).alias("rank"),
            reverse.is_in(pairs["key"].implode()).alias("reciprocal"),
        )
        .drop("key")
        .sort(["source", "duplicate", "rank"])
    )
    ids = page_ids.cast(pl.String)
    return pairs.select(
        ids.gather(pairs["source"]).alias("source_page_id"),
        ids.gather(pairs["target"]).alias("target_page_id"),
        pl.col("score").clip(-1.0, 1.0).cast(pl.Float32),  # identical texts: 1, not 1 + rounding
        "rank",
        pl.when("duplicate").then(pl.lit("near_duplicate")).otherwise(pl.lit("similar")).alias("relation"),
        "reciprocal",
    )
