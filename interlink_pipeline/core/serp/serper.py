"""The `serper` provider: Serper's Google search API over httpx.

Bounded concurrency, timeouts, retries with exponential backoff and jitter on 429, 5xx, network errors,
timeouts and malformed JSON, honouring Retry-After; a per-run request budget. Answers go to a callback in
batches as they arrive (the step caches them there), so a run that dies has kept what it paid for. The API
key is never written to logs, metadata, tables or messages.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import tenacity

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.retries import backoff, retrying
from interlink_pipeline.core.serp.options import SerpOptions

if TYPE_CHECKING:
    import httpx

RETRY_AFTER_MAX_S = 120.0
ANSWER_BATCH = 25  # answers handed on at once: what a run that dies can lose is at most one batch


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

    def body(self, options: SerpOptions) -> dict:
        """What is posted: the parameters set, without the unset country and language."""
        body = {"q": self.query, "num": options.results_per_query, "page": self.page}
        return body | {k: v for k, v in (("gl", options.country), ("hl", options.language)) if v}


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
    failures: dict[Request, str] = field(default_factory=dict)  # request -> why (no secrets)


class _Failed(Exception):
    """Why an attempt got no answer; `retry`: whether trying again may help; `wait`: the server's
    Retry-After, in seconds."""

    def __init__(self, reason: str, retry: bool = True, wait: float | None = None):
        super().__init__(reason)
        self.reason, self.retry, self.wait = reason, retry, wait


def _retry_after(value: str | None) -> float | None:
    """The wait a Retry-After header asks for (seconds, or an HTTP date); None when there is none or it
    cannot be read ("soon"): then the backoff decides."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (parsed - datetime.now(parsed.tzinfo or UTC)).total_seconds())


def _redact(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


def _organic(answer: dict) -> list[dict]:
    """The ranked results of an answer's JSON; raises on a malformed one."""
    return [
        {"position": int(r.get("position", i + 1)), "link": str(r["link"]), "title": str(r.get("title", ""))}
        for i, r in enumerate(answer.get("organic", []))
    ]


class _Session:
    """One run's requests: the shared limit and budget, the answers waiting to be handed on, and the first
    AuthError or BudgetExhausted (after which nothing more is sent)."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        options: SerpOptions,
        api_key: str,
        on_answers: Callable[[list[Answer]], None],
    ):
        self.client = client
        self.options = options
        self.api_key = api_key
        self.on_answers = on_answers
        self.report = FetchReport()
        self.limit = asyncio.Semaphore(max(1, options.concurrency))
        self.backoff = backoff(options.backoff_base_s, options.backoff_max_s)
        self.pending: list[Answer] = []
        self.stop: InputError | None = None

    def flush(self) -> None:
        if self.pending:
            self.on_answers(list(self.pending))
            self.pending.clear()

    async def send(self, request: Request) -> None:
        """Try `request` until it is answered, fails for good or the run stops; a failure's reason goes
        to the report."""
        body = request.body(self.options)
        attempts = retrying(
            lambda exc: isinstance(exc, _Failed) and exc.retry,
            stop=tenacity.stop_after_attempt(self.options.max_retries + 1),
            wait=self._delay,
            before_sleep=self._count_retry,
            asynchronous=True,
        )
        try:
            async for attempt in attempts:
                with attempt:
                    async with self.limit:
                        if self.stop is not None:
                            return
                        if self.report.requests_sent >= self.options.budget:
                            self.stop = BudgetExhausted(f"request budget of {self.options.budget} reached")
                            return
                        await self._attempt(request, body)
        except _Failed as failed:
            self.report.failures[request] = failed.reason

    async def _attempt(self, request: Request, body: dict) -> None:
        """Post `request` once; raises _Failed when it got no answer (a rejected key stops the run
        instead)."""
        import httpx

        self.report.requests_sent += 1
        try:
            response = await self.client.post(self.options.endpoint, json=body)
        except httpx.TimeoutException:
            raise _Failed(f"timed out after {self.options.timeout_s:g}s") from None
        except httpx.TransportError as exc:
            raise _Failed(f"network error: {type(exc).__name__}") from None
        status = response.status_code
        if status in (401, 403):
            if self.stop is None:
                self.stop = AuthError(
                    f"the search API rejected the API key (HTTP {status}); check "
                    "SERPER_API_KEY. Nothing more was sent; answers already fetched are cached."
                )
            return
        if status == 429 or status >= 500:
            raise _Failed(f"HTTP {status}", wait=_retry_after(response.headers.get("retry-after")))
        if status != 200:  # a client error that retrying will not fix
            raise _Failed(f"HTTP {status}: {_redact(response.text[:200], self.api_key)}", retry=False)
        try:
            results = _organic(response.json())
        except (ValueError, KeyError, TypeError, AttributeError):
            raise _Failed("malformed JSON in the answer") from None
        self.report.billed += 1
        self.pending.append(Answer(request, results, datetime.now(UTC).replace(tzinfo=None)))
        if len(self.pending) >= ANSWER_BATCH:
            self.flush()

    def _delay(self, state: tenacity.RetryCallState) -> float:
        """The server's Retry-After when it said when (within reason), else the backoff."""
        wait = state.outcome.exception().wait
        return self.backoff(state) if wait is None else min(RETRY_AFTER_MAX_S, wait)

    def _count_retry(self, _state: tenacity.RetryCallState) -> None:
        self.report.retries += 1


async def _fetch(
    requests: list[Request],
    options: SerpOptions,
    api_key: str,
    on_answers: Callable[[list[Answer]], None],
) -> FetchReport:
    import httpx

    headers = {"X-API-KEY": api_key, "Content-Type": "application/json"}
    async with httpx.AsyncClient(headers=headers, timeout=options.timeout_s) as client:
        session = _Session(client, options, api_key, on_answers)
        try:
            await asyncio.gather(*(session.send(r) for r in requests))
        finally:
            session.flush()
    if session.stop is not None:
        raise session.stop
    return session.report


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
