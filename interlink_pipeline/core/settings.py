"""One declaration per setting: a core settings dataclass declares each user setting with `setting` (its
default, meaning and bounds), and the Dagster config is derived from it (defs/settings.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any


def setting(
    default: Any,
    description: str,
    *,
    unset: Any = None,
    check: Callable[[Any], None] | None = None,
    **bounds: float,
) -> Any:
    """A user setting: `bounds` are pydantic's ge, gt, le and lt; where the core takes None (auto, no cap),
    `unset` is the value the config spells it with (0 or ""); `check` raises ValueError for a value the
    bounds cannot express, checked with the config before any step runs."""
    return field(
        default=default,
        metadata={"description": description, "unset": unset, "bounds": bounds, "check": check},
    )


def rust_regexes(value: str | list[str] | tuple[str, ...] | None) -> None:
    """Refuse a pattern (or any of several) that polars' regex engine (Rust syntax) cannot compile."""
    for pattern in [value] if isinstance(value, str) else value or ():
        problem = regex_problem(pattern)
        if problem:
            raise ValueError(f"{pattern!r} is not a valid regex (Rust syntax): {problem}")


def regex_problem(pattern: str) -> str | None:
    """What is wrong with `pattern` as polars reads it (its engine's own words), or None."""
    import polars as pl

    try:
        pl.Series([""], dtype=pl.String).str.contains(pattern)
    except pl.exceptions.ComputeError as exc:
        said = [line.strip() for line in str(exc).splitlines()]
        return next((line.removeprefix("error: ") for line in said if line.startswith("error:")), said[0])
    return None
