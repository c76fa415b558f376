"""The local SERP engine against maintained search libraries, on a generated site's pages and queries.

Each engine indexes the same words (the pipeline's tokens, stop words removed; the title counted twice) and
answers every page's query with its top 10. The baseline is the pipeline's scoring with a full sort of each
query's matching pages (the code before the partial sort). bm25s (Lucene BM25, the same formula) and
tantivy (Rust, block-max WAND, 1-byte length norms) are measured when installed
(`pip install bm25s tantivy`; neither is a dependency), and capped postings: each word keeps its L
best-weighted pages, the pages found through them are scored in full (the step's search past
`capped_above` pages, kept where its recall check holds: docs/benchmarks.md#local-search-serp; the check's
figure is printed last). The last two columns compare each
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

from benchmarks.harness import generated_site, print_table, save
from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
from interlink_pipeline.core.ingest.pages import clean_pages
from interlink_pipeline.core.serp import local_search
from interlink_pipeline.core.serp.capped_search import PAGES_PER_WORD, checked_search
from interlink_pipeline.core.serp.local_index import KEPT_MARGIN
from interlink_pipeline.core.serp.queries import page_queries
from interlink_pipeline.core.text import stop_words, words

SITE = "www.alpinegear.example"
TOP = 10


def _full_sort(value: np.ndarray, row: np.ndarray, n: int) -> np.ndarray:
    return np.argsort(-value, kind="stable")[:n]


def pipeline(
    pages: pl.DataFrame, queries: list[str], best=local_search._best, per_word: int | None = None
) -> list[list[int]]:
    engine = local_search.LocalSearch(pages, "en")
    chosen, local_search._best = local_search._best, best
    try:
        found = engine.search(queries, TOP, per_word=per_word)
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
            f"capped postings, {n:,} pages per word": lambda n=n: pipeline(pages, queries, per_word=n)
            for n in (100, PAGES_PER_WORD, 1000)
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
    started = time.monotonic()
    engine = local_search.LocalSearch(pages, "en")
    _, check = checked_search(engine, list(dict.fromkeys(queries)), TOP + KEPT_MARGIN, "", capped_above=0)
    seconds = time.monotonic() - started
    print(
        f"\nthe step's search past capped_above (index, check, search: {seconds:.1f} s): {check.described()}"
    )
    payload["checked"] = {"seconds": seconds, "said": check.described(), "recall": check.recall_at_k}
    save("local_search", {str(pages.height): payload})


if __name__ == "__main__":
    main()
