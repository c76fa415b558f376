"""Numbers for people: 4 significant digits in what a person reads (run metadata, spreadsheets), so that
0.30000000000000004 reads 0.3; the warehouse tables keep full precision."""

from __future__ import annotations

import math
from typing import Any

SIGNIFICANT_DIGITS = 4
SEED_LIMIT = 2**32  # seeds are below it: scikit-learn's random_state refuses larger ones


def significant(value: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """`value` to `digits` significant digits (NaN and infinities as they are)."""
    return float(f"{value:.{digits}g}") if math.isfinite(value) else value


def for_people(value: Any) -> Any:
    """Every float in `value` (nested in dicts, lists and tuples too) to significant digits."""
    if isinstance(value, float):
        return significant(value)
    if type(value) is dict:
        return {key: for_people(item) for key, item in value.items()}
    if type(value) in (list, tuple):  # exactly: records (named tuples) are left whole
        return type(value)(for_people(item) for item in value)
    return value


def whole_number(variable: str, value: str, unit: str, most: int) -> int:
    """A setting's whole number from 1 to `most`, written in ASCII digits ("²" and "٣" are digits to
    Python, not to a person setting a variable); ValueError naming the variable otherwise."""
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= most:
        raise ValueError(f"${variable} must be a whole number of {unit} from 1 to {most:,}, not {value!r}.")
    return int(value)
