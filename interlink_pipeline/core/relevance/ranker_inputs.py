"""What a ranker (or a backtest) read of a site: fingerprints of its inputs and settings, and the site's
state, so that a later run can tell whether a kept model or measurement still stands for the site."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

import numpy as np
import polars as pl

from interlink_pipeline.core.ingest.link_graph import LinkGraph
from interlink_pipeline.core.relevance.candidate_features import FEATURES
from interlink_pipeline.core.relevance.link_ranker import RankerOptions
from interlink_pipeline.core.relevance.site_signals import CandidateOptions, SiteSignals
from interlink_pipeline.core.sorted_sets import differing_count, sorted_unique


def training_fingerprint(
    signals: SiteSignals,
    links: LinkGraph,
    candidate_options: CandidateOptions,
    options: RankerOptions,
    model_id: str,
    decided: pl.DataFrame | None = None,
) -> str:
    """A digest of everything a fitted ranker depends on: pages, texts (and the model that embeds them),
    topics, SERP, links, editors' decisions, settings and the feature list. Equal digests: the same
    training examples."""
    digest = hashlib.sha256()
    described = {
        "features": FEATURES,
        "candidates": asdict(candidate_options),
        "ranker": asdict(options),
        "embedding_model": model_id,
        "decisions": decisions_digest(decided),
        "paths": signals.paths,
        "texts": signals.texts,
        "duplicate_key": signals.duplicate_key,
        "anchors": links.anchor.tolist(),
    }
    digest.update(json.dumps(described, sort_keys=True, default=str).encode())
    for array in (signals.cluster, links.source, links.target, links.content):
        digest.update(np.ascontiguousarray(array).astype(np.int64).tobytes())
    digest.update(signals.serp.sort(signals.serp.columns).write_csv().encode())
    return digest.hexdigest()


def settings_fingerprint(candidate_options: CandidateOptions, options: RankerOptions, model_id: str) -> str:
    """A digest of what a fitted ranker depends on besides the site itself (its pages, links and editors'
    decisions, whose drift SiteState measures): features, settings and the embedding model."""
    described = {
        "features": FEATURES,
        "candidates": asdict(candidate_options),
        "ranker": asdict(options),
        "embedding_model": model_id,
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()


def decisions_digest(decided: pl.DataFrame | None) -> str:
    """A digest of the decided pairs (source, target, decision); empty when there are none."""
    if decided is None or decided.is_empty():
        return ""
    rows = decided.select("source", "target", "decision").sort("source", "target")
    return hashlib.sha256(rows.write_csv().encode()).hexdigest()


@dataclass(frozen=True)
class SiteState:
    """A site as a model saw it: a hash per page of what the candidates read of it, and one per in-content
    link (source, target) and per editor's decision (source, target, decision): both are the examples it
    learns from. Compared with the site now, it says how far the site has moved."""

    pages: pl.DataFrame  # page_id, fingerprint
    links: np.ndarray  # sorted distinct hashes of the in-content pairs and of the decided ones


def site_state(
    page_ids: pl.Series, signals: SiteSignals, links: LinkGraph, decided: pl.DataFrame | None = None
) -> SiteState:
    fields = pl.DataFrame(
        {
            "path": signals.paths,
            **{name: pl.Series(signals.texts[name], dtype=pl.String) for name in sorted(signals.texts)},
            "duplicate_key": pl.Series(signals.duplicate_key or [None] * signals.n, dtype=pl.String),
        }
    )
    pages = pl.DataFrame({"page_id": page_ids.cast(pl.String), "fingerprint": fields.hash_rows(seed=0)})
    ids = page_ids.cast(pl.String)
    pairs = pl.DataFrame(
        {"source": ids.gather(links.source[links.content]), "target": ids.gather(links.target[links.content])}
    )
    hashes = pairs.hash_rows(seed=0).to_numpy()
    if decided is not None and decided.height:
        decisions = decided.select(
            ids.gather(decided["source"]).alias("source"),
            ids.gather(decided["target"]).alias("target"),
            "decision",
        )
        hashes = np.concatenate([hashes, decisions.hash_rows(seed=0).to_numpy()])
    return SiteState(pages, sorted_unique(hashes))


def drift(before: SiteState, now: SiteState) -> tuple[float, float]:
    """(share of pages added, removed or changed, share of in-content links and editors' decisions added,
    removed or changed) since `before`, each of the larger of the two sites."""
    pages = before.pages.join(now.pages, on="page_id", how="full", suffix="_now")
    changed = pages.filter(
        pl.col("fingerprint").is_null()
        | pl.col("fingerprint_now").is_null()
        | (pl.col("fingerprint") != pl.col("fingerprint_now"))
    ).height
    page_share = changed / max(before.pages.height, now.pages.height, 1)
    link_share = differing_count(before.links, now.links) / max(len(before.links), len(now.links), 1)
    return page_share, link_share


def still_fits(
    fitted: tuple[str, str, SiteState | None], now: tuple[str, str, SiteState], refit_above: float
) -> tuple[bool, str]:
    """Whether a model fitted on `fitted` (inputs fingerprint, settings fingerprint, site state) serves the
    inputs `now`, and why: the same inputs, or the same settings on a site that has moved by at most
    `refit_above` (share of pages, and of in-content links and editors' decisions) since the fit. A model
    fitted on 99% of the same examples is the same model in all but noise, and refitting it costs most of a
    re-run: a few decisions steer the plan at once (accepted links placed, rejected ones refused) and teach
    the ranker once they, and the site's changes, add up to more than `refit_above`."""
    if fitted[0] == now[0]:
        return True, "its inputs are unchanged"
    if fitted[1] != now[1]:
        return False, "the features, settings or embedding model changed"
    if fitted[2] is None:
        return False, "the kept model does not record the site it was fitted on"
    pages, links = drift(fitted[2], now[2])
    moved = f"{pages:.1%} of the pages and {links:.1%} of the in-content links and decisions changed since"
    if max(pages, links) <= refit_above:
        return True, f"{moved} (kept up to {refit_above:.0%})"
    return False, f"{moved}, more than {refit_above:.0%}"
