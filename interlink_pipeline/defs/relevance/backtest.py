"""link_backtest: the site's plan rebuilt with a seeded share of its in-content links hidden (and every link
into a seeded sample of pages, made orphans), scored against them next to same-budget baselines — every run
shows how good its links are."""

import time
from datetime import UTC, datetime

import polars as pl
from dagster import AssetExecutionContext, Config, MetadataValue
from pydantic import Field

from interlink_pipeline.core.graph.link_plan import backtest_plan
from interlink_pipeline.core.graph.plan_inputs import read_plan_inputs
from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.numbers import SEED_LIMIT
from interlink_pipeline.core.relevance.backtest import links_to_hide
from interlink_pipeline.core.relevance.backtest_runs import (
    BacktestSetup,
    backtest_row,
    earlier_measurement,
    keep_measurement,
    measured_inputs,
)
from interlink_pipeline.core.relevance.link_ranker import RankerOptions
from interlink_pipeline.core.relevance.site_inputs import RELEVANCE_TABLES, relevance_inputs, with_vectors
from interlink_pipeline.core.warehouse.contract import NO_FAILURES, ValidationReport
from interlink_pipeline.defs.groups import GRAPH
from interlink_pipeline.defs.ml.embeddings import Embedder
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.relevance.backtest_figures import backtest_figures
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
        encoder = embedder.for_site(warehouse.path, site)
        model_id = encoder.identity().model_id
        inputs = relevance_inputs(warehouse, site, model_id)
        crawl_id = inputs.pages["crawl_id"][0]  # every page of a site is of its one registered crawl
    if not inputs.links.content.any():
        context.log.warning(
            f"{site}: backtest skipped: no in-content links to hide (register an All Inlinks export with "
            "link positions to measure the plan on the site's own links)"
        )
        yield from _skipped(context, site, crawl_id, started, links_export=len(inputs.links.source) > 0)
        return
    setup = _setup(config, candidate_settings)
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
        inputs = with_vectors(inputs, warehouse, model_id, encoder.encoder)
        base = read_plan_inputs(warehouse, site, encoder)
    result = backtest_plan(inputs.signals, inputs.links, base, hiding, setup, inputs.decided)
    ran_at, run_id = datetime.now(UTC).replace(tzinfo=None), context.run.run_id
    row = backtest_row(setup, result, site, run_id, crawl_id, ran_at, time.monotonic() - started)
    ours, baseline = result.figures["plan_precision"], result.figures["baseline_precision"]
    context.log.info(
        f"{site}: {result.hidden_links} links hidden; plan precision {ours:.3f} vs baseline {baseline:.3f}"
    )
    metadata = {
        **backtest_figures(row.row(0, named=True)),
        "why": f"measured: {why}",
        "baseline_search": result.baseline_search.described(),
        "seconds_by_step": MetadataValue.json(result.seconds),
    }
    metadata = _trended(context, metadata)
    yield from record_run(context, warehouse, site, "graph.backtest_runs", row, metadata, started)
    keep_measurement(warehouse, site, now, run_id)


def _setup(config: LinkBacktestConfig, candidate_settings: CandidateSettings) -> BacktestSetup:
    """What the backtest hides and rebuilds with: the step's config, the run's candidate settings."""
    return BacktestSetup(
        fraction=config.fraction,
        seed=config.seed,
        k=config.k,
        orphan_fraction=config.orphan_fraction,
        candidates=candidate_settings.options(),
        ranker=RankerOptions(seed=config.seed),
        plan=PlanOptions(),
    )


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
        **backtest_figures(row.row(0, named=True)),
        "measured_in_run": row["measured_in_run"][0],
        "why": why,
    }
    metadata = _trended(context, metadata)
    yield from record_run(context, warehouse, site, "graph.backtest_runs", row, metadata, started)


def _trended(context: AssetExecutionContext, metadata: dict) -> dict:
    """The metadata with the site's own trend of its precision against the baseline's, run after run."""
    figures = ("plan_precision", "baseline_precision", "plan_recall")
    return {**metadata, "trend": site_trend(context, table_key("graph.backtest_runs"), metadata, figures)}


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
