"""One declaration per setting: a core settings dataclass declares each user setting with `setting` (its
default, meaning and bounds), and the Dagster config is derived from it (defs/settings.py)."""

from __future__ import annotations

from dataclasses import field
from typing import Any


def setting(default: Any, description: str, *, unset: Any = None, **bounds: float) -> Any:
    """A user setting: `bounds` are pydantic's ge, gt, le and lt; where the core takes None (auto, no cap),
    `unset` is the value the config spells it with (0 or "")."""
    return field(default=default, metadata={"description": description, "unset": unset, "bounds": bounds})
