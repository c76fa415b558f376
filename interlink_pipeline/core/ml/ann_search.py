"""Approximate top-k for large sites: an inverted file (faiss k-means cells, each searched exactly among its
nearest cells), and its recall@k measured against exact search on a sample of pages."""

from __future__ import annotations

import math
import time

import numpy as np

from interlink_pipeline.core.ml.exact_search import BLOCK_BYTES, exact_top

RECALL_SAMPLE = 1000


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


def sampled_recall(vectors: np.ndarray, approx_scores: np.ndarray, k: int, device: str) -> tuple[float, int]:
    """(recall@k, rows sampled) of an approximate search of `vectors`, against exact search on a sample."""
    count = len(vectors)
    sample = np.random.default_rng(1).choice(count, size=min(count, RECALL_SAMPLE), replace=False)
    _, exact_scores = exact_top(vectors[sample], vectors, k, query_ids=sample, device=device)
    return recall_at_k(approx_scores[sample], exact_scores, k), len(sample)
