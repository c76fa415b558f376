"""The local engine's index kept across re-crawls.

A full build weighs words by the site's statistics (each word's document frequency, the mean document
length) and answers every page's query. A re-crawl changes a few pages, and with them, a little, the
statistics of every word — which would change every answer a little. So the statistics are kept as they
were at the last full build (a word first seen since is weighed by its frequency when first seen), and a
re-crawl answers only the new queries; each kept answer takes in the changed and added pages that now
score above its floor and loses the changed and removed pages, as the similar pages do. The answers are
exactly those of a full search under the kept statistics (a test compares them); against statistics taken
afresh they differ only by the drift of the statistics, which is bounded: once more than `refresh_above`
of the pages changed since the last full build, the index is built in full again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import polars as pl

from interlink_pipeline.core.ml.ann_search import SearchCheck
from interlink_pipeline.core.ml.page_neighbours import Increment
from interlink_pipeline.core.serp.capped_search import checked_search
from interlink_pipeline.core.serp.local_search import IndexStatistics, LocalSearch, documents

# Results kept per query beyond those asked for: a changed or removed page rarely forces a query again.
KEPT_MARGIN = 10
# Known queries scored against the changed pages at a time: every match of every query at once held 14 GB
# at 300,000 pages with 1% of them changed (docs/benchmarks.md).
ENTERING_BLOCK = 20_000


@dataclass(frozen=True)
class KeptIndex:
    """A site's local index as the last run left it: its statistics, each page's indexed text (a hash),
    and each query's answers: `width` pages, best first (ties by page id), and the last one's score and
    page (the floor: any page not listed scores less, or as much with a later id; no floor when the list
    holds every page that matches)."""

    statistics: IndexStatistics
    documents: pl.DataFrame  # page_id, doc_hash
    answers: pl.DataFrame  # query, page_ids (list), scores (list), floor, floor_page_id (null: no floor)
    width: int
    path_prefix: str
    changed_since_build: int  # pages changed, added or removed since the statistics were taken


@dataclass(frozen=True)
class _Changes:
    """The pages whose indexed text is not the kept index's."""

    fresh: pl.DataFrame  # row (the page's position now), page_id, doc_hash: the changed and added pages
    removed: int  # pages the kept index has and this crawl has not

    @property
    def count(self) -> int:
        return self.fresh.height + self.removed


def document_hashes(pages: pl.DataFrame) -> pl.Series:
    return pl.Series([hashlib.sha1(t.encode()).hexdigest() for t in documents(pages)], dtype=pl.String)


def search_kept(
    pages: pl.DataFrame,
    queries: list[str],
    depth: int,
    path_prefix: str,
    language: str | None,
    refresh_above: float,
    kept: KeptIndex | None,
    capped_above: int | None = None,
) -> tuple[pl.DataFrame, KeptIndex, Increment]:
    """The top `depth` pages (query_index, rank, row) for each of `queries` over `pages` (sorted by
    page_id: ties go to the first), through the kept index when it serves, and the index to keep. A full
    build past `capped_above` pages searches capped postings where their check holds (capped_search)."""
    ids = pages["page_id"].cast(pl.String)
    now = pl.DataFrame({"page_id": ids, "doc_hash": document_hashes(pages)})
    width = depth + KEPT_MARGIN
    distinct = list(dict.fromkeys(queries))
    why, changes = _full_build_reason(kept, now, width, path_prefix, refresh_above)
    if why is None:
        engine = LocalSearch(pages, statistics=kept.statistics)
        answers, increment = _updated_answers(engine, distinct, ids, changes, path_prefix, kept)
        changed_since = kept.changed_since_build + changes.count
    else:
        engine = LocalSearch(pages, language)
        answers, check = _answers(engine, distinct, ids, width, path_prefix, capped_above)
        increment = Increment("full", why, len(distinct), search=check)
        changed_since = 0
    index = KeptIndex(engine.statistics, now, answers.drop("row", "q"), width, path_prefix, changed_since)
    return _top(answers, queries, depth), index, increment


def _full_build_reason(
    kept: KeptIndex | None, now: pl.DataFrame, width: int, prefix: str, refresh_above: float
) -> tuple[str | None, _Changes | None]:
    """Why the index is built in full (None: the kept one serves), and the pages changed since the kept
    one (None: there is none to compare with)."""
    if kept is None:
        return "no earlier index of this site", None
    if (kept.width, kept.path_prefix) != (width, prefix):
        return "the results asked for or the query template changed", None
    changes = _changes(kept, now)
    drift = kept.changed_since_build + changes.count
    if drift > refresh_above * max(kept.statistics.pages, now.height):
        return f"{drift:,} pages changed since the index was built, more than {refresh_above:.0%}", changes
    return None, changes


def _changes(kept: KeptIndex, now: pl.DataFrame) -> _Changes:
    """The pages of `now` (page_id, doc_hash) changed or added since `kept`, and how many it lost."""
    fresh = (
        now.with_row_index("row")
        .with_columns(pl.col("row").cast(pl.Int64))
        .join(kept.documents, on=["page_id", "doc_hash"], how="anti")
    )
    return _Changes(fresh, kept.documents.join(now, on="page_id", how="anti").height)


def _numbered(queries: list[str], position: str) -> pl.DataFrame:
    """`position` (Int64: each query's place in `queries`), query."""
    return (
        pl.DataFrame({"query": queries}, schema={"query": pl.String})
        .with_row_index(position)
        .with_columns(pl.col(position).cast(pl.Int64))
    )


def _answers(
    engine: LocalSearch,
    queries: list[str],
    ids: pl.Series,
    width: int,
    prefix: str,
    capped_above: int | None = None,
) -> tuple[pl.DataFrame, SearchCheck]:
    """Each query's answers searched against every page: query, row and page_ids (lists), scores, floor;
    and how (capped postings past `capped_above` pages, where they hold: capped_search)."""
    found, check = checked_search(engine, queries, width, prefix, capped_above)
    answers = _listed(_numbered(queries, "q"), found.rename({"query_index": "q"}), ids, width, None)
    return answers, check


def _listed(
    asked: pl.DataFrame, entries: pl.DataFrame, ids: pl.Series, width: int, floors: pl.DataFrame | None
) -> pl.DataFrame:
    """Answers of the `asked` queries (q, query) from their `entries` (q, row, score): the best `width`
    (ties by row, that is by page id), and the floor: the last one's when the list is full, else the
    queries' `floors` (or none: the entries are every match)."""
    lists = (
        entries.sort(["q", "score", "row"], descending=[False, True, False])
        .group_by("q", maintain_order=True)
        .head(width)
        .group_by("q", maintain_order=True)
        .agg("row", pl.col("score").alias("scores"))
    )
    answers = asked.join(lists, on="q", how="left", maintain_order="left").with_columns(
        pl.col("row").fill_null(pl.lit([], dtype=pl.List(pl.Int64))),
        pl.col("scores").fill_null(pl.lit([], dtype=pl.List(pl.Float32))),
    )
    if floors is None:
        answers = answers.with_columns(
            pl.lit(0.0, dtype=pl.Float32).alias("floor"), pl.lit(None, dtype=pl.String).alias("floor_page_id")
        )
    else:
        answers = answers.join(floors, on="q", how="left", maintain_order="left")
    full = pl.col("scores").list.len() >= width
    flat = answers.select("q", "row").explode("row").drop_nulls("row")
    named = (
        flat.select("q", ids.gather(flat["row"]).alias("page_ids"))
        .group_by("q", maintain_order=True)
        .agg("page_ids")
    )
    return answers.join(named, on="q", how="left", maintain_order="left").select(
        "q",
        "query",
        "row",
        pl.col("page_ids").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        "scores",
        pl.when(full).then(pl.col("scores").list.last()).otherwise("floor").alias("floor"),
        pl.when(full).then(pl.col("page_ids").list.last()).otherwise("floor_page_id").alias("floor_page_id"),
    )


def _updated_answers(
    engine: LocalSearch,
    queries: list[str],
    ids: pl.Series,
    changes: _Changes,
    path_prefix: str,
    kept: KeptIndex,
) -> tuple[pl.DataFrame, Increment]:
    """The kept answers brought up to date: changed and removed pages out, changed and added pages in
    where they come before the floor, and new queries (or lists left shorter than asked) searched again."""
    asked = _numbered(queries, "q")
    known = asked.join(kept.answers, on="query", maintain_order="left")
    floors = known.select("q", "floor", "floor_page_id")
    entries = pl.concat(
        [
            _still_listed(known, ids, changes.fresh),
            _entering(engine, known, floors, changes.fresh, path_prefix),
        ]
    )
    merged = _listed(known.select("q", "query"), entries, ids, kept.width, floors)
    # a list holds the right first `depth` pages unless it lost some and has fewer left (while pages
    # below its floor were not kept)
    depth = kept.width - KEPT_MARGIN
    sure = merged.filter(pl.col("floor_page_id").is_null() | (pl.col("scores").list.len() >= depth))
    again = asked.join(sure, on="q", how="anti")
    searched = (
        _answers(engine, again["query"].to_list(), ids, kept.width, path_prefix)[0]
        .drop("q")
        .join(again, on="query")
    )
    increment = Increment(
        "incremental",
        f"{changes.fresh.height:,} changed or added and {changes.removed:,} removed pages of {len(ids):,}",
        again.height,
        pages_merged=sure.height,
        pages_changed=changes.fresh.height,
        pages_removed=changes.removed,
    )
    return pl.concat([sure, searched.select(sure.columns)]), increment


def _still_listed(known: pl.DataFrame, ids: pl.Series, fresh: pl.DataFrame) -> pl.DataFrame:
    """q, row, score: the kept answers' pages that are still there unchanged."""
    rows = pl.DataFrame({"page_ids": ids, "row": np.arange(len(ids), dtype=np.int64)})
    return (
        known.select("q", "page_ids", "scores")
        .explode("page_ids", "scores")
        .drop_nulls("page_ids")
        .join(rows, on="page_ids")
        .filter(~pl.col("row").is_in(fresh["row"].implode()))
        .select("q", "row", pl.col("scores").alias("score"))
    )


def _entering(
    engine: LocalSearch, known: pl.DataFrame, floors: pl.DataFrame, fresh: pl.DataFrame, path_prefix: str
) -> pl.DataFrame:
    """q, row, score: the changed and added pages that match a known query, are under the path prefix and
    come before its floor; ENTERING_BLOCK queries at a time, so only the pages entering a list are held."""
    allowed = engine.allowed(path_prefix)
    queries, numbers, rows = known["query"].to_list(), known["q"].to_numpy(), fresh["row"].to_numpy()
    before_floor = (pl.col("score") > pl.col("floor")) | (
        (pl.col("score") == pl.col("floor")) & (pl.col("page_id") < pl.col("floor_page_id"))
    )
    parts = [pl.DataFrame(schema={"q": pl.Int64, "row": pl.Int64, "score": pl.Float32})]
    for start in range(0, len(queries), ENTERING_BLOCK):
        scored = engine.scores(queries[start : start + ENTERING_BLOCK], rows).tocoo()
        matched = pl.DataFrame(
            {
                "q": numbers[start : start + ENTERING_BLOCK][scored.row],
                "at": scored.col.astype(np.int64),
                "score": scored.data.astype(np.float32),
            }
        )
        if allowed is not None:
            matched = matched.filter(pl.Series(allowed[rows[matched["at"].to_numpy()]]))
        # a page scoring under a full list's floor stays out: only the others get their page id (for ties)
        near = matched.join(floors, on="q").filter(
            pl.col("floor_page_id").is_null() | (pl.col("score") >= pl.col("floor"))
        )
        near = near.with_columns(
            pl.Series("row", rows[near["at"].to_numpy()], dtype=pl.Int64), fresh["page_id"].gather(near["at"])
        )
        parts.append(
            near.filter(pl.col("floor_page_id").is_null() | before_floor).select("q", "row", "score")
        )
    return pl.concat(parts)


def _top(answers: pl.DataFrame, queries: list[str], depth: int) -> pl.DataFrame:
    """query_index, rank, row: the first `depth` answers of each of `queries` (in that order)."""
    return (
        _numbered(queries, "query_index")
        .join(answers.select("query", pl.col("row").list.head(depth)), on="query", maintain_order="left")
        .explode("row")
        .drop_nulls("row")
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("query_index").alias("rank"))
        .select("query_index", "rank", "row")
    )
