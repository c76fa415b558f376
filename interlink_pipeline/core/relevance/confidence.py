"""Confidence in words: a planned link's probability said as a band (high, medium, low, or not scored) with
what the site's own backtest measured for that band ("high: 7 in 10 such links were the editors' own"),
and a probability printed one way everywhere a person reads it (never 1.6e-06).

The bands follow the plan's own bar, `min_probability`: at or above HIGH_FACTOR times it is high, at or
above it medium (a likely link), under it low (a structural link no page is a likely place for, or a link
into a page that needs one taken at a lower bar); a link the ranker did not score (a hub) is not scored.
"""

from __future__ import annotations

import polars as pl

BANDS = ("high", "medium", "low", "not scored")
HIGH_FACTOR = 3.0  # times min_probability: a high band's floor (0.3 by default)


def band(probability: pl.Expr, min_probability: float) -> pl.Expr:
    """Each probability's band (a null probability is not scored)."""
    return (
        pl.when(probability.is_null())
        .then(pl.lit(BANDS[3]))
        .when(probability >= HIGH_FACTOR * min_probability)
        .then(pl.lit(BANDS[0]))
        .when(probability >= min_probability)
        .then(pl.lit(BANDS[1]))
        .otherwise(pl.lit(BANDS[2]))
    )


def precision_by_band(planned: pl.DataFrame, hits: pl.Series, min_probability: float) -> list[dict]:
    """Per band (in BANDS order, those with links): links, hits and precision — `planned` has a probability
    column, `hits` flags the planned links that were hidden links."""
    rows = (
        planned.select(band(pl.col("probability"), min_probability).alias("band"))
        .with_columns(hits.cast(pl.Int64).alias("hit"))
        .group_by("band")
        .agg(pl.len().alias("links"), pl.col("hit").sum().alias("hits"))
    )
    found = {row["band"]: row for row in rows.iter_rows(named=True)}
    return [
        {"band": name, "links": found[name]["links"], "hits": found[name]["hits"],
         "precision": found[name]["hits"] / found[name]["links"]}
        for name in BANDS
        if name in found
    ]  # fmt: skip


def in_ten(precision: float) -> str:
    """A share as people say it: "7 in 10", "fewer than 1 in 10"."""
    tenths = round(precision * 10)
    return f"{tenths} in 10" if tenths else "fewer than 1 in 10"


def band_words(measured: list[dict]) -> dict[str, str]:
    """Each band in words, with what the backtest measured where it did ("high: 7 in 10 such links were
    the editors' own in the backtest")."""
    said = {
        row["band"]: f"{row['band']}: {in_ten(row['precision'])} such links were the editors' own in the "
        f"backtest ({row['hits']:,} of {row['links']:,})"
        for row in measured
    }
    return {name: said.get(name, name) for name in BANDS}


def probability_text(probability: pl.Expr) -> pl.Expr:
    """A probability as a person reads it: a percentage to two significant digits, "under 0.1%" below
    that, "not scored" for none."""
    percent = probability.cast(pl.Float64) * 100
    return (
        pl.when(probability.is_null())
        .then(pl.lit(BANDS[3]))
        .when(percent < 0.1)
        .then(pl.lit("under 0.1%"))
        .when(percent < 10)
        .then(percent.round(1).cast(pl.String) + pl.lit("%"))
        .otherwise(percent.round(0).cast(pl.Int64).cast(pl.String) + pl.lit("%"))
    )
