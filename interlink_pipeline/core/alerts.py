"""Run-failure alerts: a JSON POST to a webhook (Slack-, Teams- or anything-compatible endpoint)."""

from __future__ import annotations

import httpx


def post_alert(url: str, payload: dict, timeout_s: float = 10.0) -> tuple[bool, str]:
    """POST `payload` as JSON; (accepted, what happened). Never raises: an alert must not fail anything."""
    try:
        response = httpx.post(url, json=payload, timeout=timeout_s)
    except httpx.HTTPError as exc:
        return False, f"{type(exc).__name__}: {exc}"
    if response.is_success:
        return True, f"HTTP {response.status_code}"
    return False, f"HTTP {response.status_code}: {response.text[:200]}"
