"""A backtest's run: what it ran under, its row in graph.backtest_runs, and whether an earlier measurement
still stands for the site."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from interlink_pipeline.core.files import load_state, save_state
from interlink_pipeline.core.ingest.link_graph import LinkGraph
from interlink_pipeline.core.relevance.backtest import BacktestResult
from interlink_pipeline.core.relevance.intervals import interval_text
from interlink_pipeline.core.relevance.link_ranker import (
    RankerOptions,
)
from interlink_pipeline.core.relevance.ranker_inputs import (
    SiteState,
    site_state,
    still_fits,
    training_fingerprint,
)
from interlink_pipeline.core.relevance.site_signals import CandidateOptions, SiteSignals
from interlink_pipeline.core.warehouse.site_tables import SiteTables

# Fewer hidden links than this and a backtest's precision says next to nothing (one link more or less found
# moves it by 5 points or more): the step warns, naming the interval.
MIN_MEASURED_LINKS = 20


@dataclass(frozen=True)
class BacktestSetup:
    """What a backtest runs under: which links it hides (`fraction`, `seed`), its `k`, and the settings of
    the candidates, ranker and plan it rebuilds."""

    fraction: float
    seed: int
    k: int
    orphan_fraction: float
    candidates: CandidateOptions
    ranker: RankerOptions
    plan: Any  # the plan's settings (a dataclass): the planning itself is handed to run_backtest

    def settings(self) -> dict[str, dict]:
        """The rebuilt steps' settings, as recorded with the backtest's row."""
        return {
            "candidates": dataclasses.asdict(self.candidates),
            "ranker": dataclasses.asdict(self.ranker),
            "plan": dataclasses.asdict(self.plan),
        }


def measured_inputs(
    setup: BacktestSetup,
    signals: SiteSignals,
    links: LinkGraph,
    page_ids: pl.Series,
    model_id: str,
    decided: pl.DataFrame | None = None,
) -> tuple[str, str, SiteState]:
    """What a backtest measures: the training inputs' fingerprint, a hash of its setup and embedding model,
    and the site's state; an earlier backtest stands while they still fit (see link_ranker.still_fits)."""
    measured = json.dumps(
        {**setup.settings(), "fraction": setup.fraction, "orphan_fraction": setup.orphan_fraction,
         "k": setup.k, "model": model_id}
    )  # fmt: skip
    return (
        training_fingerprint(signals, links, setup.candidates, setup.ranker, model_id, decided),
        hashlib.sha256(measured.encode()).hexdigest(),
        site_state(page_ids, signals, links, decided),
    )


def backtest_row(
    setup: BacktestSetup,
    result: BacktestResult,
    site: str,
    run_id: str,
    crawl_id: str,
    ran_at: datetime,
    seconds: float,
) -> pl.DataFrame:
    """graph.backtest_runs: the run's row, the plan and the candidates next to the baseline."""
    f = result.figures
    return pl.DataFrame(
        {
            "site": [site],
            "run_id": [run_id],
            "ran_at": [ran_at],
            "crawl_id": [crawl_id],
            "seed": [setup.seed],
            "fraction": [setup.fraction],
            "hidden_links": [result.hidden_links],
            "settings": [json.dumps(setup.settings())],
            "ranker": [result.ranker.reason],
            "plan_links": [int(f["plan_links"])],
            "plan_precision": [f["plan_precision"]],
            "plan_recall": [f["plan_recall"]],
            "baseline_precision": [f["baseline_precision"]],
            "baseline_recall": [f["baseline_recall"]],
            "k": [setup.k],
            "candidate_precision_at_k": [f["candidate_precision_at_k"]],
            "candidate_recall_at_k": [f["candidate_recall_at_k"]],
            "baseline_precision_at_k": [f["baseline_precision_at_k"]],
            "baseline_recall_at_k": [f["baseline_recall_at_k"]],
            "candidate_coverage": [f["candidate_coverage"]],
            "orphan_fraction": [setup.orphan_fraction],
            "orphaned_pages": [int(f["orphaned_pages"])],
            "orphan_rescues": [int(f["orphan_rescues"])],
            "orphan_rescue_precision": [f["orphan_rescue_precision"]],
            "orphan_baseline_precision": [f["orphan_baseline_precision"]],
            "decisions_learned": [int(f["decisions_learned"])],
            "plan_precision_without_decisions": [f["plan_precision_without_decisions"]],
            "precision_by_reason": [json.dumps(result.by_reason.to_dicts())],
            "seconds": [seconds],
            "measured_in_run": [run_id],
            "intervals": [json.dumps(result.intervals)],
            "precision_by_band": [json.dumps(result.by_band)],
        },
        schema_overrides={
            "ran_at": pl.Datetime("us"),
            "seed": pl.Int64,
            "hidden_links": pl.Int32,
            "plan_links": pl.Int32,
            "k": pl.Int32,
            "orphaned_pages": pl.Int32,
            "orphan_rescues": pl.Int32,
            "orphan_rescue_precision": pl.Float64,
            "orphan_baseline_precision": pl.Float64,
            "decisions_learned": pl.Int32,
            "plan_precision_without_decisions": pl.Float64,
        },
    )


@dataclass
class BacktestInputs:
    """What a backtest measured (inputs and settings fingerprints, the site), kept beside the ranker."""

    fingerprint: str
    settings: str
    state: SiteState
    run_id: str


def measurement_path(tables: SiteTables, site: str) -> Path:
    return tables.kept_state(site) / "backtest_inputs.joblib"


def earlier_measurement(
    tables: SiteTables, site: str, now: tuple[str, str, SiteState], remeasure_above: float
) -> tuple[pl.DataFrame | None, str]:
    """The latest backtest row when it still measures this site (see still_fits), and why it does or not."""
    kept = load_state(measurement_path(tables, site), BacktestInputs)
    if kept is None:
        return None, "no earlier backtest of this site"
    fits, why = still_fits((kept.fingerprint, kept.settings, kept.state), now, remeasure_above)
    if not fits:
        return None, why
    rows = tables.query(
        "SELECT * FROM graph.backtest_runs WHERE site = ? AND run_id = ? ORDER BY ran_at DESC LIMIT 1",
        [site, kept.run_id],
    )
    return (rows, why) if rows.height else (None, "its run is no longer in graph.backtest_runs")


def keep_measurement(tables: SiteTables, site: str, now: tuple[str, str, SiteState], run_id: str) -> None:
    """What this run measured, so the next run can tell whether its figures still stand."""
    save_state(BacktestInputs(*now, run_id), measurement_path(tables, site))


def thin_measurement(hidden_links: int, plan_precision: float, interval: list[float] | None) -> str | None:
    """A warning when a backtest hid too few links to be read (MIN_MEASURED_LINKS); None otherwise."""
    if hidden_links >= MIN_MEASURED_LINKS:
        return None
    return (
        f"only {hidden_links:,} in-content links were hidden, too few to read the plan's precision "
        f"({plan_precision:.1%}, 95% interval {interval_text(interval) or 'unknown'}) or tell it from the "
        "baseline's; an All Inlinks export with more in-content links (its Link Position filled) makes the "
        "backtest meaningful."
    )
