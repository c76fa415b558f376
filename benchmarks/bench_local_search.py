"""The local SERP engine against maintained search libraries, on a generated site's pages and queries.

Each engine indexes the same words (the pipeline's tokens, stop words removed; the title counted twice) and
answers every page's query with its top 10. The baseline is the pipeline's scoring with a full sort of each
query's matching pages (the code before the partial sort). bm25s (Lucene BM25, the same formula) and
tantivy (Rust, block-max WAND, 1-byte length norms) are measured when installed
(`pip install bm25s tantivy`; neither is a dependency), and pruned postings: each word keeps its L
best-weighted pages, the pages found through them are scored in full (a lever measured, not built:
docs/benchmarks.md#local-search-serp). The last two columns compare each
engine's answers with the pipeline's, query by query: the same pages in the same order, or the same
scores (pages that tie on score are equally right; the pipeline breaks ties by page position).

    python -m benchmarks.bench_local_search [--pages 100000] [--repeats 3]
    python -m benchmarks.bench_local_search --warehouse W.duckdb --site S   (a bench set's cleaned pages)
"""

from __future__ import annotations

import argparse
import statistics
import time

import duckdb
import numpy as np
import polars as pl
from scipy import sparse

from benchmarks.harness import generated_site, print_table, save
from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
from interlink_pipeline.core.ingest.pages import clean_pages
from interlink_pipeline.core.serp import local_search
from interlink_pipeline.core.serp.queries import page_queries
from interlink_pipeline.core.text import stop_words, words

SITE = "www.alpinegear.example"
TOP = 10


def _full_sort(value: np.ndarray, row: np.ndarray, n: int) -> np.ndarray:
    return np.argsort(-value, kind="stable")[:n]


def pipeline(pages: pl.DataFrame, queries: list[str], best=local_search._best) -> list[list[int]]:
    engine = local_search.LocalSearch(pages, "en")
    chosen, local_search._best = local_search._best, best
    try:
        found = engine.search(queries, TOP)
    finally:
        local_search._best = chosen
    answers: list[list[int]] = [[] for _ in queries]
    for index, row in found.sort("query_index", "rank").select("query_index", "row").iter_rows():
        answers[index].append(row)
    return answers


def pipeline_scores(pages: pl.DataFrame, queries: list[str], answers: list[list[int]], block: int = 2000):
    """The pipeline's BM25 score of each answer (pages that tie on score are equally right answers)."""
    engine = local_search.LocalSearch(pages, "en")
    scored = []
    for start in range(0, len(queries), block):
        scores = engine.scores(queries[start : start + block])
        for offset, rows in enumerate(answers[start : start + block]):
            scored.append(np.round(scores[offset, rows].toarray().ravel(), 4) if rows else np.array([]))
    return scored


def pruned_engine(pages: pl.DataFrame, queries: list[str], per_word: int) -> list[list[int]]:
    """Each word's `per_word` best-weighted pages only; every page found through them scored in full."""
    engine = local_search.LocalSearch(pages, "en")
    weights = engine._weights  # words x pages
    word = np.repeat(np.arange(weights.shape[0]), np.diff(weights.indptr))
    order = np.lexsort((-weights.data, word))
    kept = np.sort(order[np.arange(weights.nnz) - weights.indptr[word[order]] < per_word])
    pruned = sparse.csr_matrix(
        (weights.data[kept], weights.indices[kept], np.searchsorted(kept, weights.indptr)),
        shape=weights.shape,
    )
    by_page = weights.T.tocsr()
    answers = []
    for start in range(0, len(queries), 2000):
        asked = engine.query_words(queries[start : start + 2000])
        found = (asked @ pruned).tocoo()
        full = np.asarray(asked[found.row].multiply(by_page[found.col]).sum(axis=1)).ravel()
        bounds = np.searchsorted(found.row, np.arange(asked.shape[0] + 1))
        for i in range(asked.shape[0]):
            rows, value = found.col[bounds[i] : bounds[i + 1]], full[bounds[i] : bounds[i + 1]]
            answers.append(rows[local_search._best(value, rows, TOP)].tolist())
    return answers


def bm25s_engine(documents: list[list[str]], queries: list[list[str]]) -> list[list[int]]:
    import bm25s

    vocabulary: dict[str, int] = {}
    ids = [[vocabulary.setdefault(w, len(vocabulary)) for w in d] for d in documents]
    index = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    index.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocabulary), show_progress=False)
    answers = []
    for query in queries:
        known = [vocabulary[w] for w in query if w in vocabulary]
        scores = index.get_scores(known) if known else np.zeros(len(documents))
        matching = np.flatnonzero(scores)
        answers.append(matching[np.lexsort((matching, -scores[matching]))][:TOP].tolist())
    return answers


def tantivy_engine(documents: list[list[str]], queries: list[list[str]]) -> list[list[int]]:
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", tokenizer_name="whitespace")
    builder.add_unsigned_field("row", stored=True)
    schema = builder.build()
    index = tantivy.Index(schema)
    writer = index.writer(heap_size=200_000_000)
    for row, words_of_page in enumerate(documents):
        document = tantivy.Document()
        document.add_text("body", " ".join(words_of_page))
        document.add_unsigned("row", row)
        writer.add_document(document)
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    answers = []
    for query in queries:
        terms = [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", w)) for w in query]
        hits = searcher.search(tantivy.Query.boolean_query(terms), TOP).hits if terms else []
        answers.append([searcher.doc(address)["row"][0] for _, address in hits])
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warehouse", help="a bench warehouse whose cleaned pages to search instead")
    parser.add_argument("--site", default=SITE, help="the site in --warehouse")
    args = parser.parse_args()
    if args.warehouse:
        with duckdb.connect(args.warehouse, read_only=True) as con:
            sql = "select * from staging.pages where site = ? order by page_id"
            pages = con.execute(sql, [args.site]).pl()
    else:
        crawl = read_crawl_export(generated_site(args.pages) / "internal_all.csv", SITE).frame
        pages = clean_pages(crawl, SITE).pages
    queries = page_queries(pages, args.site, "{query}")["base_query"].to_list()
    stops = stop_words("en")
    fields = [pl.col(c).fill_null("") for c in ("title", "title", "h1", "meta_description")]
    texts = pages.select(pl.concat_str(fields, separator=" ")).to_series()
    documents = [[w for w in words(t) if w not in stops] for t in texts]
    query_words = [list(dict.fromkeys(w for w in words(q) if w not in stops)) for q in queries]

    engines = {
        "pipeline (BM25, partial sort)": lambda: pipeline(pages, queries),
        "baseline: same BM25, full sort": lambda: pipeline(pages, queries, _full_sort),
        "bm25s (numpy backend)": lambda: bm25s_engine(documents, query_words),
        "tantivy": lambda: tantivy_engine(documents, query_words),
        **{
            f"pruned postings, {n:,} pages per word": lambda n=n: pruned_engine(pages, queries, n)
            for n in (100, 250, 1000)
        },
    }
    reference, reference_scores, rows, payload = None, None, [], {}
    for name, run in engines.items():
        seconds = []
        try:
            for _ in range(args.repeats):
                started = time.monotonic()
                answers = run()
                seconds.append(time.monotonic() - started)
        except ImportError as missing:
            rows.append([name, "-", "-", "-", f"not installed ({missing.name})"])
            continue
        scores = pipeline_scores(pages, queries, answers)
        reference = reference or answers
        reference_scores = reference_scores or scores
        same_pages = np.mean([a == r for a, r in zip(answers, reference, strict=True)])
        same_scores = np.mean([np.array_equal(a, r) for a, r in zip(scores, reference_scores, strict=True)])
        median = statistics.median(seconds)
        rows.append([name, f"{median:.1f}", f"{same_scores:.1%}", f"{same_pages:.1%}", ""])
        payload[name] = {"seconds": seconds, "same_scores": same_scores, "same_pages": same_pages}
    header = ["engine", "median s (index + search)", "same top-10 scores", "same top-10 pages", "note"]
    print_table(f"local search, {pages.height:,} pages, {len(queries):,} queries, top {TOP}", rows, header)
    save("local_search", {str(pages.height): payload})


if __name__ == "__main__":
    main()
