"""Similar-page pairs: each page's top-k most similar pages, in bounded memory, exact or approximate.

Exact search (`exact_search`) scores blocks of pages against all pages; above `ann_threshold` pages an
HNSW graph answers instead (`ann_search`), kept where its recall@k against exact search on a sample reaches
`recall_floor`; an unfiltered search is incremental across re-crawls (`page_neighbours`). Candidates then
go through the rules users asked for:

- near-duplicates (pages sharing a duplicate key: the crawler's content hash, or the same H1 and body text)
  are flagged as duplicate content, not link opportunities — never on title cosine alone;
- a target page keeps at most `max_per_target` incoming suggestions (its best ones), so templated pages
  ("[Keyword] in [City]") cannot absorb every slot;
- each source keeps its best `k` remaining candidates at or above `min_score`;
- source and target pages can be restricted by URL path patterns;
- a pair is reciprocal when the target also lists the source.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ml.ann_search import (
    APPROXIMATE_ABOVE,
    RECALL_FLOOR,
    Approximate,
    SearchCheck,
    checked_top,
)
from interlink_pipeline.core.ml.exact_search import exact_top
from interlink_pipeline.core.ml.page_neighbours import (
    NEIGHBOUR_MARGIN,
    Increment,
    nearest_pages,
    neighbour_state,
)
from interlink_pipeline.core.settings import rust_regexes, setting

# Chosen on the real crawls and the sample (see docs/benchmarks.md and bench_similarity).
DEFAULT_MIN_SCORE = 0.5

Method = Literal["auto", "exact", "ann"]
# Ties keep the candidates' order (see _candidates).
BEST_FIRST = pl.col("score").rank("ordinal", descending=True)


@dataclass(frozen=True)
class SimilarityOptions:
    """The `similarity_pairs` step's settings (its Dagster config is derived from the `setting` fields)."""

    k: int = setting(15, "Similar pages kept per page.", ge=1, le=500)
    min_score: float = setting(
        DEFAULT_MIN_SCORE, "Lowest cosine kept (0.5: see docs/benchmarks.md).", ge=-1, le=1
    )
    max_per_target: int | None = setting(
        50, "Most suggestions one page may receive (0: no cap); keeps templates in check.", unset=0, ge=0
    )
    candidates_per_page: int = setting(50, "Neighbours searched per page before the rules.", ge=1)
    source_paths: tuple[str, ...] = setting(
        (), "Regexes: only pages whose path matches link.", check=rust_regexes
    )
    target_paths: tuple[str, ...] = setting(
        (), "Regexes: only pages whose path matches get links.", check=rust_regexes
    )
    exclude_source_paths: tuple[str, ...] = setting(
        (), "Regexes: these pages never link.", check=rust_regexes
    )
    exclude_target_paths: tuple[str, ...] = setting(
        (), "Regexes: these pages are never linked.", check=rust_regexes
    )
    method: Method = setting("auto", "auto: exact up to ann_threshold pages, an approximate index above.")
    ann_threshold: int = setting(APPROXIMATE_ABOVE, "Pages above which auto uses the ANN index.", ge=1)
    recall_floor: float = setting(
        RECALL_FLOOR, "Lowest recall@k an approximate search is kept at (else wider, then exact).", ge=0, le=1
    )
    device: str = "cpu"

    def approximate(self) -> Approximate:
        """When the full search may be approximate: never (exact), always (ann), past ann_threshold (auto)."""
        above = {"exact": None, "ann": 0}.get(self.method, self.ann_threshold)
        return Approximate(above, self.recall_floor, self.k)


@dataclass
class SearchStats:
    method: str
    seconds: float
    recall_at_k: float | None = None  # an approximate search's, against exact search on a sample
    recall_sample: int = 0
    details: dict = field(default_factory=dict)  # why an approximate search was not kept
    increment: Increment | None = None  # a kept search: what it reused
    neighbours: pl.DataFrame | None = None  # a kept search: ml.page_neighbours rows for the next search

    @classmethod
    def of(cls, check: SearchCheck | None, seconds: float | None = None, **kept) -> SearchStats:
        check = check or SearchCheck("exact")
        details = {"fell_back": check.why} if check.fell_back else {}
        seconds = check.seconds if seconds is None else seconds
        return cls(check.method, seconds, check.recall_at_k, check.recall_sample, details, **kept)


def search(
    vectors: np.ndarray, n: int, options: SimilarityOptions
) -> tuple[np.ndarray, np.ndarray, SearchStats]:
    """Top-`n` neighbours of every row (self excluded), exact or approximate by `options.method`."""
    idx, scores, check = checked_top(vectors, n, options.approximate(), options.device)
    return idx, scores, SearchStats.of(check)


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
    if sources.all() and targets.all() and text_hashes is not None:
        started = time.monotonic()
        width = wanted + NEIGHBOUR_MARGIN
        idx, scores, floors, increment = nearest_pages(
            vectors, width, page_ids, text_hashes, model, previous, options.device, options.approximate()
        )
        neighbours = neighbour_state(page_ids, text_hashes, model, idx, scores, floors)
        idx, scores = idx[:, :wanted], scores[:, :wanted]
        seconds = time.monotonic() - started
        stats = SearchStats.of(increment.search, seconds, increment=increment, neighbours=neighbours)
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
    """The searched candidates through the rules, as the pairs' rows."""
    candidates = _flag_duplicates(_candidates(source_rows, idx, scores, options.min_score), duplicate_keys)
    pairs = _ranked(_capped(candidates, options))
    ids = page_ids.cast(pl.String)
    return pairs.select(
        ids.gather(pairs["source"]).alias("source_page_id"),
        ids.gather(pairs["target"]).alias("target_page_id"),
        pl.col("score").clip(-1.0, 1.0).cast(pl.Float32),  # identical texts: 1, not 1 + rounding
        "rank",
        pl.when("duplicate").then(pl.lit("near_duplicate")).otherwise(pl.lit("similar")).alias("relation"),
        "reciprocal",
    )


def _candidates(
    source_rows: np.ndarray, idx: np.ndarray, scores: np.ndarray, min_score: float
) -> pl.DataFrame:
    """(source, target, score) rows at or above `min_score`, each source's best first."""
    width = idx.shape[1]
    candidates = pl.DataFrame(
        {
            "source": np.repeat(source_rows.astype(np.uint32), width),
            "target": idx.reshape(-1).astype(np.uint32),
            "score": scores.reshape(-1),
        }
    ).filter(pl.col("score") >= min_score)
    # equal scores (identical texts) ranked by page, not by the search's order: every run ranks them alike
    return candidates.sort(["source", "score", "target"], descending=[False, True, False])


def _flag_duplicates(candidates: pl.DataFrame, duplicate_keys: pl.Series | None) -> pl.DataFrame:
    """A `duplicate` column: true where source and target share a duplicate key."""
    if duplicate_keys is None or duplicate_keys.null_count() >= len(duplicate_keys):
        return candidates.with_columns(pl.lit(False).alias("duplicate"))
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
    return candidates.with_columns(
        (pl.col("source_key") == pl.col("target_key")).fill_null(False).alias("duplicate")
    ).drop("source_key", "target_key")


def _capped(candidates: pl.DataFrame, options: SimilarityOptions) -> pl.DataFrame:
    """Every near-duplicate, and the similar candidates within `max_per_target` and `k`."""
    duplicate = pl.col("duplicate")
    similar = candidates.filter(~duplicate)
    if options.max_per_target is not None:
        similar = similar.filter(BEST_FIRST.over("target") <= options.max_per_target)
    similar = similar.filter(BEST_FIRST.over("source") <= options.k)
    return pl.concat([similar, candidates.filter(duplicate)])


def _ranked(pairs: pl.DataFrame) -> pl.DataFrame:
    """Each pair's rank within its source and relation, and whether the target lists the source too."""
    pairs = pairs.with_columns((pl.col("source").cast(pl.UInt64) * 2**32 + pl.col("target")).alias("key"))
    # cosine is symmetric, so a reversed pair always has the same relation: one u64 key per pair suffices
    reverse = pl.col("target").cast(pl.UInt64) * 2**32 + pl.col("source")
    return (
        pairs.with_columns(
            BEST_FIRST.over("source", "duplicate").cast(pl.Int32).alias("rank"),
            reverse.is_in(pairs["key"].implode()).alias("reciprocal"),
        )
        .drop("key")
        .sort(["source", "duplicate", "rank"])
    )
