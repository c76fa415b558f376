"""The local SERP provider: BM25 over the site's own pages, kept between runs.

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
from scipy import sparse

from interlink_pipeline.core.ml.page_neighbours import Increment
from interlink_pipeline.core.text import detect_language, stop_words, words

K1, B = 1.2, 0.75
# Results kept per query beyond those asked for: a changed or removed page rarely forces a query again.
KEPT_MARGIN = 10
TEXT_FIELDS = ("title", "title", "h1", "meta_description")  # the title counts twice


@dataclass(frozen=True)
class IndexStatistics:
    """What BM25 weighs words and lengths by, kept between full builds."""

    language: str
    stop_words: bool  # the language's stop words are left out (not when every word is one)
    vocabulary: dict[str, int]  # word -> column
    idf: np.ndarray  # by column: inverse document frequency when the word was first indexed
    average_length: float
    pages: int  # documents when the statistics were taken


def documents(pages: pl.DataFrame) -> list[str]:
    """Each page's indexed text: its title (twice), H1 and meta description."""
    text = pl.concat_str([pl.col(c).fill_null("") for c in TEXT_FIELDS], separator=" ")
    return pages.select(text).to_series().to_list()


class LocalSearch:
    """BM25 (k1=1.2, b=0.75) over each page's title (counted twice), H1 and meta description, weighed by
    the statistics of these pages, or by kept `statistics` (see the module's docstring).

    When every word of every page is a stop word ("Home of one page site"), stop words count like any
    other; a site without a single word has an empty index, and every search finds nothing."""

    def __init__(
        self, pages: pl.DataFrame, language: str | None = None, statistics: IndexStatistics | None = None
    ):
        texts = documents(pages)
        self._paths = pages["path"].to_numpy()
        self._weights = None
        self.statistics = statistics
        if statistics is None:
            language = language or detect_language(texts)
            for dropped in (True, False):
                stops = stop_words(language) if dropped else frozenset()
                tokens = [[w for w in words(t) if w not in stops] for t in texts]
                vocabulary = {w: i for i, w in enumerate(sorted({w for doc in tokens for w in doc}))}
                if vocabulary:
                    break
            else:
                return
            counts = _counts(tokens, vocabulary)
            df = np.bincount(counts.indices, minlength=counts.shape[1])
            self.statistics = IndexStatistics(
                language,
                dropped,
                vocabulary,
                _idf(counts.shape[0], df),
                float(np.asarray(counts.sum(axis=1)).mean()),
                counts.shape[0],
            )
        else:
            stops = stop_words(statistics.language) if statistics.stop_words else frozenset()
            tokens = [[w for w in words(t) if w not in stops] for t in texts]
            self.statistics = _with_new_words(statistics, tokens)
            counts = _counts(tokens, self.statistics.vocabulary)
        s = self.statistics
        lengths = np.asarray(counts.sum(axis=1)).ravel()
        rows = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
        tf = counts.data
        norm = K1 * (1 - B + B * lengths[rows] / max(s.average_length, 1e-9))
        weights = s.idf[counts.indices] * tf * (K1 + 1) / (tf + norm)
        self._weights = sparse.csr_matrix(
            (weights, counts.indices, counts.indptr), shape=counts.shape
        ).T.tocsr()

    def scores(self, queries: list[str], pages: np.ndarray | None = None):
        """Each query's BM25 score for each page (or each of `pages`), sparse, queries x pages; a query
        word counts once."""
        s = self.statistics
        stops = stop_words(s.language) if s.stop_words else frozenset()
        tokens = [
            [w for w in dict.fromkeys(words(q)) if w not in stops and w in s.vocabulary] for q in queries
        ]
        matrix = _counts(tokens, s.vocabulary, width=self._weights.shape[0])
        matrix.data[:] = 1.0
        weights = self._weights if pages is None else self._weights[:, pages]
        return (matrix @ weights).tocsr()

    def search(self, queries: list[str], n: int, path_prefix: str = "", block: int = 2000) -> pl.DataFrame:
        """query_index, rank (1 = best), row (the page's position in `pages`), score: the top `n` of each
        query, ties by row."""
        allowed = self.allowed(path_prefix)
        out_query, out_rank, out_row, out_score = [], [], [], []
        for start in range(0, len(queries) if self._weights is not None else 0, block):
            scores = self.scores(queries[start : start + block])
            for i in range(scores.shape[0]):
                row = scores.indices[scores.indptr[i] : scores.indptr[i + 1]]
                value = scores.data[scores.indptr[i] : scores.indptr[i + 1]]
                if allowed is not None:
                    keep = allowed[row]
                    row, value = row[keep], value[keep]
                if not len(row):
                    continue
                top = _best(value, row, n)
                out_query.extend([start + i] * len(top))
                out_rank.extend(range(1, len(top) + 1))
                out_row.extend(row[top].tolist())
                out_score.extend(value[top].tolist())
        return pl.DataFrame(
            {"query_index": out_query, "rank": out_rank, "row": out_row, "score": out_score},
            schema={"query_index": pl.Int64, "rank": pl.Int32, "row": pl.Int64, "score": pl.Float32},
        )

    def allowed(self, path_prefix: str) -> np.ndarray | None:
        """Per page, whether its path is under `path_prefix` (None: every page)."""
        return np.char.startswith(self._paths.astype(str), path_prefix) if path_prefix else None


def _counts(
    tokens: list[list[str]], vocabulary: dict[str, int], width: int | None = None
) -> sparse.csr_matrix:
    """Documents x words counts (float32), columns by `vocabulary`; words outside it are not counted."""
    indptr, indices = [0], []
    for doc in tokens:
        indices.extend(vocabulary[w] for w in doc if w in vocabulary)
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.float32)
    shape = (len(tokens), width or len(vocabulary))
    counts = sparse.csr_matrix((data, np.asarray(indices, dtype=np.int32), np.asarray(indptr)), shape=shape)
    counts.sum_duplicates()
    return counts


def _idf(documents: int, df: np.ndarray) -> np.ndarray:
    return np.log1p((documents - df + 0.5) / (df + 0.5)).astype(np.float32)


def _with_new_words(statistics: IndexStatistics, tokens: list[list[str]]) -> IndexStatistics:
    """The kept statistics with the words first seen in these documents, weighed by their frequency now."""
    new = sorted({w for doc in tokens for w in doc} - statistics.vocabulary.keys())
    if not new:
        return statistics
    df = np.zeros(len(new), dtype=np.int64)
    column = {w: i for i, w in enumerate(new)}
    for doc in tokens:
        for w in set(doc):
            if w in column:
                df[column[w]] += 1
    vocabulary = {**statistics.vocabulary, **{w: len(statistics.vocabulary) + i for i, w in enumerate(new)}}
    idf = np.concatenate([statistics.idf, _idf(max(statistics.pages, len(tokens)), df)])
    return IndexStatistics(
        statistics.language,
        statistics.stop_words,
        vocabulary,
        idf,
        statistics.average_length,
        statistics.pages,
    )


def _best(value: np.ndarray, row: np.ndarray, n: int) -> np.ndarray:
    """Positions of the `n` highest values, best first, ties by row: a partition, then a sort of the few
    (a full sort of every matching page cost half the search on large sites)."""
    if len(value) > n:
        cutoff = np.partition(value, len(value) - n)[len(value) - n]
        keep = np.flatnonzero(value >= cutoff)
    else:
        keep = np.arange(len(value))
    return keep[np.lexsort((row[keep], -value[keep]))][:n]


# --- kept between runs -------------------------------------------------------------------------------


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
) -> tuple[pl.DataFrame, KeptIndex, Increment]:
    """The top `depth` pages (query_index, rank, row) for each of `queries` over `pages` (sorted by
    page_id: ties go to the first), through the kept index when it serves, and the index to keep."""
    ids = pages["page_id"].cast(pl.String)
    hashes = document_hashes(pages)
    width = depth + KEPT_MARGIN
    distinct = list(dict.fromkeys(queries))
    why, changed = _full_build_reason(kept, ids, hashes, width, path_prefix, refresh_above)
    if why is None:
        engine = LocalSearch(pages, statistics=kept.statistics)
        answers, increment = _updated_answers(engine, distinct, ids, hashes, path_prefix, kept)
        changed_since = kept.changed_since_build + changed
    else:
        engine = LocalSearch(pages, language)
        answers = _answers(engine, distinct, ids, width, path_prefix)
        increment = Increment("full", why, len(distinct))
        changed_since = 0
    index = KeptIndex(
        engine.statistics,
        pl.DataFrame({"page_id": ids, "doc_hash": hashes}),
        answers.drop("row", "q"),
        width,
        path_prefix,
        changed_since,
    )
    return _top(answers, queries, depth), index, increment


def _full_build_reason(
    kept: KeptIndex | None, ids: pl.Series, hashes: pl.Series, width: int, prefix: str, refresh_above: float
) -> tuple[str | None, int]:
    if kept is None:
        return "no earlier index of this site", 0
    if (kept.width, kept.path_prefix) != (width, prefix):
        return "the results asked for or the query template changed", 0
    now = pl.DataFrame({"page_id": ids, "doc_hash": hashes})
    changed = now.join(kept.documents, on=["page_id", "doc_hash"], how="anti").height
    changed += kept.documents.join(now, on="page_id", how="anti").height
    drift = kept.changed_since_build + changed
    if drift > refresh_above * max(kept.statistics.pages, len(ids)):
        return f"{drift:,} pages changed since the index was built, more than {refresh_above:.0%}", changed
    return None, changed


def _answers(
    engine: LocalSearch, queries: list[str], ids: pl.Series, width: int, prefix: str
) -> pl.DataFrame:
    """Each query's answers searched in full: query, row and page_ids (lists), scores, floor."""
    found = engine.search(queries, width, prefix)
    return _listed(
        pl.DataFrame({"query": queries}, schema={"query": pl.String})
        .with_row_index("q")
        .with_columns(pl.col("q").cast(pl.Int64)),
        found.rename({"query_index": "q"}),
        ids,
        width,
        None,
    )


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
    hashes: pl.Series,
    path_prefix: str,
    kept: KeptIndex,
) -> tuple[pl.DataFrame, Increment]:
    """The kept answers brought up to date: changed and removed pages out, changed and added pages in
    where they come before the floor, and new queries (or lists left shorter than asked) searched again."""
    width, depth = kept.width, kept.width - KEPT_MARGIN
    index = pl.DataFrame({"page_id": ids, "row": np.arange(len(ids), dtype=np.int64)})
    now = pl.DataFrame({"page_id": ids, "doc_hash": hashes})
    fresh = now.join(kept.documents, on=["page_id", "doc_hash"], how="anti").join(index, on="page_id")
    removed = kept.documents.join(now, on="page_id", how="anti").height
    asked = pl.DataFrame({"query": queries}).with_row_index("q").with_columns(pl.col("q").cast(pl.Int64))
    known = asked.join(kept.answers, on="query", maintain_order="left")
    listed = (
        known.select("q", "page_ids", "scores")
        .explode("page_ids", "scores")
        .drop_nulls("page_ids")
        .join(index.rename({"page_id": "page_ids"}), on="page_ids")
        .filter(~pl.col("row").is_in(fresh["row"].implode()))
        .select("q", "row", pl.col("scores").alias("score"))
    )
    scored = engine.scores(known["query"].to_list(), fresh["row"].to_numpy()).tocoo()
    entering = pl.DataFrame(
        {
            "q": known["q"].to_numpy()[scored.row],
            "row": fresh["row"].to_numpy()[scored.col],
            "page_id": fresh["page_id"].gather(scored.col),
            "score": scored.data.astype(np.float32),
        }
    )
    allowed = engine.allowed(path_prefix)
    if allowed is not None:
        entering = entering.filter(pl.Series(allowed[entering["row"].to_numpy()]))
    floors = known.select("q", "floor", "floor_page_id")
    before_floor = (pl.col("score") > pl.col("floor")) | (
        (pl.col("score") == pl.col("floor")) & (pl.col("page_id") < pl.col("floor_page_id"))
    )
    entering = entering.join(floors, on="q").filter(pl.col("floor_page_id").is_null() | before_floor)
    merged = _listed(
        known.select("q", "query"),
        pl.concat([listed, entering.select("q", "row", "score")]),
        ids,
        width,
        floors,
    )
    # a list holds the right first `depth` pages unless it lost some and has fewer left (while pages
    # below its floor were not kept)
    sure = merged.filter(pl.col("floor_page_id").is_null() | (pl.col("scores").list.len() >= depth))
    again = asked.join(sure, on="q", how="anti")
    searched = (
        _answers(engine, again["query"].to_list(), ids, width, path_prefix).drop("q").join(again, on="query")
    )
    increment = Increment(
        "incremental",
        f"{fresh.height:,} changed or added and {removed:,} removed pages of {len(ids):,}",
        again.height,
        pages_merged=sure.height,
        pages_changed=fresh.height,
        pages_removed=removed,
    )
    return pl.concat([sure, searched.select(sure.columns)]), increment


def _top(answers: pl.DataFrame, queries: list[str], depth: int) -> pl.DataFrame:
    """query_index, rank, row: the first `depth` answers of each of `queries` (in that order)."""
    return (
        pl.DataFrame({"query": queries})
        .with_row_index("query_index")
        .with_columns(pl.col("query_index").cast(pl.Int64))
        .join(answers.select("query", pl.col("row").list.head(depth)), on="query", maintain_order="left")
        .explode("row")
        .drop_nulls("row")
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over("query_index").alias("rank"))
        .select("query_index", "rank", "row")
    )
