"""Run-failure alerts: a row in ops.run_failures and a JSON POST to a webhook (Slack-, Teams- or
anything-compatible endpoint), the same for a run from the CLI, the sensor, a schedule or the UI."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx
import polars as pl


def post_alert(url: str, payload: dict, timeout_s: float = 10.0) -> tuple[bool, str]:
    """POST `payload` as JSON; (accepted, what happened). Never raises: an alert must not fail anything."""
    try:
        response = httpx.post(url, json=payload, timeout=timeout_s)
    except httpx.HTTPError as exc:
        return False, f"{type(exc).__name__}: {exc}"
    if response.is_success:
        return True, f"HTTP {response.status_code}"
    return False, f"HTTP {response.status_code}: {response.text[:200]}"


def failure_summary(payload: dict) -> str:
    where = f" for {payload['site']}" if payload["site"] else ""
    step = f" at {payload['step']}" if payload["step"] else ""
    return f"interlink_pipeline: {payload['job']} failed{where}{step}: {payload['message'][:300]}"


def record_failure(
    payload: dict, warehouse: str | Path, webhook_url: str, timeout_s: float, lock_timeout_s: float
) -> tuple[bool, str]:
    """Post a failed run (run_id, job, site, step, message) to the webhook when one is set, and keep it in
    ops.run_failures; (notified, what the webhook said)."""
    from interlink_pipeline.core.warehouse.store import merge_rows

    notified, outcome = False, "no webhook set"
    if webhook_url:
        notified, outcome = post_alert(webhook_url, {"text": failure_summary(payload), **payload}, timeout_s)
    row = pl.DataFrame(
        [{**payload, "message": payload["message"][:2000], "notified": notified,
          "failed_at": datetime.now(UTC).replace(tzinfo=None)}],
        schema={"run_id": pl.String, "job": pl.String, "site": pl.String, "failed_at": pl.Datetime("us"),
                "step": pl.String, "message": pl.String, "notified": pl.Boolean},
    )  # fmt: skip
    merge_rows(warehouse, "ops.run_failures", row, ["run_id"], lock_timeout_s=lock_timeout_s)
    return notified, outcome
