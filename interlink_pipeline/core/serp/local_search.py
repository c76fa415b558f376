"""The local SERP provider's engine: BM25 over the site's own pages, offline and free.

An index weighs words by the site's statistics (each word's document frequency, the mean document length),
or by statistics kept from an earlier build (see local_index: the index kept across re-crawls).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import sparse

from interlink_pipeline.core.text import detect_language, stop_words, words

K1, B = 1.2, 0.75
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
        self._capped = None  # (per_word, capped postings, pages x words): made on a capped search's first use
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

    def query_words(self, queries: list[str]) -> sparse.csr_matrix:
        """Queries x words, 1 where the query has the word (a query word counts once)."""
        s = self.statistics
        stops = stop_words(s.language) if s.stop_words else frozenset()
        tokens = [
            [w for w in dict.fromkeys(words(q)) if w not in stops and w in s.vocabulary] for q in queries
        ]
        matrix = _counts(tokens, s.vocabulary, width=self._weights.shape[0])
        matrix.data[:] = 1.0
        return matrix

    @property
    def pages(self) -> int:
        return len(self._paths)

    def scores(self, queries: list[str], pages: np.ndarray | None = None):
        """Each query's BM25 score for each page (or each of `pages`), sparse, queries x pages."""
        weights = self._weights if pages is None else self._weights[:, pages]
        return (self.query_words(queries) @ weights).tocsr()

    def found_scores(self, queries: list[str], per_word: int):
        """The BM25 scores of the pages each query finds among its words' `per_word` best-weighted pages
        (each word's postings capped), scored in full; sparse, queries x pages."""
        if self._capped is None or self._capped[0] != per_word:
            self._capped = (per_word, _capped_postings(self._weights, per_word), self._weights.T.tocsr())
        _, capped, by_page = self._capped
        asked = self.query_words(queries)
        found = (asked @ capped).tocoo()
        full = np.asarray(asked[found.row].multiply(by_page[found.col]).sum(axis=1)).ravel()
        return sparse.csr_matrix((full.astype(np.float32), (found.row, found.col)), shape=found.shape)

    def search(
        self,
        queries: list[str],
        n: int,
        path_prefix: str = "",
        per_word: int | None = None,
        block: int = 2000,
    ) -> pl.DataFrame:
        """query_index, rank (1 = best), row (the page's position in `pages`), score: the top `n` of each
        query, ties by row; with `per_word`, among the pages its words' capped postings find."""
        allowed = self.allowed(path_prefix)
        if per_word is not None:  # each found pair's words are held twice: a quarter of the block
            block = max(1, block // 4)
        out_query, out_rank, out_row, out_score = [], [], [], []
        for start in range(0, len(queries) if self._weights is not None else 0, block):
            asked = queries[start : start + block]
            scores = self.scores(asked) if per_word is None else self.found_scores(asked, per_word)
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


def _capped_postings(weights: sparse.csr_matrix, per_word: int) -> sparse.csr_matrix:
    """Words x pages `weights` with each word's row cut to its `per_word` highest weights (ties by page)."""
    word = np.repeat(np.arange(weights.shape[0]), np.diff(weights.indptr))
    order = np.lexsort((weights.indices, -weights.data, word))
    kept = np.sort(order[np.arange(weights.nnz) - weights.indptr[word[order]] < per_word])
    return sparse.csr_matrix(
        (weights.data[kept], weights.indices[kept], np.searchsorted(kept, weights.indptr)),
        shape=weights.shape,
    )


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
