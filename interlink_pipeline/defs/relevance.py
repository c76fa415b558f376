"""link_ranker, link_candidates and link_backtest: which links the site's editors would write, learned from
the site's own links and measured on links the pipeline was not shown."""

import dataclasses
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl
from dagster import AssetExecutionContext, Config, ConfigurableResource, MetadataValue
from pydantic import Field

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.files import save_state
from interlink_pipeline.core.ingest.link_graph import LinkGraph, page_links
from interlink_pipeline.core.ml.page_embeddings import field_vectors
from interlink_pipeline.core.numbers import SEED_LIMIT
from interlink_pipeline.core.publish.previews import markdown_table
from interlink_pipeline.core.relevance.candidate_features import FEATURES
from interlink_pipeline.core.relevance.candidate_updates import (
    KEY,
    PAGE_STATE,
    STORED,
    KeptCandidates,
    most_probable,
    score_candidates,
    settings_hash,
)
from interlink_pipeline.core.relevance.link_candidates import CandidateBuilder, origin_counts
from interlink_pipeline.core.relevance.link_ranker import (
    Ranker,
    RankerOptions,
    SiteState,
    feature_weights,
    fit_ranker,
    settings_fingerprint,
    site_state,
    still_fits,
    training_examples,
    training_fingerprint,
    validation_figures,
)
from interlink_pipeline.core.relevance.site_signals import CandidateOptions, SiteSignals
from interlink_pipeline.core.relevance.text_neighbours import NeighbourStore
from interlink_pipeline.defs.embeddings import Embedder
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.settings import options_from, settings_config
from interlink_pipeline.defs.tables import persist, record_run, site_asset, user_errors, with_site

GROUP = "relevance"
PAGE_COLUMNS = [
    "page_id",
    "url",
    "url_key",
    "path",
    "title",
    "h1",
    "meta_description",
    "body_text",
    "duplicate_key",
    "is_home",
]
# the stored text column each text field reads
FIELD_COLUMNS = {"title": "title", "h1": "h1", "meta_description": "meta_description", "body": "body_text"}


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


class LinkBacktestConfig(Config):
    fraction: float = Field(default=0.2, gt=0, lt=1, description="Share of in-content link pairs hidden.")
    seed: int = Field(
        default=0,
        ge=0,
        lt=SEED_LIMIT,
        description="Which links are hidden (the same seed hides the same ones).",
    )
    k: int = Field(default=10, ge=1, description="Candidate precision@k and recall@k.")
    remeasure_above: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="The last backtest stands while at most this share of pages and of in-content links "
        "changed since it measured (a re-crawl); 0 measures again on any change.",
    )


@dataclass
class RelevanceInputs:
    pages: pl.DataFrame  # PAGE_COLUMNS, by page_id: row i is page i everywhere
    signals: SiteSignals
    links: LinkGraph
    embedded: int  # texts the model embedded (the rest came from the cache)


# what relevance_inputs reads: the ranker, the candidates and the backtest depend on these tables
RELEVANCE_TABLES = (
    "staging.pages",
    "ml.page_embeddings",
    "ml.page_clusters",
    "serp.results",
    "raw.crawl_links",
)


def relevance_inputs(
    warehouse: Warehouse, embedder: Embedder, site: str, vectors: bool = True
) -> RelevanceInputs:
    """Everything the candidates are built from: pages, text vectors per field (unless `vectors` is
    false: with_vectors adds them when they turn out to be needed), SERP, clusters, links."""
    site_pages = warehouse.read_site_required("staging.pages", site, "pages", PAGE_COLUMNS).sort("page_id")
    index = site_pages.select("page_id", pl.int_range(pl.len(), dtype=pl.Int64).alias("row"))
    texts = {name: site_pages[column].to_list() for name, column in FIELD_COLUMNS.items()}
    clusters = warehouse.read_site("ml.page_clusters", site, ["page_id", "cluster_id"]).join(
        index, on="page_id"
    )
    cluster = np.full(site_pages.height, -1, dtype=np.int64)
    cluster[clusters["row"].to_numpy()] = clusters["cluster_id"].to_numpy()
    serp = (
        warehouse.read_site("serp.results", site, ["page_id", "matched_page_id", "rank"])
        .drop_nulls("matched_page_id")
        .join(index.rename({"row": "source"}), on="page_id")
        .join(index.rename({"page_id": "matched_page_id", "row": "target"}), on="matched_page_id")
        .select("source", "target", pl.col("rank").cast(pl.Int64))
    )
    store = NeighbourStore(
        warehouse.kept_state(site) / "neighbours",
        site_pages["page_id"].cast(pl.String).to_list(),
        embedder.identity().model_id,
    )
    signals = SiteSignals(
        site_pages["path"].to_list(),
        texts,
        {},
        cluster,
        serp,
        site_pages["duplicate_key"].to_list(),
        store,
    )
    links = page_links(warehouse.read_site("raw.crawl_links", site), site_pages["url_key"])
    inputs = RelevanceInputs(site_pages, signals, links, 0)
    return with_vectors(inputs, warehouse, embedder) if vectors else inputs


def with_vectors(inputs: RelevanceInputs, warehouse: Warehouse, embedder: Embedder) -> RelevanceInputs:
    """The inputs with each text field's vectors, through the embedding cache (what it lacks is embedded)."""
    texts = inputs.signals.texts
    vectors, filled = field_vectors(warehouse.path, embedder.identity().model_id, texts, embedder.encoder)
    return dataclasses.replace(
        inputs, signals=dataclasses.replace(inputs.signals, vectors=vectors), embedded=filled["embedded"]
    )


def ranker_path(warehouse: Warehouse, site: str) -> Path:
    """Where the site's fitted ranker is kept, beside the warehouse."""
    return warehouse.kept_state(site) / "link_ranker.joblib"


@dataclass
class KeptRanker:
    """A fitted ranker as kept on disk: the model, what it was fitted on and in which run."""

    ranker: Ranker
    fingerprint: str  # training_fingerprint of its inputs
    run_id: str  # the run that fitted it
    fitted_at: datetime  # UTC, naive
    features: tuple[str, ...] = FEATURES
    settings: str = ""  # settings_fingerprint
    state: SiteState | None = None  # the site it was fitted on


def load_ranker(path: Path, site: str) -> KeptRanker:
    import joblib

    if not path.is_file():
        raise InputError(f"no link ranker for {site} at {path}: materialise link_ranker first.")
    try:
        kept = joblib.load(path)
    except Exception as error:  # a truncated or foreign file: say which and what to do
        raise InputError(
            f"the link ranker at {path} cannot be read ({error}): materialise link_ranker again."
        ) from error
    if not isinstance(kept, KeptRanker) or tuple(kept.features) != FEATURES:
        raise InputError(
            f"the link ranker at {path} was fitted on other features: materialise link_ranker again."
        )
    return kept


def reusable_ranker(
    path: Path, site: str, now: tuple[str, str, SiteState], refit_above: float
) -> tuple[KeptRanker | None, str]:
    """The kept ranker when it still fits these inputs (see still_fits), and why it is kept or fitted
    again (then the file is replaced)."""
    if not path.is_file():
        return None, "no model was fitted for this site yet"
    try:
        kept = load_ranker(path, site)
    except InputError as error:
        return None, str(error)
    fits, why = still_fits((kept.fingerprint, kept.settings, getattr(kept, "state", None)), now, refit_above)
    return (kept if fits else None), why


def _ranker_metadata(ranker: Ranker) -> dict:
    figures = validation_figures(ranker)
    return {
        "model": ranker.kind,
        "why": ranker.reason,
        "positive_examples": ranker.positives,
        "examples": ranker.examples,
        "validation": MetadataValue.md(
            markdown_table(pl.DataFrame({"figure": list(figures), "value": list(figures.values())}), 40)
        )
        if ranker.validation
        else "none: default weights",
        "feature_weights": MetadataValue.md(markdown_table(feature_weights(ranker), 30)),
        "seconds_by_step": MetadataValue.json(ranker.seconds),
    }


def _run_row(
    site: str, run_id: str, kept: KeptRanker, options: RankerOptions, path: Path, fingerprint: str
) -> pl.DataFrame:
    """This run's ml.link_ranker_runs row: the model it used (`kept`) and the inputs it saw."""
    ranker = kept.ranker
    return pl.DataFrame(
        {
            "site": [site],
            "run_id": [run_id],
            "trained_at": [kept.fitted_at],
            "model": [ranker.kind],
            "reason": [ranker.reason],
            "positive_examples": [ranker.positives],
            "examples": [ranker.examples],
            "validation": [json.dumps(validation_figures(ranker))],
            "feature_weights": [json.dumps(dict(feature_weights(ranker).iter_rows()))],
            "settings": [json.dumps(dataclasses.asdict(options))],
            "model_path": [str(path)],
            "fitted_in_run": [kept.run_id],
            "inputs_fingerprint": [fingerprint],
        },
        schema_overrides={
            "positive_examples": pl.Int32,
            "examples": pl.Int64,
            "trained_at": pl.Datetime("us"),
        },
    )


@site_asset(
    "ml.link_ranker_runs",
    group=GROUP,
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
    with user_errors():
        site = site_key(context)
        path = ranker_path(warehouse, site)
        inputs = relevance_inputs(warehouse, embedder, site, vectors=False)
        options = options_from(config, RankerOptions)
        model_id = embedder.identity().model_id
        fingerprint = training_fingerprint(
            inputs.signals, inputs.links, candidate_settings.options(), options, model_id
        )
        settings = settings_fingerprint(candidate_settings.options(), options, model_id)
        state = site_state(inputs.pages["page_id"], inputs.signals, inputs.links)
        kept, why = (
            (None, "retrain was set")
            if config.retrain
            else reusable_ranker(path, site, (fingerprint, settings, state), config.refit_above)
        )
        searched = "none: the kept model was reused"
        if kept is None:
            inputs = with_vectors(inputs, warehouse, embedder)
            builder = CandidateBuilder(inputs.signals, candidate_settings.options())
            searched = builder.searches_done()
            examples = training_examples(builder, inputs.links, options)
            fitted = fit_ranker(examples, options)
            fitted_at = datetime.now(UTC).replace(tzinfo=None)
            kept = KeptRanker(fitted, fingerprint, context.run.run_id, fitted_at, FEATURES, settings, state)
            save_state(kept, path)
            context.log.info(f"{site}: fitted again ({why}): {kept.ranker.reason}")
        else:
            context.log.info(f"{site}: the model of run {kept.run_id} is reused: {why}")
    row = _run_row(site, context.run.run_id, kept, options, path, fingerprint)
    metadata = {
        **_ranker_metadata(kept.ranker),
        "reused": kept.run_id != context.run.run_id,
        "reused_or_fitted_because": why,
        "text_neighbours": searched,
        "fitted_in_run": kept.run_id,
        "model_file": MetadataValue.path(str(path)),
    }
    yield from record_run(context, warehouse, site, "ml.link_ranker_runs", row, metadata, started)


def _kept_candidates(warehouse: Warehouse, site: str) -> KeptCandidates:
    """The site's last candidate build, as stored: an incremental build starts from it."""
    return KeptCandidates(
        warehouse.read_site("ml.link_candidates", site, [*KEY, *STORED]),
        warehouse.read_site("ml.candidate_pages", site, list(PAGE_STATE)),
    )


class LinkCandidatesConfig(Config):
    rebuild: bool = Field(
        default=False,
        description="Build every pair anew; by default a re-crawl recomputes only what its changes touch.",
    )


@site_asset(
    "ml.link_candidates",
    "ml.candidate_pages",
    group=GROUP,
    deps=["ml.link_ranker_runs", *RELEVANCE_TABLES],
)
def link_candidates(
    context: AssetExecutionContext,
    config: LinkCandidatesConfig,
    warehouse: Warehouse,
    embedder: Embedder,
    candidate_settings: CandidateSettings,
):
    """Every pair some signal proposes (text fields, URL hierarchy, link graph, phrases, SERP), each
    signal's score kept, and the ranker's probability that the site's editors would link it. After a
    re-crawl only the pairs of changed pages get their features again, and only changed rows are scored
    and written (the same rows as a full build)."""
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        kept_ranker = load_ranker(ranker_path(warehouse, site), site)
        inputs = relevance_inputs(warehouse, embedder, site)
        builder = CandidateBuilder(inputs.signals, candidate_settings.options())
        kept = None if config.rebuild else _kept_candidates(warehouse, site)
        scored = score_candidates(
            builder,
            inputs.links,
            inputs.pages["page_id"],
            kept_ranker.ranker.probability,
            kept_ranker.run_id,
            settings_hash(builder, embedder.identity().model_id),
            kept,
        )
    candidates = scored.rows
    metadata = {
        "candidates": candidates.height,
        "ranker": kept_ranker.ranker.reason,
        **scored.build_summary(),
        "by_origin": MetadataValue.md(markdown_table(origin_counts(candidates), 10)),
        "pages_with_candidates": candidates["source_page_id"].n_unique(),
        "pages_with_body_text": int(inputs.pages["body_text"].is_not_null().sum()),
        "texts_embedded": inputs.embedded,
        "text_neighbours": builder.searches_done(),
        "likely_links": int((candidates["probability"] >= 0.5).sum()),
        "preview": MetadataValue.md(markdown_table(most_probable(candidates, inputs.pages, 15), 15)),
    }
    frames = {
        "ml.link_candidates": with_site(scored.write, site),
        "ml.candidate_pages": with_site(scored.pages, site),
    }
    yield from persist(context, warehouse, site, frames, metadata, started)
