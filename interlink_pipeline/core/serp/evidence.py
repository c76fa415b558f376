"""SERP evidence: for each page's main query, which of the site's pages a search engine ranks.

Providers share one shape — queries in (see queries), ranked result URLs out, matched to the crawl here:
- `serper`: Serper's Google search API (see serper), its answers cached as they arrive (see cache).
- `local`: BM25 over the site's own titles, H1s and meta descriptions, offline and free (not cached: its
  answers change with the crawl; its index is kept between runs instead: see local_index).
- `none`: no SERP evidence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial

import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ml.page_neighbours import Increment
from interlink_pipeline.core.serp.cache import cached_results, fresh_keys, save_answers
from interlink_pipeline.core.serp.local_index import KeptIndex, search_kept
from interlink_pipeline.core.serp.options import Provider, SerpOptions
from interlink_pipeline.core.serp.queries import page_queries, search_scope
from interlink_pipeline.core.serp.serper import FetchReport, Request, fetch_serper
from interlink_pipeline.core.settings import regex_problem
from interlink_pipeline.core.urls import url_parts

RESULTS_SCHEMA = {
    "page_id": pl.String,
    "query": pl.String,
    "rank": pl.Int32,
    "result_url": pl.String,
    "result_title": pl.String,
    "fetched_at": pl.Datetime("us"),
}


@dataclass
class SerpRun:
    provider: str
    pages: int
    queries: int  # distinct search strings
    query_sources: dict[str, int]
    cache_hits: int = 0
    fetch: FetchReport = field(default_factory=FetchReport)
    excluded_results: int = 0
    seconds: float = 0.0
    index: KeptIndex | None = None  # local provider: the index to keep for the next run
    search: Increment | None = None  # local provider: what it searched and reused

    def cost_usd(self, options: SerpOptions) -> float:
        return self.fetch.billed * options.cost_per_request_usd


def resolve_provider(requested: Provider, api_key: str | None) -> str:
    if requested == "auto":
        return "serper" if api_key else "local"
    return requested


def serp_evidence(
    warehouse: str,
    site: str,
    pages: pl.DataFrame,
    options: SerpOptions,
    api_key: str | None,
    main_queries: pl.DataFrame | None = None,
    kept_index: KeptIndex | None = None,
) -> tuple[pl.DataFrame, SerpRun]:
    """serp.results rows for the site's pages (empty for provider none), and what it took; the local
    provider answers through `kept_index` (the last run's) where it serves, and returns the one to keep
    in `run.index`."""
    started = time.monotonic()
    provider = resolve_provider(options.provider, api_key)
    asked = page_queries(pages, site, options.query_template, main_queries)
    run = SerpRun(
        provider,
        pages.height,
        asked["query"].n_unique(),
        dict(asked.group_by("query_source").len().iter_rows()),
    )
    if provider == "none":
        results = pl.DataFrame(schema=RESULTS_SCHEMA)
    elif provider == "local":
        results, run.index, run.search = _local_results(site, pages, asked, options, kept_index)
    elif provider == "serper":
        results, run.cache_hits, run.fetch = _serper_results(warehouse, asked, options, api_key or "")
    else:
        raise InputError(f"unknown SERP provider '{provider}': use auto, serper, local or none.")
    matched, run.excluded_results = match_results(results, pages, options.exclude_url_patterns)
    run.seconds = time.monotonic() - started
    frame = matched.with_columns(pl.lit(site).alias("site"), pl.lit(provider).alias("provider")).select(
        "site",
        "page_id",
        "query",
        "provider",
        pl.col("rank").cast(pl.Int32),
        "result_url",
        "result_title",
        "matched_page_id",
        "fetched_at",
    )
    return frame, run


def _local_results(
    site: str, pages: pl.DataFrame, asked: pl.DataFrame, options: SerpOptions, kept_index: KeptIndex | None
) -> tuple[pl.DataFrame, KeptIndex, Increment]:
    """Each asked page's results from the local engine, the index to keep and what it searched."""
    _, prefix = search_scope(options.query_template, site)
    ordered = pages.sort("page_id")  # ties go to the first page by id, whatever order the rows came in
    found, index, search = search_kept(
        ordered,
        asked["base_query"].to_list(),
        options.results_per_query * options.max_result_pages,
        prefix,
        options.language,
        options.refresh_above,
        kept_index,
        options.capped_above,
    )
    queried = asked.with_row_index("query_index").select(
        pl.col("query_index").cast(pl.Int64), "page_id", "query"
    )
    listed = ordered.with_row_index("row").select(
        pl.col("row").cast(pl.Int64), pl.col("url").alias("result_url"), pl.col("title").alias("result_title")
    )
    results = (
        found.join(queried, on="query_index")
        .join(listed, on="row")
        .select(
            "page_id",
            "query",
            "rank",
            "result_url",
            "result_title",
            pl.lit(datetime.now(UTC).replace(tzinfo=None)).dt.cast_time_unit("us").alias("fetched_at"),
        )
    )
    return results, index, search


def _serper_results(
    warehouse: str, asked: pl.DataFrame, options: SerpOptions, api_key: str
) -> tuple[pl.DataFrame, int, FetchReport]:
    """Each asked page's results from Serper through the cache (only what it lacks fresh is sent), the
    cache hits and what fetching took."""
    requests = [
        Request(q, page)
        for q in asked["query"].unique(maintain_order=True)
        for page in range(1, options.max_result_pages + 1)
    ]
    keys = pl.DataFrame({"request_key": [r.key(options) for r in requests]})
    fresh = fresh_keys(warehouse, keys, options)
    todo = [r for r in requests if r.key(options) not in fresh]
    fetch = (
        fetch_serper(todo, options, api_key, partial(save_answers, warehouse, options))
        if todo
        else FetchReport()
    )
    _check_failures(fetch, len(requests), options)
    rows = cached_results(warehouse, keys, options)
    return asked.select("page_id", "query").join(rows, on="query"), len(requests) - len(todo), fetch


def _check_failures(fetch: FetchReport, requested: int, options: SerpOptions) -> None:
    """Raise when more of the `requested` requests failed than `max_failed_share` allows."""
    failed = len(fetch.failures)
    if failed and failed / max(1, requested) > options.max_failed_share:
        examples = "; ".join(
            f"'{r.query}' (page {r.page}): {why}" for r, why in list(fetch.failures.items())[:3]
        )
        raise InputError(
            f"{failed} of {requested} search requests failed (timeouts, rate limits, server errors and "
            f"malformed answers were retried up to {options.max_retries} times; e.g. "
            f"{examples}). The {fetch.billed} answered ones are cached; re-run to retry the rest, or "
            "allow some failures with max_failed_share."
        )


def match_results(
    results: pl.DataFrame, pages: pl.DataFrame, exclude: tuple[str, ...]
) -> tuple[pl.DataFrame, int]:
    """Results with each URL matched to a crawled page (by URL key) and excluded URLs removed.

    Returns (rows, excluded count); unmatched results are kept with matched_page_id null.
    """
    if exclude:
        pattern = "|".join(f"(?:{p})" for p in exclude)
        problem = regex_problem(pattern)
        if problem:
            raise InputError(f"exclude_url_patterns: invalid regex (Rust syntax): {problem}.")
        mask = results["result_url"].str.contains(pattern)
        excluded = int(mask.sum())
        results = results.filter(~mask)
    else:
        excluded = 0
    keys = url_parts(results["result_url"]).select(
        pl.when(pl.col("url_valid")).then(pl.col("url_key")).alias("key")
    )
    matched = pl.concat([results, keys], how="horizontal").join(
        pages.select(pl.col("url_key").alias("key"), pl.col("page_id").alias("matched_page_id")),
        on="key",
        how="left",
    )
    return matched.drop("key"), excluded
