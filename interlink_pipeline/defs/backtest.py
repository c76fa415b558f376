"""link_backtest: the site's plan rebuilt with a seeded share of its in-content links hidden, scored
against them next to a same-budget baseline — every run shows how good its links are."""

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from dagster import AssetExecutionContext, MetadataValue

from interlink_pipeline.core.files import load_state, save_state
from interlink_pipeline.core.graph.link_plan import planner_without
from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.publish.previews import markdown_table
from interlink_pipeline.core.relevance.backtest import (
    BacktestSetup,
    backtest_row,
    measured_inputs,
    pairs_to_hide,
    run_backtest,
)
from interlink_pipeline.core.relevance.link_ranker import RankerOptions, SiteState, still_fits
from interlink_pipeline.core.warehouse.contract import NO_FAILURES, ValidationReport
from interlink_pipeline.defs.embeddings import Embedder
from interlink_pipeline.defs.link_plan import plan_inputs
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.relevance import (
    GROUP,
    RELEVANCE_TABLES,
    CandidateSettings,
    LinkBacktestConfig,
    relevance_inputs,
    with_vectors,
)
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.tables import materialized, record_run, site_asset, user_errors


def _bar(value: float, top: float, width: int = 30) -> str:
    return "█" * max(1, round(width * value / top)) if value > 0 and top > 0 else ""


@site_asset(
    "graph.backtest_runs",
    group=GROUP,
    deps=["graph.link_plan", *RELEVANCE_TABLES],
    kinds={"duckdb", "scikitlearn"},
)
def link_backtest(
    context: AssetExecutionContext,
    config: LinkBacktestConfig,
    warehouse: Warehouse,
    embedder: Embedder,
    candidate_settings: CandidateSettings,
):
    """Hide `fraction` of the in-content links (seeded), rebuild candidates, ranker and plan without them,
    and score the plan and the candidates against them, next to a same-budget title-cosine baseline."""
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        inputs = relevance_inputs(warehouse, embedder, site, vectors=False)
        crawl_id = warehouse.read_site("staging.pages", site, ["crawl_id"])["crawl_id"][0]
    if not inputs.links.content.any():
        context.log.warning(
            f"{site}: backtest skipped: no in-content links to hide (register an All Inlinks export with "
            "link positions to measure the plan on the site's own links)"
        )
        yield from _skipped(context, site, crawl_id, started)
        return
    setup = BacktestSetup(
        fraction=config.fraction,
        seed=config.seed,
        k=config.k,
        candidates=candidate_settings.options(),
        ranker=RankerOptions(seed=config.seed),
        plan=PlanOptions(),
    )
    with user_errors():
        hidden = pairs_to_hide(inputs.links, setup.fraction, setup.seed)
    model_id = embedder.identity().model_id
    now = measured_inputs(setup, inputs.signals, inputs.links, inputs.pages["page_id"], model_id)
    state_path = warehouse.kept_state(site) / "backtest_inputs.joblib"
    earlier, why = _earlier_measurement(warehouse, site, state_path, now, config.remeasure_above)
    if earlier is not None:
        yield from _standing(context, warehouse, site, crawl_id, earlier, why, started)
        return
    with user_errors():
        inputs = with_vectors(inputs, warehouse, embedder)
        base = plan_inputs(warehouse, site)
    plan = planner_without(base, hidden, setup.plan)
    result = run_backtest(inputs.signals, inputs.links, hidden, plan, setup.candidates, setup.ranker, setup.k)
    ran_at = datetime.now(UTC).replace(tzinfo=None)
    run_id = context.run.run_id
    row = backtest_row(setup, result, site, run_id, crawl_id, ran_at, time.monotonic() - started)
    f = result.figures
    context.log.info(
        f"{site}: {result.hidden_links} links hidden; plan precision {f['plan_precision']:.3f} vs baseline "
        f"{f['baseline_precision']:.3f}"
    )
    metadata = {
        **_figures(row.row(0, named=True)),
        "why": f"measured: {why}",
        "seconds_by_step": MetadataValue.json(result.seconds),
    }
    yield from record_run(context, warehouse, site, "graph.backtest_runs", row, metadata, started)
    save_state(BacktestInputs(*now, run_id), state_path)


def _standing(context, warehouse, site, crawl_id, earlier, why, started):
    """An earlier backtest still measures the site: its row again, as this run's."""
    context.log.info(f"{site}: the backtest of run {earlier['measured_in_run'][0]} stands: {why}")
    row = earlier.with_columns(
        pl.lit(context.run.run_id).alias("run_id"),
        pl.lit(datetime.now(UTC).replace(tzinfo=None)).dt.cast_time_unit("us").alias("ran_at"),
        pl.lit(crawl_id).alias("crawl_id"),
        pl.lit(time.monotonic() - started).alias("seconds"),
    )
    metadata = {
        **_figures(row.row(0, named=True)),
        "measured_in_run": row["measured_in_run"][0],
        "why": why,
    }
    yield from record_run(context, warehouse, site, "graph.backtest_runs", row, metadata, started)


@dataclass
class BacktestInputs:
    """What a backtest measured (inputs and settings fingerprints, the site), kept beside the ranker."""

    fingerprint: str
    settings: str
    state: SiteState
    run_id: str


def _earlier_measurement(
    warehouse: Warehouse, site: str, path: Path, now: tuple, remeasure_above: float
) -> tuple[pl.DataFrame | None, str]:
    """The latest backtest row when it still measures this site (see still_fits), and why it does or not."""
    kept = load_state(path, BacktestInputs)
    if kept is None:
        return None, "no earlier backtest of this site"
    fits, why = still_fits((kept.fingerprint, kept.settings, kept.state), now, remeasure_above)
    if not fits:
        return None, why
    rows = warehouse.query(
        "SELECT * FROM graph.backtest_runs WHERE site = ? AND run_id = ? ORDER BY ran_at DESC LIMIT 1",
        [site, kept.run_id],
    )
    return (rows, why) if rows.height else (None, "its run is no longer in graph.backtest_runs")


def _figures(row: dict) -> dict:
    """The metadata of a backtest row: ours against the baseline, as figures, a table and bars."""
    k = row["k"]
    comparison = pl.DataFrame(
        {
            "figure": ["plan precision", "plan recall", f"candidate precision@{k}", f"candidate recall@{k}"],
            "ours": [row["plan_precision"], row["plan_recall"], row["candidate_precision_at_k"],
                     row["candidate_recall_at_k"]],
            "baseline": [row["baseline_precision"], row["baseline_recall"], row["baseline_precision_at_k"],
                         row["baseline_recall_at_k"]],
        }
    ).with_columns(
        (pl.col("ours") / pl.col("baseline")).round(2).alias("ratio"), pl.col("ours", "baseline").round(4)
    )  # fmt: skip
    top = max(comparison["ours"].max(), comparison["baseline"].max())
    chart = "<br>".join(
        f"`{name:<24}` ours {_bar(ours, top)} {ours:.3f}<br>`{'':<24}` base {_bar(base, top)} {base:.3f}"
        for name, ours, base in comparison.select("figure", "ours", "baseline").iter_rows()
    )
    by_reason = pl.DataFrame(json.loads(row["precision_by_reason"]))
    return {
        "hidden_links": row["hidden_links"],
        "plan_links": row["plan_links"],
        "plan_precision": MetadataValue.float(row["plan_precision"]),
        "plan_recall": MetadataValue.float(row["plan_recall"]),
        "baseline_precision": MetadataValue.float(row["baseline_precision"]),
        "candidate_precision_at_k": MetadataValue.float(row["candidate_precision_at_k"]),
        "baseline_precision_at_k": MetadataValue.float(row["baseline_precision_at_k"]),
        "candidate_coverage": MetadataValue.float(row["candidate_coverage"]),
        "ours_vs_baseline": MetadataValue.md(markdown_table(comparison, 10)),
        "chart": MetadataValue.md(chart),
        "precision_by_reason": MetadataValue.md(
            markdown_table(
                by_reason.with_columns(
                    pl.col(c).round(3) for c in ("precision", "mean_probability") if c in by_reason.columns
                ),
                10,
            )
        ),
        "ranker": row["ranker"],
    }


def _skipped(context, site, crawl_id, started):
    """Nothing to measure: the run history says so (no row is added) and the plan stands."""
    report = ValidationReport("graph.backtest_runs", 0, NO_FAILURES)
    metadata = {
        "skipped": "no in-content links to hide: the site has no All Inlinks export (or none of its links "
        "are in the body), so there is nothing to measure the plan against",
        "crawl_id": crawl_id,
    }
    yield from materialized(context, site, {"graph.backtest_runs": report}, metadata, started)
