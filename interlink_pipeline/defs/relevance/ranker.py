"""link_ranker: which candidate pairs the site's editors link, learned from the site's own links; and the
candidate settings the ranker, the candidates and the backtest share."""

import time

import polars as pl
from dagster import AssetExecutionContext, ConfigurableResource, MetadataValue
from pydantic import Field

from interlink_pipeline.core.relevance.kept_ranker import RankerRequest, ranker_run_row, site_ranker
from interlink_pipeline.core.relevance.link_ranker import (
    Ranker,
    RankerOptions,
    feature_weights,
    validation_figures,
)
from interlink_pipeline.core.relevance.site_inputs import RELEVANCE_TABLES
from interlink_pipeline.core.relevance.site_signals import CandidateOptions
from interlink_pipeline.defs.groups import RELEVANCE
from interlink_pipeline.defs.ml.embeddings import Embedder
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.previews import table_preview
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.settings import options_from, settings_config
from interlink_pipeline.defs.tables import site_asset
from interlink_pipeline.defs.writes import record_run, user_errors


class CandidateSettings(settings_config(CandidateOptions, ConfigurableResource)):
    """How many pairs each signal proposes per page: shared by link_ranker (its training examples),
    link_candidates and link_backtest, so all three build candidates the same way."""

    def options(self) -> CandidateOptions:
        return options_from(self, CandidateOptions)


class LinkRankerConfig(settings_config(RankerOptions)):
    retrain: bool = Field(
        default=False, description="Fit again even when the kept model was fitted on the same inputs."
    )
    refit_above: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="Keep the fitted model while at most this share of pages and of in-content links changed "
        "since its fit (a re-crawl); 0 refits on any change.",
    )

    def request(self, candidate_settings: CandidateSettings) -> RankerRequest:
        """What a run asks of the ranker with these settings: the step's, and a decisions import's."""
        options = options_from(self, RankerOptions)
        return RankerRequest(candidate_settings.options(), options, self.retrain, self.refit_above)


def _ranker_metadata(ranker: Ranker) -> dict:
    figures = validation_figures(ranker)
    return {
        "model": ranker.kind,
        "why": ranker.reason,
        "positive_examples": ranker.positives,
        "examples": ranker.examples,
        "decisions_learned": ranker.decisions,
        "validation": table_preview(
            pl.DataFrame({"figure": list(figures), "value": list(figures.values())}), 40
        )
        if ranker.validation
        else "none: default weights",
        "feature_weights": table_preview(feature_weights(ranker), 30),
        "seconds_by_step": MetadataValue.json(ranker.seconds),
    }


@site_asset(
    "ml.link_ranker_runs",
    group=RELEVANCE,
    deps=RELEVANCE_TABLES,
    kinds={"duckdb", "scikitlearn"},
)
def link_ranker(
    context: AssetExecutionContext,
    config: LinkRankerConfig,
    warehouse: Warehouse,
    embedder: Embedder,
    candidate_settings: CandidateSettings,
):
    """A model of which candidate pairs the site's editors link, fitted on the site's own in-content links
    (cross-validated, grouped by source page); default weights when the site has too few links. The kept
    model is reused while its inputs are unchanged (`retrain` fits again regardless)."""
    started = time.monotonic()
    run_id = context.run.run_id
    with user_errors():
        site = site_key(context)
        request = config.request(candidate_settings)
        encoder = embedder.for_site(warehouse.path, site)
        run = site_ranker(warehouse, site, encoder.identity().model_id, encoder.encoder, request, run_id)
    fitted = run.kept.run_id == run_id
    context.log.info(
        f"{site}: fitted again ({run.why}): {run.kept.ranker.reason}"
        if fitted
        else f"{site}: the model of run {run.kept.run_id} is reused: {run.why}"
    )
    metadata = {
        **({"warning": run.warning} if run.warning else {}),
        **_ranker_metadata(run.kept.ranker),
        "reused": not fitted,
        "reused_or_fitted_because": run.why,
        "text_neighbours": run.text_neighbours,
        "fitted_in_run": run.kept.run_id,
        "model_file": MetadataValue.path(str(run.path)),
    }
    row = ranker_run_row(site, run_id, run, request.ranker)
    yield from record_run(context, warehouse, site, "ml.link_ranker_runs", row, metadata, started)
