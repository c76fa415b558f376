"""The serp_results step's settings, shared by the step, the Serper client and the cache."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from interlink_pipeline.core.settings import rust_regexes, setting

Provider = Literal["auto", "serper", "local", "none"]
SERPER_ENDPOINT = "https://google.serper.dev/search"


@dataclass(frozen=True)
class SerpOptions:
    """The `serp_results` step's settings (its Dagster config is derived from the `setting` fields)."""

    provider: Provider = setting(
        "auto", "auto: serper when SERPER_API_KEY is set, else local (offline BM25)."
    )
    query_template: str = setting(
        "site:{host} {query}", "The search; a path after {host} narrows it (site:{host}/blog)."
    )
    results_per_query: int = setting(10, "Results per search (Serper 'num').", ge=1, le=100)
    max_result_pages: int = setting(1, "Result pages fetched per query (each billed).", ge=1, le=10)
    exclude_url_patterns: tuple[str, ...] = setting((), "Regexes: results to ignore.", check=rust_regexes)
    cache_ttl_days: float = setting(30.0, "Cached answers older than this are refetched.", ge=0)
    budget: int = setting(1000, "Most requests sent per run (retries included).", ge=0)
    concurrency: int = setting(4, "Requests in flight at once.", ge=1, le=64)
    timeout_s: float = setting(15.0, "Per-request timeout.", gt=0)
    max_retries: int = setting(4, "Retries on 429, 5xx, timeouts, bad JSON.", ge=0, le=10)
    backoff_base_s: float = setting(0.5, "First retry delay (doubles, with jitter).", ge=0)
    backoff_max_s: float = setting(30.0, "Longest backoff delay.", ge=0)
    max_failed_share: float = setting(
        0.0, "Share of requests allowed to fail for the run to still succeed.", ge=0, le=1
    )
    country: str | None = setting(None, "Serper 'gl' (e.g. 'es').")
    language: str | None = setting(None, "Serper 'hl' / the local engine's stop words.")
    refresh_above: float = setting(
        0.05,
        "Local provider: a re-crawl answers from the kept index (statistics as at its last full build) "
        "until this share of pages changed since; then the index is built in full again.",
        ge=0,
        le=1,
    )
    capped_above: int | None = setting(
        50_000,
        "Local provider: past this many pages a full build caps each word's postings at its 250 best pages, "
        "kept where the capped search finds 98% of a full search's results on 1,000 queries (else the full "
        "search answers, and the run says so); 0: never.",
        unset=0,
        ge=0,
    )
    endpoint: str = SERPER_ENDPOINT
    cost_per_request_usd: float = setting(0.001, "For the cost estimate in metadata.", ge=0)
