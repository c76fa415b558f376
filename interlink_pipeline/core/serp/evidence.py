"""SERP evidence: for each page's main query, which of the site's pages a search engine ranks.

A page's query is its main query (a mapped crawl column, or the queries file in its drop folder), else
its cleaned title; the search is `site:{host} {query}` (a template; a path after the host narrows it).

Providers share one shape — queries in, ranked result URLs out:
- `serper`: Serper's Google search API over httpx. Bounded concurrency, timeouts, retries with exponential
  backoff and jitter on 429, 5xx, network errors, timeouts and malformed JSON, honouring Retry-After; a
  per-run request budget. Answers are cached (`serp.cache`, by provider and request, with a TTL) as they
  arrive, so a re-run pays for nothing it already has and a run that dies continues where it stopped. The
  API key is never written to logs, metadata, tables or messages.
- `local`: BM25 over the site's own titles, H1s and meta descriptions, offline and free (not cached: its
  answers change with the crawl; its index is kept between runs instead: see local_search).
- `none`: no SERP evidence.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ml.page_neighbours import Increment
from interlink_pipeline.core.serp.local_search import KeptIndex, search_kept
from interlink_pipeline.core.urls import url_parts
from interlink_pipeline.core.warehouse.store import merge_rows, query

Provider = Literal["auto", "serper", "local", "none"]
SERPER_ENDPOINT = "https://google.serper.dev/search"
RETRY_AFTER_MAX_S = 120.0


@dataclass(frozen=True)
class SerpOptions:
    """Every field is a `serp_results` config setting of the same name."""

    provider: Provider = "auto"
    query_template: str = "site:{host} {query}"
    results_per_query: int = 10
    max_result_pages: int = 1
    exclude_url_patterns: tuple[str, ...] = ()
    cache_ttl_days: float = 30.0
    budget: int = 1000
    concurrency: int = 4
    timeout_s: float = 15.0
    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    max_failed_share: float = 0.0
    country: str | None = None
    language: str | None = None
    refresh_above: float = 0.05  # local provider: a full index build once this share of pages changed
    endpoint: str = SERPER_ENDPOINT
    cost_per_request_usd: float = 0.001


# --- queries ---------------------------------------------------------------------------------------


def search_scope(template: str, host: str) -> tuple[str, str]:
    """(template, path prefix) after validating the template's placeholders."""
    fields = re.findall(r"{(\w*)}", template)
    if fields.count("query") != 1:
        raise InputError(f"query_template '{template}' needs exactly one {{query}} placeholder.")
    unknown = sorted(set(fields) - {"query", "host"})
    if unknown:
        raise InputError(
            f"query_template '{template}' has unknown placeholders {unknown}; use {{host}} and {{query}}."
        )
    scope = re.search(r"site:\{host\}(\S*)", template)
    return template, scope.group(1) if scope else ""


def page_queries(
    pages: pl.DataFrame, site: str, template: str, main_queries: pl.DataFrame | None = None
) -> pl.DataFrame:
    """page_id, base query (main query, else title, else text) and the search string for each page."""
    search_scope(template, site)
    before, _, after = template.replace("{host}", site).partition("{query}")
    frame = pages.select("page_id", "url_key", "title", "text", "main_query")
    if main_queries is not None and main_queries.height:
        frame = frame.join(
            main_queries.select("url_key", pl.col("query").alias("supplied")), on="url_key", how="left"
        )
    else:
        frame = frame.with_columns(pl.lit(None, dtype=pl.String).alias("supplied"))
    base = pl.coalesce("supplied", "main_query", "title", "text").str.strip_chars()
    return frame.select(
        "page_id",
        base.alias("base_query"),
        pl.when(pl.col("supplied").is_not_null())
        .then(pl.lit("queries file"))
        .when(pl.col("main_query").is_not_null())
        .then(pl.lit("main_query column"))
        .when(pl.col("title").is_not_null())
        .then(pl.lit("title"))
        .otherwise(pl.lit("text"))
        .alias("query_source"),
    ).with_columns(pl.concat_str([pl.lit(before), pl.col("base_query"), pl.lit(after)]).alias("query"))


def top_queries(frame: pl.DataFrame) -> pl.DataFrame:
    """url_key -> query: the top query per page of a queries file (most clicks, then impressions)."""
    ranked = frame.with_columns(url_parts(frame["url"]).select("url_key", "url_valid"))
    ranked = ranked.filter(pl.col("url_valid") & pl.col("query").is_not_null() & (pl.col("query") != ""))
    order = [c for c in ("clicks", "impressions") if c in ranked.columns]
    if order:
        ranked = ranked.sort(order, descending=True, nulls_last=True)
    return ranked.unique("url_key", keep="first", maintain_order=True).select("url_key", "query")


# --- Serper over httpx ------------------------------------------------------------------------------


class AuthError(InputError):
    """The search API rejected the key: nothing more is sent."""


class BudgetExhausted(InputError):
    """The run's request budget is spent: what was fetched is cached, the rest waits for the next run."""


@dataclass(frozen=True)
class Request:
    query: str
    page: int

    def key(self, options: SerpOptions) -> str:
        """The cache key: every parameter that changes the answer."""
        body = {
            "q": self.query,
            "num": options.results_per_query,
            "page": self.page,
            "gl": options.country,
            "hl": options.language,
        }
        return hashlib.md5(json.dumps(body, sort_keys=True).encode()).hexdigest()


@dataclass
class Answer:
    request: Request
    results: list[dict]  # position, link, title
    fetched_at: datetime


@dataclass
class FetchReport:
    requests_sent: int = 0
    billed: int = 0  # answered requests (what Serper charges for)
    retries: int = 0
    answers: list[Answer] = field(default_factory=list)
    failures: dict[Request, str] = field(default_factory=dict)  # request -> why (no secrets)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    if value.strip().isdigit():
        return float(value)
    parsed = email.utils.parsedate_to_datetime(value)
    return max(0.0, (parsed - datetime.now(parsed.tzinfo or UTC)).total_seconds()) if parsed else None


def _redact(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


async def _fetch(
    requests: list[Request],
    options: SerpOptions,
    api_key: str,
    on_answers: Callable[[list[Answer]], None],
    flush_every: int = 25,
) -> FetchReport:
    import httpx

    report = FetchReport()
    limit = asyncio.Semaphore(max(1, options.concurrency))
    pending: list[Answer] = []
    stop: list[BaseException] = []  # the first AuthError or BudgetExhausted: nothing more is sent

    def flush() -> None:
        if pending:
            on_answers(list(pending))
            pending.clear()

    async def one(client: httpx.AsyncClient, request: Request) -> None:
        body = {"q": request.query, "num": options.results_per_query, "page": request.page}
        body |= {k: v for k, v in (("gl", options.country), ("hl", options.language)) if v}
        reason = "not sent"
        for attempt in range(options.max_retries + 1):
            async with limit:
                if stop:
                    return
                if report.requests_sent >= options.budget:
                    stop.append(BudgetExhausted(f"request budget of {options.budget} reached"))
                    return
                report.requests_sent += 1
                wait = None
                try:
                    response = await client.post(options.endpoint, json=body)
                except httpx.TimeoutException:
                    reason = f"timed out after {options.timeout_s:g}s"
                except httpx.TransportError as exc:
                    reason = f"network error: {type(exc).__name__}"
                else:
                    if response.status_code in (401, 403):
                        stop.append(
                            AuthError(
                                f"the search API rejected the API key (HTTP {response.status_code}); check "
                                "SERPER_API_KEY. Nothing more was sent; answers already fetched are cached."
                            )
                        )
                        return
                    if response.status_code == 429 or response.status_code >= 500:
                        reason = f"HTTP {response.status_code}"
                        wait = _retry_after(response.headers.get("retry-after"))
                    elif response.status_code != 200:
                        reason = f"HTTP {response.status_code}: {_redact(response.text[:200], api_key)}"
                        break  # a client error that retrying will not fix
                    else:
                        try:
                            organic = response.json().get("organic", [])
                            results = [
                                {
                                    "position": int(r.get("position", i + 1)),
                                    "link": str(r["link"]),
                                    "title": str(r.get("title", "")),
                                }
                                for i, r in enumerate(organic)
                            ]
                        except (ValueError, KeyError, TypeError, AttributeError):
                            reason = "malformed JSON in the answer"
                        else:
                            report.billed += 1
                            pending.append(Answer(request, results, datetime.now(UTC).replace(tzinfo=None)))
                            if len(pending) >= flush_every:
                                flush()
                            return
            if attempt < options.max_retries:
                report.retries += 1
                if wait is not None:  # the server said when: honour it (within reason)
                    delay = min(RETRY_AFTER_MAX_S, wait)
                else:  # exponential backoff with jitter
                    delay = min(options.backoff_max_s, options.backoff_base_s * 2**attempt) * random.uniform(
                        0.5, 1.5
                    )
                await asyncio.sleep(delay)
        report.failures[request] = reason

    headers = {"X-API-KEY": api_key, "Content-Type": "application/json"}
    async with httpx.AsyncClient(headers=headers, timeout=options.timeout_s) as client:
        try:
            await asyncio.gather(*(one(client, r) for r in requests))
        finally:
            flush()
    if stop:
        raise stop[0]
    return report


def fetch_serper(
    requests: list[Request],
    options: SerpOptions,
    api_key: str,
    on_answers: Callable[[list[Answer]], None],
) -> FetchReport:
    """Send `requests` (each at most once successfully); `on_answers` receives answers in batches, as they
    arrive, so they can be cached before anything else can go wrong. Raises AuthError or BudgetExhausted."""
    if not api_key:
        raise InputError("provider 'serper' needs an API key: set SERPER_API_KEY (or use provider local).")
    return asyncio.run(_fetch(requests, options, api_key, on_answers))


def cache_rows(answers: list[Answer], options: SerpOptions, provider: str = "serper") -> pl.DataFrame:
    return pl.DataFrame(
        {
            "provider": [provider] * len(answers),
            "request_key": [a.request.key(options) for a in answers],
            "query": [a.request.query for a in answers],
            "result_page": [a.request.page for a in answers],
            "fetched_at": [a.fetched_at for a in answers],
            "results": [json.dumps(a.results, ensure_ascii=False) for a in answers],
            "result_count": [len(a.results) for a in answers],
        },
        schema={
            "provider": pl.String,
            "request_key": pl.String,
            "query": pl.String,
            "result_page": pl.Int32,
            "fetched_at": pl.Datetime("us"),
            "results": pl.String,
            "result_count": pl.Int32,
        },
    )


def fresh_cutoff(options: SerpOptions) -> datetime:
    return datetime.now(UTC).replace(tzinfo=None) - timedelta(days=options.cache_ttl_days)


# --- results ---------------------------------------------------------------------------------------


def match_results(
    results: pl.DataFrame, pages: pl.DataFrame, exclude: tuple[str, ...]
) -> tuple[pl.DataFrame, int]:
    """Results with each URL matched to a crawled page (by URL key) and excluded URLs removed.

    Returns (rows, excluded count); unmatched results are kept with matched_page_id null.
    """
    if exclude:
        pattern = "|".join(f"(?:{p})" for p in exclude)
        try:
            re.compile(pattern)
        except re.error as exc:
            raise InputError(f"exclude_url_patterns: invalid regex ({exc}).") from None
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


# --- the serp_results step -------------------------------------------------------------------------


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
    depth = options.results_per_query * options.max_result_pages
    if provider == "none":
        results = pl.DataFrame(
            schema={
                "page_id": pl.String,
                "query": pl.String,
                "rank": pl.Int32,
                "result_url": pl.String,
                "result_title": pl.String,
                "fetched_at": pl.Datetime("us"),
            }
        )
    elif provider == "local":
        _, prefix = search_scope(options.query_template, site)
        ordered = pages.sort("page_id")  # ties go to the first page by id, whatever order the rows came in
        found, run.index, run.search = search_kept(
            ordered,
            asked["base_query"].to_list(),
            depth,
            prefix,
            options.language,
            options.refresh_above,
            kept_index,
        )
        results = (
            found.join(
                asked.with_row_index("query_index").select(
                    pl.col("query_index").cast(pl.Int64), "page_id", "query"
                ),
                on="query_index",
            )
            .join(
                ordered.with_row_index("row").select(
                    pl.col("row").cast(pl.Int64),
                    pl.col("url").alias("result_url"),
                    pl.col("title").alias("result_title"),
                ),
                on="row",
            )
            .select(
                "page_id",
                "query",
                "rank",
                "result_url",
                "result_title",
                pl.lit(datetime.now(UTC).replace(tzinfo=None)).dt.cast_time_unit("us").alias("fetched_at"),
            )
        )
    elif provider == "serper":
        results = _serper_results(warehouse, asked, options, api_key or "", run)
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


def _serper_results(
    warehouse: str, asked: pl.DataFrame, options: SerpOptions, api_key: str, run: SerpRun
) -> pl.DataFrame:
    requests = [
        Request(q, page)
        for q in asked["query"].unique(maintain_order=True)
        for page in range(1, options.max_result_pages + 1)
    ]
    keys = pl.DataFrame({"request_key": [r.key(options) for r in requests]})
    fresh = set(
        query(
            warehouse,
            "SELECT c.request_key FROM serp.cache c JOIN wanted USING (request_key) "
            "WHERE c.provider = 'serper' AND c.fetched_at >= ?",
            [fresh_cutoff(options)],
            {"wanted": keys},
        )["request_key"]
    )
    todo = [r for r in requests if r.key(options) not in fresh]
    run.cache_hits = len(requests) - len(todo)

    def save(answers: list[Answer]) -> None:
        merge_rows(
            warehouse, "serp.cache", cache_rows(answers, options), ["provider", "request_key"], replace=True
        )

    if todo:
        run.fetch = fetch_serper(todo, options, api_key, save)
    failed = len(run.fetch.failures)
    if failed and failed / max(1, len(requests)) > options.max_failed_share:
        examples = "; ".join(
            f"'{r.query}' (page {r.page}): {why}" for r, why in list(run.fetch.failures.items())[:3]
        )
        raise InputError(
            f"{failed} of {len(requests)} search requests failed after {options.max_retries} retries (e.g. "
            f"{examples}). The {run.fetch.billed} answered ones are cached; re-run to retry the rest, or "
            "allow some failures with max_failed_share."
        )
    cached = query(
        warehouse,
        "SELECT c.request_key, c.query, c.result_page, c.results, c.fetched_at FROM serp.cache c "
        "JOIN wanted USING (request_key) WHERE c.provider = 'serper'",
        [],
        {"wanted": keys},
    )
    rows = (
        cached.with_columns(
            pl.col("results")
            .str.json_decode(
                pl.List(pl.Struct({"position": pl.Int64, "link": pl.String, "title": pl.String}))
            )
            .alias("hit")
        )
        .explode("hit")
        .drop_nulls("hit")
        .unnest("hit")
        .select(
            "query",
            ((pl.col("result_page") - 1) * options.results_per_query + pl.col("position"))
            .cast(pl.Int32)
            .alias("rank"),
            pl.col("link").alias("result_url"),
            pl.col("title").alias("result_title"),
            pl.col("fetched_at").dt.cast_time_unit("us"),
        )
        .unique(["query", "rank"], keep="first")
    )
    return asked.select("page_id", "query").join(rows, on="query")
