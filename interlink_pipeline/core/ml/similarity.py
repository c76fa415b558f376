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

Re-crawls change few pages, so the exact search is incremental: each page's nearest pages are kept
(`ml.page_neighbours`, with a margin), and the next search scores only the changed and added pages against
all pages, merging them into the unchanged pages' lists. The result equals a full exact search (a test
compares them); a page whose list lost too many neighbours is searched again in full.
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
# Neighbours kept per page beyond those searched: a removed neighbour rarely forces a full search of a page.
NEIGHBOUR_MARGIN = 10
# Above this share of changed pages, one full search costs less than merging.
FULL_SEARCH_SHARE = 0.25

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
    increment: Increment | None = None  # exact search: what it reused
    neighbours: pl.DataFrame | None = None  # exact search: ml.page_neighbours rows for the next search


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


@dataclass
class Increment:
    """What a search recomputed and what it reused (shown in the asset's metadata)."""

    mode: Literal["full", "incremental"]
    why: str
    pages_searched: int  # searched against every page: changed and added pages, and lists gone short
    pages_merged: int = 0  # unchanged pages whose kept lists took in the changed pages' scores
    pages_changed: int = 0  # changed or added since the last search
    pages_removed: int = 0

    @classmethod
    def combined(cls, parts: list[Increment]) -> Increment:
        """One account of several searches (one per group of pages): full when any was."""
        if len(parts) == 1:
            return parts[0]
        changed, removed = sum(p.pages_changed for p in parts), sum(p.pages_removed for p in parts)
        full = [p.why for p in parts if p.mode == "full"]
        return cls(
            "full" if full else "incremental",
            "; ".join(dict.fromkeys(full))
            if full
            else f"{changed:,} changed or added and {removed:,} removed pages in {len(parts)} groups",
            sum(p.pages_searched for p in parts),
            pages_merged=sum(p.pages_merged for p in parts),
            pages_changed=changed,
            pages_removed=removed,
        )


def neighbour_state(
    page_ids: pl.Series,
    text_hashes: pl.Series,
    model: str,
    idx: np.ndarray,
    scores: np.ndarray,
    floors: np.ndarray,
) -> pl.DataFrame:
    """Rows of ml.page_neighbours: each page's listed neighbours (best first, -inf padding dropped), the
    floor below which pages were not listed, and the text it was searched with."""
    count, width = scores.shape
    listed = np.isfinite(scores)
    ids = page_ids.cast(pl.String)
    keep = listed.reshape(-1)
    flat = pl.DataFrame(
        {
            "row": np.repeat(np.arange(count, dtype=np.int64), width)[keep],
            "neighbour_page_ids": ids.gather(idx.reshape(-1)[keep]),
            "scores": scores.reshape(-1)[keep],
        }
    )
    lists = flat.group_by("row", maintain_order=True).agg("neighbour_page_ids", "scores")
    return (
        pl.DataFrame(
            {
                "row": np.arange(count, dtype=np.int64),
                "page_id": ids,
                "text_hash": text_hashes.cast(pl.String),
                "floor": floors.astype(np.float32),
            }
        )
        .join(lists, on="row", how="left", maintain_order="left")
        .select(
            "page_id",
            "text_hash",
            pl.lit(model).alias("model"),
            pl.lit(width, dtype=pl.Int32).alias("width"),
            "floor",
            pl.col("neighbour_page_ids").fill_null(pl.lit([], dtype=pl.List(pl.String))),
            pl.col("scores").fill_null(pl.lit([], dtype=pl.List(pl.Float32))),
        )
    )


def nearest_pages(
    vectors: np.ndarray,
    width: int,
    page_ids: pl.Series,
    text_hashes: pl.Series,
    model: str,
    previous: pl.DataFrame | None = None,
    device: str = "cpu",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, Increment]:
    """Each page's `width` nearest pages (indices, scores; -inf pads a short list) and its floor, exactly,
    reusing `previous` (ml.page_neighbours rows) for the pages whose text is unchanged."""
    count = len(vectors)
    why = _full_search_reason(previous, count, width, model)
    unchanged = fresh = removed = None
    if why is None:
        unchanged, fresh, removed = _changes(previous, page_ids, text_hashes)
        if len(fresh) + removed > FULL_SEARCH_SHARE * count:
            changed = len(fresh) + removed
            why = f"{changed:,} of {count:,} pages changed, added or removed: a full search is cheaper"
    if why is not None:
        idx, scores = _padded(
            *exact_top(vectors, vectors, width, query_ids=np.arange(count), device=device), width
        )
        return idx, scores, _floors(scores, count, width), Increment("full", why, count)
    idx = np.zeros((count, width), dtype=np.int64)
    scores = np.full((count, width), -np.inf, dtype=np.float32)
    floors = np.full(count, -np.inf, dtype=np.float32)
    fresh_rows = fresh
    rows, old_idx, old_scores, old_floors = _kept_lists(previous, unchanged, page_ids, width)
    merged_idx, merged_scores, merged_floors = _merge(
        vectors, rows, fresh_rows, old_idx, old_scores, old_floors, width, device
    )
    idx[rows], scores[rows], floors[rows] = merged_idx, merged_scores, merged_floors
    short = rows[
        np.isfinite(merged_floors) & (np.isfinite(merged_scores).sum(axis=1) < width - NEIGHBOUR_MARGIN)
    ]
    searched = np.union1d(fresh_rows, short)
    if len(searched):
        found_idx, found_scores = _padded(
            *exact_top(vectors[searched], vectors, width, query_ids=searched, device=device), width
        )
        idx[searched], scores[searched] = found_idx, found_scores
        floors[searched] = _floors(found_scores, count, width)
    increment = Increment(
        "incremental",
        f"{len(fresh):,} changed or added and {removed:,} removed pages of {count:,}",
        len(searched),
        pages_merged=len(rows) - len(short),
        pages_changed=len(fresh),
        pages_removed=removed,
    )
    return idx, scores, floors, increment


def _full_search_reason(previous: pl.DataFrame | None, count: int, width: int, model: str) -> str | None:
    if previous is None or previous.is_empty():
        return "no earlier search of this site"
    if previous["model"][0] != model:
        return f"the embedding model changed ({previous['model'][0]} → {model})"
    if previous["width"][0] != width:
        return f"the neighbours searched changed ({previous['width'][0]} → {width} per page)"
    return None


def _changes(
    previous: pl.DataFrame, page_ids: pl.Series, text_hashes: pl.Series
) -> tuple[np.ndarray, np.ndarray, int]:
    """(unchanged rows, changed or added rows, removed pages) between the previous search and now."""
    current = pl.DataFrame({"page_id": page_ids.cast(pl.String), "text_hash": text_hashes.cast(pl.String)})
    current = current.with_row_index("row")
    kept = current.join(previous.select("page_id", "text_hash"), on=["page_id", "text_hash"], how="semi")
    unchanged = kept["row"].to_numpy().astype(np.int64)
    fresh = np.setdiff1d(np.arange(current.height, dtype=np.int64), unchanged)
    removed = previous.join(current, on="page_id", how="anti").height
    return unchanged, fresh, removed


def _kept_lists(
    previous: pl.DataFrame, unchanged: np.ndarray, page_ids: pl.Series, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The unchanged pages' kept lists as padded arrays over current rows, without the neighbours that
    changed or left (changed ones come back with their new scores)."""
    ids = page_ids.cast(pl.String)
    rows = pl.DataFrame({"page_id": ids.gather(unchanged), "u": np.arange(len(unchanged), dtype=np.int64)})
    stable = pl.DataFrame({"neighbour_page_ids": ids.gather(unchanged), "neighbour": unchanged})
    kept = previous.join(rows, on="page_id").select("u", "floor", "neighbour_page_ids", "scores").sort("u")
    flat = (
        kept.select("u", "neighbour_page_ids", "scores")
        .explode("neighbour_page_ids", "scores")
        .join(stable, on="neighbour_page_ids", maintain_order="left")
        .with_columns(pl.int_range(pl.len()).over("u").alias("position"))
    )
    old_idx = np.zeros((len(unchanged), width), dtype=np.int64)
    old_scores = np.full((len(unchanged), width), -np.inf, dtype=np.float32)
    u, position = flat["u"].to_numpy(), flat["position"].to_numpy()
    old_idx[u, position] = flat["neighbour"].to_numpy()
    old_scores[u, position] = flat["scores"].to_numpy()
    return unchanged, old_idx, old_scores, kept["floor"].to_numpy().astype(np.float32)


def _merge(
    vectors: np.ndarray,
    rows: np.ndarray,
    fresh_rows: np.ndarray,
    old_idx: np.ndarray,
    old_scores: np.ndarray,
    floors: np.ndarray,
    width: int,
    device: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge the fresh pages' scores into kept lists. Only scores at or above a page's floor are certain
    (an unlisted unchanged page may score anywhere below it), so lower ones are dropped; a full list
    raises the floor to its last score."""
    import torch

    out_idx, out_scores = old_idx.copy(), old_scores.copy()
    if len(fresh_rows) and len(rows):
        fresh = torch.from_numpy(np.ascontiguousarray(vectors[fresh_rows], dtype=np.float32)).to(device)
        step = max(1, BLOCK_BYTES // (4 * (len(fresh_rows) + width)))
        with torch.inference_mode():
            for start in range(0, len(rows), step):
                block = slice(start, start + step)
                queries = torch.from_numpy(np.ascontiguousarray(vectors[rows[block]], dtype=np.float32))
                scored = torch.cat(
                    [torch.from_numpy(old_scores[block]).to(device), queries.to(device) @ fresh.T], 1
                )
                top = torch.topk(scored, width, dim=1)
                choices = top.indices.cpu().numpy()  # < kept: a kept neighbour; else a fresh page
                kept = old_idx.shape[1]
                out_idx[block] = np.where(
                    choices < kept,
                    np.take_along_axis(old_idx[block], np.minimum(choices, kept - 1), axis=1),
                    fresh_rows[np.maximum(choices - kept, 0)],
                )
                out_scores[block] = top.values.cpu().numpy()
    out_scores[out_scores < floors[:, None]] = -np.inf
    full = np.isfinite(out_scores[:, -1])
    new_floors = floors.copy()
    new_floors[full] = np.maximum(floors[full], out_scores[full, -1])
    return out_idx, out_scores, new_floors


def _padded(idx: np.ndarray, scores: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Search results widened to `width` columns (-inf where a small site has fewer pages)."""
    if idx.shape[1] == width:
        return idx, scores
    pad = width - idx.shape[1]
    return (
        np.pad(idx, ((0, 0), (0, pad))),
        np.pad(scores, ((0, 0), (0, pad)), constant_values=-np.inf),
    )


def _floors(scores: np.ndarray, count: int, width: int) -> np.ndarray:
    """After a full search: unlisted pages score at most the last listed one (-inf: every page is listed)."""
    if count - 1 <= width:
        return np.full(len(scores), -np.inf, dtype=np.float32)
    return scores[:, -1].astype(np.float32)


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
    *,
    text_hashes: pl.Series | None = None,
    model: str = "",
    previous: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, SearchStats]:
    """Pairs (source_page_id, target_page_id, score, rank, relation, reciprocal) for one site.

    A pair is a near-duplicate only when both pages share a `duplicate_keys` value (strong evidence: the
    crawler's content hash, or the same H1 and body text); however close their titles, template pages
    that differ in what they are about ('The Brazos Floor Plan' / 'The Colorado Floor Plan') stay similar.
    Given the pages' `text_hashes` and the vectors' `model`, an unfiltered exact search reuses `previous`
    (the last search's ml.page_neighbours rows) and returns the new ones in `stats.neighbours`."""
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
    exact = options.method == "exact" or (options.method == "auto" and len(vectors) <= options.ann_threshold)
    if sources.all() and targets.all() and exact and text_hashes is not None:
        started = time.monotonic()
        width = wanted + NEIGHBOUR_MARGIN
        idx, scores, floors, increment = nearest_pages(
            vectors, width, page_ids, text_hashes, model, previous, options.device
        )
        neighbours = neighbour_state(page_ids, text_hashes, model, idx, scores, floors)
        idx, scores = idx[:, :wanted], scores[:, :wanted]
        stats = SearchStats("exact", time.monotonic() - started, increment=increment, neighbours=neighbours)
    elif sources.all() and targets.all():
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
    # equal scores (identical texts) ranked by page, not by the search's order: every run ranks them alike
    candidates = candidates.sort(["source", "score", "target"], descending=[False, True, False])
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
