"""What a step checks on the rows it is about to write: each invariant's outcome and the figures that show
why. The shell reports them as asset checks; a failing blocking one writes nothing."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Invariant:
    """One invariant evaluated on a step's rows. A failing `blocking` one means the rows are wrong; a
    failing non-blocking one that the settings cannot be met on this site (a warning)."""

    name: str
    passed: bool
    figures: dict[str, object]
    blocking: bool = True
