"""Confidence in words: a planned link's band (high, medium, low, or not scored) with what the site's own
backtest measured for its kind ("high: 7 in 10 such links were the editors' own"), and a probability
printed one way everywhere a person reads it (never 1.6e-06).

A topical link's band follows its probability against the plan's own bar, `min_probability`: at or above
HIGH_FACTOR times it is high, at or above it medium (a likely link), under it low; a link the ranker did
not score is not scored (a hub, a section: the site's structure chose it, which hidden in-content links
cannot measure). A structural link's target is forced (an orphan's rescue, a depth shortcut, a bridge) and
its probability says little of it: its band is what the backtest measured for its reason — the share of
its links that were the editors' own, read against the same bars as a probability, counting those into
pages that lost an in-link to the hiding (the backtest cannot tell a rescue of a page nobody ever linked
right or wrong) — and it keeps its probability's band only where the backtest did not measure its reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import polars as pl

from interlink_pipeline.core.warehouse.vocabularies import CONFIDENCE_BANDS, STRUCTURAL_REASONS

BANDS = CONFIDENCE_BANDS
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


@dataclass(frozen=True)
class MeasuredConfidence:
    """What the site's last backtest measured: each band's and each reason's links, hits and precision,
    and the min_probability its plan ran at (None: no backtest yet)."""

    by_band: list[dict] = field(default_factory=list)
    by_reason: list[dict] = field(default_factory=list)
    min_probability: float | None = None

    @classmethod
    def of(cls, backtest: pl.DataFrame) -> MeasuredConfidence:
        """From the site's last graph.backtest_runs row (none: nothing measured)."""
        if backtest.is_empty():
            return cls()
        row = backtest.row(0, named=True)
        plan = json.loads(row.get("settings") or "{}").get("plan", {})
        return cls(
            json.loads(row.get("precision_by_band") or "[]"),
            json.loads(row.get("precision_by_reason") or "[]"),
            plan.get("min_probability"),
        )


def link_confidence(plan: pl.DataFrame, measured: MeasuredConfidence, min_probability: float) -> pl.DataFrame:
    """`confidence` and `confidence_note` for each planned link (columns reason, probability), as the
    module says; the same plan and backtest give the same words on every run."""
    floor = measured.min_probability if measured.min_probability is not None else min_probability
    by_probability = band(pl.col("probability"), floor)
    kinds = {
        row["reason"]: row
        for row in measured.by_reason
        if row["reason"] in STRUCTURAL_REASONS and row.get("known") and row.get("known_precision") is not None
    }
    kind_band = {reason: _band_of(row["known_precision"], floor) for reason, row in kinds.items()}
    kind_note = {
        reason: f"{kind_band[reason]}: {in_ten(row['known_precision'])} {reason.replace('-', ' ')} links "
        f"were the editors' own in the backtest ({round(row['known_precision'] * row['known']):,} of the "
        f"{row['known']:,} it could tell)"
        for reason, row in kinds.items()
    }
    words = band_words(measured.by_band)
    if not measured.by_band:
        words = {name: f"{name}: {BAND_RULES[name]}; no backtest has measured it yet" for name in BANDS}
    measured_kind = pl.col("reason").is_in(list(kinds))
    confidence = (
        pl.when(measured_kind)
        .then(pl.col("reason").replace_strict(kind_band, default=None))
        .otherwise(by_probability)
    )
    note = (
        pl.when(measured_kind)
        .then(pl.col("reason").replace_strict(kind_note, default=None))
        .otherwise(by_probability.replace_strict(words))
    )
    return plan.select(confidence.alias("confidence"), note.alias("confidence_note"))


BAND_RULES = {
    "high": f"probability at {HIGH_FACTOR:g} times min_probability or more by the site's ranker",
    "medium": "probability at min_probability or more by the site's ranker",
    "low": "probability under min_probability by the site's ranker",
    "not scored": "no probability (the site's structure chose it)",
}


def _band_of(share: float, min_probability: float) -> str:
    """The band a measured share of right links takes, read as the probability it is: the bars of band()."""
    if share >= HIGH_FACTOR * min_probability:
        return BANDS[0]
    return BANDS[1] if share >= min_probability else BANDS[2]


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
