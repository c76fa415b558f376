"""The serp_results step's settings, shared by the step, the Serper client and the cache."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Provider = Literal["auto", "serper", "local", "none"]
SERPER_ENDPOINT = "https://google.serper.dev/search"


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
