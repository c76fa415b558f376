"""link_backtest: the site's plan rebuilt with a seeded share of its in-content links hidden (and every link
into a seeded sample of pages, made orphans), scored against them next to same-budget baselines — every run
shows how good its links are."""

import json
import time
from datetime import UTC, datetime

import polars as pl
from dagster import AssetExecutionContext, Config, MetadataValue
from pydantic import Field

from interlink_pipeline.core.graph.link_plan import backtest_plan
from interlink_pipeline.core.graph.plan_inputs import read_plan_inputs
from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.numbers import SEED_LIMIT
from interlink_pipeline.core.relevance.backtest import (
    BacktestSetup,
    backtest_row,
    earlier_measurement,
    keep_measurement,
    links_to_hide,
    measured_inputs,
    thin_measurement,
)
from interlink_pipeline.core.relevance.intervals import interval_text
from interlink_pipeline.core.relevance.link_ranker import RankerOptions
from interlink_pipeline.core.relevance.site_inputs import RELEVANCE_TABLES, relevance_inputs, with_vectors
from interlink_pipeline.core.warehouse.contract import NO_FAILURES, ValidationReport
from interlink_pipeline.defs.groups import GRAPH
from interlink_pipeline.defs.ml.embeddings import Embedder
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.previews import table_preview
from interlink_pipeline.defs.relevance.ranker import CandidateSettings
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.tables import site_asset, table_key
from interlink_pipeline.defs.trends import site_trend
from interlink_pipeline.defs.writes import materialized, record_run, user_errors


class LinkBacktestConfig(Config):
    fraction: float = Field(default=0.2, gt=0, lt=1, description="Share of in-content link pairs hidden.")
    seed: int = Field(
        default=0, ge=0, lt=SEED_LIMIT, description="Which links are hidden (one seed, one set of links)."
    )
    orphan_fraction: float = Field(
        default=0.05,
        ge=0,
        lt=1,
        description="Share of the pages linked in content whose every in-link is hidden too (navigation "
        "included), so that the orphan rescues are measured: each rescue's source against the pages that "
        "linked to it.",
    )
    k: int = Field(default=10, ge=1, description="Candidate precision@k and recall@k.")
    remeasure_above: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="The last backtest stands while at most this share of pages and of in-content links "
        "changed since it measured (a re-crawl); 0 measures again on any change.",
    )


def _bar(value: float, top: float, width: int = 30) -> str:
    return "█" * max(1, round(width * value / top)) if value > 0 and top > 0 else ""


@site_asset(
    "graph.backtest_runs",
    group=GRAPH,
    deps=["graph.link_plan", "published_files", *RELEVANCE_TABLES],  # after the plan is out: off its path
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
        model_id = embedder.identity().model_id
        inputs = relevance_inputs(warehouse, site, model_id)
        crawl_id = inputs.pages["crawl_id"][0]  # every page of a site is of its one registered crawl
    if not inputs.links.content.any():
        context.log.warning(
            f"{site}: backtest skipped: no in-content links to hide (register an All Inlinks export with "
            "link positions to measure the plan on the site's own links)"
        )
        yield from _skipped(context, site, crawl_id, started, links_export=len(inputs.links.source) > 0)
        return
    setup = BacktestSetup(
        fraction=config.fraction,
        seed=config.seed,
        k=config.k,
        orphan_fraction=config.orphan_fraction,
        candidates=candidate_settings.options(),
        ranker=RankerOptions(seed=config.seed),
        plan=PlanOptions(),
    )
    with user_errors():
        home = int(inputs.pages["is_home"].arg_max())
        hiding = links_to_hide(inputs.links, setup.fraction, setup.seed, setup.orphan_fraction, home)
    now = measured_inputs(
        setup, inputs.signals, inputs.links, inputs.pages["page_id"], model_id, inputs.decided
    )
    earlier, why = earlier_measurement(warehouse, site, now, config.remeasure_above)
    if earlier is not None:
        yield from _standing(context, warehouse, site, crawl_id, earlier, why, started)
        return
    with user_errors():
        inputs = with_vectors(inputs, warehouse, model_id, embedder.encoder)
        base = read_plan_inputs(warehouse, site, embedder)
    result = backtest_plan(inputs.signals, inputs.links, base, hiding, setup, inputs.decided)
    ran_at, run_id = datetime.now(UTC).replace(tzinfo=None), context.run.run_id
    row = backtest_row(setup, result, site, run_id, crawl_id, ran_at, time.monotonic() - started)
    f = result.figures
    context.log.info(
        f"{site}: {result.hidden_links} links hidden; plan precision {f['plan_precision']:.3f} vs baseline "
        f"{f['baseline_precision']:.3f}"
    )
    metadata = {
        **_figures(row.row(0, named=True)),
        "why": f"measured: {why}",
        "baseline_search": result.baseline_search.described(),
        "seconds_by_step": MetadataValue.json(result.seconds),
    }
    yield from record_run(
        context, warehouse, site, "graph.backtest_runs", row, _trended(context, metadata), started
    )
    keep_measurement(warehouse, site, now, run_id)


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
    yield from record_run(
        context, warehouse, site, "graph.backtest_runs", row, _trended(context, metadata), started
    )


def _trended(context: AssetExecutionContext, metadata: dict) -> dict:
    """The metadata with the site's own trend of its precision against the baseline's, run after run."""
    figures = ("plan_precision", "baseline_precision", "plan_recall")
    return {**metadata, "trend": site_trend(context, table_key("graph.backtest_runs"), metadata, figures)}


# the comparison table's rows: our figure and the baseline's
OURS = ("plan_precision", "plan_recall", "candidate_precision_at_k", "candidate_recall_at_k")
BASELINE = ("baseline_precision", "baseline_recall", "baseline_precision_at_k", "baseline_recall_at_k")


def _figures(row: dict) -> dict:
    """The metadata of a backtest row: ours against the baseline, as figures, a table and bars."""
    k = row["k"]
    intervals = json.loads(row.get("intervals") or "{}")  # none in a row measured before them
    comparison = pl.DataFrame(
        {
            "figure": ["plan precision", "plan recall", f"candidate precision@{k}", f"candidate recall@{k}"],
            "ours": [row[f] for f in OURS],
            "baseline": [row[f] for f in BASELINE],
            "ours 95%": [interval_text(intervals.get(f)) for f in OURS],
            "baseline 95%": [interval_text(intervals.get(f)) for f in BASELINE],
        }
    ).with_columns(
        (pl.col("ours") / pl.col("baseline")).round(2).alias("ratio"), pl.col("ours", "baseline").round(4)
    )
    top = max(comparison["ours"].max(), comparison["baseline"].max())
    chart = "<br>".join(
        f"`{name:<24}` ours {_bar(ours, top)} {ours:.3f}<br>`{'':<24}` base {_bar(base, top)} {base:.3f}"
        for name, ours, base in comparison.select("figure", "ours", "baseline").iter_rows()
    )
    by_reason = pl.DataFrame(json.loads(row["precision_by_reason"]))
    warning = thin_measurement(row["hidden_links"], row["plan_precision"], intervals.get(OURS[0]))
    thin = {"warning": warning} if warning else {}
    return {
        **thin,
        "hidden_links": row["hidden_links"],
        "plan_links": row["plan_links"],
        "plan_precision": MetadataValue.float(row["plan_precision"]),
        "plan_recall": MetadataValue.float(row["plan_recall"]),
        "baseline_precision": MetadataValue.float(row["baseline_precision"]),
        "candidate_precision_at_k": MetadataValue.float(row["candidate_precision_at_k"]),
        "baseline_precision_at_k": MetadataValue.float(row["baseline_precision_at_k"]),
        "candidate_coverage": MetadataValue.float(row["candidate_coverage"]),
        "ours_vs_baseline": table_preview(comparison, 10),
        "chart": MetadataValue.md(chart),
        "precision_by_reason": table_preview(
            by_reason.with_columns(
                pl.col(c).round(3)
                for c in ("precision", "recall", "known_precision", "reachable_precision", "mean_probability")
                if c in by_reason.columns
            ),
            10,
        ),
        **_orphan_figures(row),
        **_decision_figures(row),
        "ranker": row["ranker"],
    }


def _decision_figures(row: dict) -> dict:
    """With editors' decisions: the plan's precision with the ranker that learned from them and without."""
    without = row.get("plan_precision_without_decisions")
    if without is None:
        return {"decisions_learned": row.get("decisions_learned") or 0}
    return {
        "decisions_learned": row["decisions_learned"],
        "plan_precision_without_decisions": MetadataValue.float(without),
        "decisions_gain": MetadataValue.float(row["plan_precision"] - without),
    }


def _orphan_figures(row: dict) -> dict:
    """The orphan backtest's figures, when it made orphans: its rescues' precision against the baseline."""
    if not row.get("orphaned_pages"):
        return {}
    rescue, baseline = row["orphan_rescue_precision"], row["orphan_baseline_precision"]
    return {
        "orphaned_pages": row["orphaned_pages"],
        "orphan_rescues": row["orphan_rescues"],
        "orphan_rescue_precision": MetadataValue.float(rescue) if rescue is not None else "no rescue",
        "orphan_baseline_precision": MetadataValue.float(baseline),
        "orphan_rescue_precision_95%": interval_text(
            json.loads(row.get("intervals") or "{}").get("orphan_rescue_precision")
        ),
    }


def _skipped(context, site, crawl_id, started, links_export: bool):
    """Nothing to measure: the run history says so (no row is added) and the plan stands; a links export
    that holds no in-content link is warned of (the CLI prints it)."""
    report = ValidationReport("graph.backtest_runs", 0, NO_FAILURES)
    metadata = {
        "skipped": "no in-content links to hide: the site has no All Inlinks export (or none of its links "
        "are in the body), so there is nothing to measure the plan against",
        "crawl_id": crawl_id,
    }
    if links_export:
        metadata["warning"] = (
            "the links export has no in-content link between the site's pages (see raw_links' Link "
            "Position), so the plan is not measured on the site's own links: the backtest was skipped"
        )
    yield from materialized(context, site, {"graph.backtest_runs": report}, metadata, started)
