"""The site's ranker as kept between runs: fitted again only when the site or the settings changed more
than the user allows (see link_ranker.still_fits), and the run's row in ml.link_ranker_runs."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.files import save_state
from interlink_pipeline.core.ingest.link_graph import LinkGraph
from interlink_pipeline.core.ml.encoders import TextEncoder
from interlink_pipeline.core.relevance.candidate_features import FEATURES
from interlink_pipeline.core.relevance.link_candidates import CandidateBuilder
from interlink_pipeline.core.relevance.link_ranker import (
    Ranker,
    RankerOptions,
    feature_weights,
    fit_ranker,
    training_examples,
    validation_figures,
)
from interlink_pipeline.core.relevance.ranker_inputs import (
    SiteState,
    settings_fingerprint,
    site_state,
    still_fits,
    training_fingerprint,
)
from interlink_pipeline.core.relevance.site_inputs import RelevanceInputs, relevance_inputs, with_vectors
from interlink_pipeline.core.relevance.site_signals import CandidateOptions
from interlink_pipeline.core.warehouse.site_tables import SiteTables


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


@dataclass(frozen=True)
class RankerRun:
    """What link_ranker did: the model it used, why it kept or fitted it, where the model lives."""

    kept: KeptRanker
    why: str
    path: Path
    fingerprint: str
    text_neighbours: str  # the neighbour searches fitting ran, or why none ran
    warning: str | None = None  # the site's links are known but too few to learn from (thin_links)


def ranker_path(tables: SiteTables, site: str) -> Path:
    """Where the site's fitted ranker is kept, beside the warehouse."""
    return tables.kept_state(site) / "link_ranker.joblib"


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


@dataclass(frozen=True)
class RankerRequest:
    """A run's ask of the ranker: its settings, whether to fit regardless, and how much change it allows."""

    candidates: CandidateOptions
    ranker: RankerOptions
    retrain: bool
    refit_above: float


def site_ranker(
    tables: SiteTables,
    site: str,
    model_id: str,
    encoder: Callable[[], TextEncoder],
    request: RankerRequest,
    run_id: str,
) -> RankerRun:
    """The site's ranker for this run: the kept one while it still fits the site, else fitted on the site's
    own in-content links (and kept for the next run)."""
    path = ranker_path(tables, site)
    inputs = relevance_inputs(tables, site, model_id)
    now = _inputs_state(inputs, request, model_id)
    kept, why = (
        (None, "retrain was set")
        if request.retrain
        else reusable_ranker(path, site, now, request.refit_above)
    )
    if kept is not None:
        thin = thin_links(inputs.links, kept.ranker, request.ranker)
        return RankerRun(kept, why, path, now[0], "none: the kept model was reused", thin)
    inputs = with_vectors(inputs, tables, model_id, encoder)
    builder = CandidateBuilder(inputs.signals, request.candidates)
    examples = training_examples(builder, inputs.links, request.ranker, inputs.decided)
    fitted = fit_ranker(examples, request.ranker, links_known=len(inputs.links.source) > 0)
    fitted_at = datetime.now(UTC).replace(tzinfo=None)
    kept = KeptRanker(fitted, now[0], run_id, fitted_at, FEATURES, now[1], now[2])
    save_state(kept, path)
    thin = thin_links(inputs.links, fitted, request.ranker)
    return RankerRun(kept, why, path, now[0], builder.searches_done(), thin)


def kept_ranker_fits(
    tables: SiteTables, site: str, model_id: str, request: RankerRequest
) -> tuple[bool, str]:
    """Whether the site's next link_ranker run keeps its model (see still_fits), and why: asked before a
    run whose only change is editors' decisions, so that it fits nothing and scores nothing anew when the
    decisions add up to little."""
    now = _inputs_state(relevance_inputs(tables, site, model_id), request, model_id)
    kept, why = reusable_ranker(ranker_path(tables, site), site, now, request.refit_above)
    return kept is not None, why


def _inputs_state(
    inputs: RelevanceInputs, request: RankerRequest, model_id: str
) -> tuple[str, str, SiteState]:
    """What a fit reads of the site now: its inputs' fingerprint, its settings' and the site's state."""
    fingerprint = training_fingerprint(
        inputs.signals, inputs.links, request.candidates, request.ranker, model_id, inputs.decided
    )
    settings = settings_fingerprint(request.candidates, request.ranker, model_id)
    return (
        fingerprint,
        settings,
        site_state(inputs.pages["page_id"], inputs.signals, inputs.links, inputs.decided),
    )


def thin_links(links: LinkGraph, ranker: Ranker, options: RankerOptions) -> str | None:
    """Why the plan learns nothing from the site's own links although they are known (an All Inlinks export
    whose in-content links are too few among the candidates); None when it learns from them, or when no
    links export was given (the default ranker is then the plan, and the run says so elsewhere)."""
    if ranker.kind != "default" or not len(links.source):
        return None
    return (
        f"only {ranker.positives:,} of the site's in-content links are among its link candidates, fewer than "
        f"min_positives ({options.min_positives}): links are ranked by the default weights fitted on the "
        "development crawls, not by what this site's editors link. Is the links export's Link Position "
        "filled (see raw_links)?"
    )


def ranker_run_row(site: str, run_id: str, run: RankerRun, options: RankerOptions) -> pl.DataFrame:
    """This run's ml.link_ranker_runs row: the model it used and the inputs it saw."""
    ranker = run.kept.ranker
    return pl.DataFrame(
        {
            "site": [site],
            "run_id": [run_id],
            "trained_at": [run.kept.fitted_at],
            "model": [ranker.kind],
            "reason": [ranker.reason],
            "positive_examples": [ranker.positives],
            "examples": [ranker.examples],
            "validation": [json.dumps(validation_figures(ranker))],
            "feature_weights": [json.dumps(dict(feature_weights(ranker).iter_rows()))],
            "settings": [json.dumps(dataclasses.asdict(options))],
            "model_path": [str(run.path)],
            "fitted_in_run": [run.kept.run_id],
            "inputs_fingerprint": [run.fingerprint],
        },
        schema_overrides={
            "positive_examples": pl.Int32,
            "examples": pl.Int64,
            "trained_at": pl.Datetime("us"),
        },
    )
