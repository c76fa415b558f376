"""The one retry policy (tenacity) for what fails for a while and then passes: a rate-limited or failing
search API, a lake commit that lost a race, a warehouse file another process holds."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import tenacity

Wait = Callable[[tenacity.RetryCallState], float]


def retrying(
    retry_on: Callable[[BaseException], bool],
    *,
    stop: tenacity.stop.stop_base,
    wait: Wait,
    before_sleep: Callable[[tenacity.RetryCallState], None] | None = None,
    asynchronous: bool = False,
) -> tenacity.Retrying | tenacity.AsyncRetrying:
    """A retrier that runs again after the errors `retry_on` accepts, and raises any other error at once and
    the last one when `stop` says so (the caller's own error, never tenacity's RetryError). A new one per
    call: tenacity keeps a call's state in it."""
    kind = tenacity.AsyncRetrying if asynchronous else tenacity.Retrying
    return kind(
        retry=tenacity.retry_if_exception(retry_on),
        stop=stop,
        wait=wait,
        before_sleep=before_sleep,
        reraise=True,
    )


def backoff(first_s: float, max_s: float = math.inf, jitter: tuple[float, float] = (0.5, 1.5)) -> Wait:
    """Exponential backoff: first_s, doubling up to max_s, each wait scaled by a random factor in `jitter`
    so that callers that failed together do not all try again together."""
    exponential = tenacity.wait_exponential(multiplier=first_s, max=max_s)
    return lambda state: exponential(state) * random.uniform(*jitter)
