"""Confidence intervals of the backtest's figures, by resampling the pages they were measured on.

Every figure is a ratio of two counts summed over pages (hits / plan links over source pages, rescues'
hits / rescues over orphans). A page's links are not independent draws — a page the editors link a lot
gives many hits at once — so the intervals come from a bootstrap over pages (Poisson weights: each page
counted 0, 1, 2… times), not from a binomial formula over links, which would be too narrow.
"""

from __future__ import annotations

import numpy as np
import polars as pl

RESAMPLES = 1000
LEVEL = 0.95
# pages weighted at once: the weights matrix is RESAMPLES x CHUNK, so memory stays flat on a large site
CHUNK = 20_000

Interval = tuple[float, float] | None


def ratio_intervals(
    counts: pl.DataFrame,
    unit: str,
    ratios: dict[str, tuple[str, str]],
    seed: int,
    resamples: int = RESAMPLES,
) -> dict[str, Interval]:
    """For each figure name -> (numerator column, denominator column) of `counts` (one row per `unit`, a
    page), the 95% percentile interval of sum(numerator) / sum(denominator) over `resamples`
    Poisson-weighted resamples of the rows (the same under a seed, whatever the rows' order); None where no
    resample has a denominator."""
    columns = sorted({c for pair in ratios.values() for c in pair})
    totals = np.zeros((resamples, len(columns)))
    values = counts.sort(unit).select(pl.col(columns).cast(pl.Float64)).to_numpy()
    rng = np.random.default_rng(seed)
    for start in range(0, counts.height, CHUNK):
        part = values[start : start + CHUNK]
        totals += rng.poisson(1.0, (resamples, len(part))) @ part
    index = {c: i for i, c in enumerate(columns)}
    intervals: dict[str, Interval] = {}
    for name, (numerator, denominator) in ratios.items():
        below = totals[:, index[denominator]]
        kept = below > 0
        if not kept.any():
            intervals[name] = None
            continue
        ratio = totals[kept, index[numerator]] / below[kept]
        low, high = np.quantile(ratio, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        intervals[name] = (float(low), float(high))
    return intervals


def ratio_figures(
    counts: pl.DataFrame, unit: str, ratios: dict[str, tuple[str, str]], seed: int, empty: float | None
) -> tuple[dict[str, float | None], dict[str, Interval]]:
    """Each figure of `ratios` over all of `counts` (sum(numerator) / sum(denominator), `empty` where the
    denominator is 0), and its interval (ratio_intervals)."""
    sums = counts.drop(unit).sum().row(0, named=True) if counts.height else {}
    figures = {
        name: sums[numerator] / sums[denominator] if sums.get(denominator) else empty
        for name, (numerator, denominator) in ratios.items()
    }
    return figures, ratio_intervals(counts, unit, ratios, seed)


def interval_text(interval: Interval | list[float]) -> str:
    """An interval as people read it, "[0.241, 0.287]", or "" for none (a row measured before them)."""
    return f"[{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""
