"""A step waiting for a pool slot sleeps between its claims instead of spinning.

Dagster 1.13.27's `InstanceConcurrencyContext.interval_to_next_pending_claim_check` returns
`min([0, …])`, never more than 0, so the executor's `sleep_til_ready` never sleeps: a run waiting for the
`duckdb_writer` slot loops without pause until its next claim is due. Four sites dropped at once on a
DuckDB file had three waiting processes spinning in that loop, and the four runs took 3.5 times as long
as with this patch (3,213 s against 910 s, benchmarks/bench_scale_out.py). The newer Dagster sources in
our code index have the same line (dagster-io/dagster#20367 was about this busy wait in 2024). Here the
interval is the time until the next claim is due, never below 0; the claims themselves (Dagster's backoff,
1 s growing to 15 s) are unchanged."""

from __future__ import annotations

import time

from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext


def _interval_to_next_pending_claim_check(self: InstanceConcurrencyContext) -> float:
    if not self._pending_claims:
        return 0.0
    now = time.time()
    return max(0.0, min((due - now for due in self._pending_timeouts.values()), default=0.0))


def sleep_between_claims() -> None:
    """Patch Dagster's executor in this process (idempotent)."""
    InstanceConcurrencyContext.interval_to_next_pending_claim_check = _interval_to_next_pending_claim_check
