"""Each page's nearest pages, kept across re-crawls (`ml.page_neighbours`): an incremental exact search.

Re-crawls change few pages, so each page's nearest pages are kept (with a margin), and the next search scores
only the changed and added pages against all pages, merging them into the unchanged pages' lists. The result
equals a full exact search (a test compares them); a page whose list lost too many neighbours is searched
again in full.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from interlink_pipeline.core.ml.ann_search import Approximate, SearchCheck, checked_top
from interlink_pipeline.core.ml.exact_search import BLOCK_BYTES, exact_top

# Neighbours kept per page beyond those searched: a removed neighbour rarely forces a full search of a page.
NEIGHBOUR_MARGIN = 10
# Above this share of changed pages, one full search costs less than merging.
FULL_SEARCH_SHARE = 0.25


@dataclass
class Increment:
    """What a search recomputed and what it reused (shown in the asset's metadata)."""

    mode: Literal["full", "incremental"]
    why: str
    pages_searched: int  # searched against every page: changed and added pages, and lists gone short
    pages_merged: int = 0  # unchanged pages whose kept lists took in the changed pages' scores
    pages_changed: int = 0  # changed or added since the last search
    pages_removed: int = 0
    search: SearchCheck | None = None  # a full search's: exact, or approximate with its measured recall

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
            search=next((p.search for p in parts if p.search and p.search.fell_back), parts[0].search),
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
    approximate: Approximate | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, Increment]:
    """Each page's `width` nearest pages (indices, scores; -inf pads a short list) and its floor, reusing
    `previous` (ml.page_neighbours rows) for the pages whose text is unchanged. A full search is exact, or
    past `approximate.above` pages approximate where its measured recall holds (ann_search.checked_top)."""
    count = len(vectors)
    why = _full_search_reason(previous, count, width, model)
    unchanged = fresh = removed = None
    if why is None:
        unchanged, fresh, removed = _changes(previous, page_ids, text_hashes)
        if len(fresh) + removed > FULL_SEARCH_SHARE * count:
            changed = len(fresh) + removed
            why = f"{changed:,} of {count:,} pages changed, added or removed: a full search is cheaper"
    if why is not None:
        idx, scores, check = checked_top(vectors, width, approximate or Approximate(), device)
        idx, scores = _padded(idx, scores, width)
        return idx, scores, _floors(scores, count, width), Increment("full", why, count, search=check)
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
