"""The link ranker: how likely the site's editors are to link a candidate pair, learned from the site's
own links.

Training examples are made the way the ranker is used: the site's in-content links are split into
`simulation_folds` parts, and for each part the candidates are rebuilt from the other links only; the
candidates that part links are the positives, the others the negatives. So a positive never lends its own
link to its features (its anchor, its target's in-degree), exactly as a link still to be written cannot.

The model (gradient boosting or logistic regression, `auto` picks the better by cross-validated average
precision) is validated with folds grouped by source page: each validation fit sees every positive of its
folds and a uniform sample of their negatives (`negatives_per_positive` for each positive), and scores every
held-out example. A candidate list is mostly negatives, and validating on all of them cost twice the final
fit; the model kept is fitted on every example, as its probabilities are what the plan's min_probability
reads. A site with fewer than `min_positives` examples gets the default model: logistic-regression weights
fitted on the development crawls (DEFAULT_WEIGHTS).
A fitted model is kept with the fingerprint of what it was fitted on, so a run whose inputs are unchanged
reuses it instead of fitting again.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl

from interlink_pipeline.core.ingest.link_graph import LinkGraph
from interlink_pipeline.core.relevance.candidate_features import FEATURES
from interlink_pipeline.core.relevance.link_candidates import CandidateBuilder
from interlink_pipeline.core.settings import setting

ModelKind = Literal["auto", "gradient_boosting", "logistic"]
DEFAULT_WEIGHTS = Path(__file__).with_name("default_ranker.json")
SCORING_ROWS = 200_000


@dataclass(frozen=True)
class RankerOptions:
    """The `link_ranker` step's settings (its Dagster config is derived from the `setting` fields)."""

    model: ModelKind = setting("auto", "auto: the better of the two by cross-validated average precision.")
    simulation_folds: int = setting(4, "Parts the links are hidden in to train.", ge=2)
    min_positives: int = setting(40, "Fewer examples: the default weights.", ge=1)
    training_sources: int = setting(5_000, "Source pages to learn from: sampled beyond.", ge=100)
    negatives_per_positive: int = setting(40, "Negatives a validation fit samples per positive.", ge=1)
    cv_folds: int = setting(3, "Validation folds, grouped by source page.", ge=2)
    seed: int = setting(0, "Seed for the folds and the models.")
    accepted_weight: float = setting(
        5.0,
        "Weight of a link an editor accepted, as a positive example (a link of the site weighs 1); 0: "
        "accepted links are not learned from.",
        ge=0,
    )
    rejected_weight: float = setting(
        5.0,
        "Weight of a link an editor rejected, as a negative example (an unlinked candidate weighs 1); 0: "
        "rejected links are not learned from.",
        ge=0,
    )

    def decision_weights(self) -> dict[str, float]:
        """Each decision's weight as an example."""
        return {"accept": float(self.accepted_weight), "reject": float(self.rejected_weight)}


@dataclass
class Ranker:
    """A fitted model and how it was chosen and validated."""

    kind: str  # gradient_boosting, logistic, or default
    model: object
    reason: str  # why this model: the measurement, or why the default
    positives: int = 0
    examples: int = 0
    validation: dict[str, float] = field(default_factory=dict)  # per candidate model: average precision…
    seconds: dict[str, float] = field(default_factory=dict)
    decisions: int = 0  # editors' decisions among the examples

    def probability(self, candidates: pl.DataFrame) -> np.ndarray:
        """Each candidate's probability, scored SCORING_ROWS at a time: the feature matrix of a large
        site's millions of candidates would be a copy of them as large as the frame."""
        out = np.empty(candidates.height, dtype=np.float32)
        for start in range(0, candidates.height, SCORING_ROWS):
            part = candidates.slice(start, SCORING_ROWS)
            out[start : start + part.height] = self.model.predict_proba(_matrix(part))[:, 1]
        return out


def _matrix(frame: pl.DataFrame) -> np.ndarray:
    return frame.select(FEATURES).to_numpy().astype(np.float32)


def training_examples(
    builder: CandidateBuilder,
    links: LinkGraph,
    options: RankerOptions,
    decided: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Candidates labelled by simulation: each fold of in-content link pairs hidden in turn. Only the
    sampled sources' pairs (training_sources) are proposed and get features, and each fold's are dropped
    once they have: the examples' cost is set by the sample, not the site. The pairs editors decided
    (`decided`: source, target, decision) are added as weighted examples (decision_examples), in place of
    their simulated rows; every other row weighs 1."""
    simulated = _simulated_examples(builder, links, options)
    if simulated.is_empty():
        return simulated
    simulated = simulated.with_columns(pl.lit(1.0, dtype=pl.Float32).alias("weight"))
    decisions = decision_examples(builder, links, decided, options)
    if decisions.is_empty():
        return simulated
    return pl.concat(
        [simulated.join(decisions, on=["source", "target"], how="anti"), decisions.select(simulated.columns)]
    )


def decision_examples(
    builder: CandidateBuilder, links: LinkGraph, decided: pl.DataFrame | None, options: RankerOptions
) -> pl.DataFrame:
    """The pairs editors decided (source, target, decision) as examples: an accepted link a positive of
    weight accepted_weight, a rejected one a negative of weight rejected_weight, with the features the
    candidates give them over the site's links (a pair no signal proposes gets them too); a decided link
    now on the site is left to the simulation (it is one of the site's links)."""
    if decided is None or decided.is_empty():
        return pl.DataFrame()
    decided = (
        decided.with_columns(
            pl.col("decision")
            .replace_strict(options.decision_weights(), return_dtype=pl.Float32)
            .alias("weight")
        )
        .filter(pl.col("weight") > 0)
        .join(links.content_pairs().select("source", "target"), on=["source", "target"], how="anti")
    )
    if decided.is_empty():
        return pl.DataFrame()
    proposals = builder.proposals(links, decided["source"].unique().sort())
    unproposed = decided.join(proposals.pairs, on=["source", "target"], how="anti").select(
        "source", "target", pl.lit("decision").alias("origins")
    )
    pairs = pl.concat([proposals.pairs, unproposed]).sort("source", "target")
    rows = builder.features(dataclasses.replace(proposals, pairs=pairs))
    return rows.join(decided, on=["source", "target"]).select(
        *rows.columns,
        (pl.col("decision") == "accept").cast(pl.Int8).alias("label"),
        pl.lit(-1, dtype=pl.Int32).alias("fold"),
        "weight",
    )


def _simulated_examples(builder: CandidateBuilder, links: LinkGraph, options: RankerOptions) -> pl.DataFrame:
    pairs = links.content_pairs()
    if pairs.height < 2:
        return pl.DataFrame()
    rng = np.random.default_rng(options.seed)
    fold_of_pair = rng.permutation(pairs.height) % max(2, options.simulation_folds)
    pairs = pairs.with_columns(pl.Series("fold", fold_of_pair, dtype=pl.Int32))
    instances = pl.DataFrame({"source": links.source, "target": links.target, "content": links.content})
    instance_fold = instances.join(pairs, on=["source", "target"], how="left", maintain_order="left")["fold"]
    sources = training_sources(builder.signals.n, options)
    frames = []
    for fold in range(max(2, options.simulation_folds)):
        hidden = (instance_fold == fold).fill_null(False).to_numpy() & links.content
        positives = pairs.filter(pl.col("fold") == fold).select("source", "target", pl.lit(1).alias("label"))
        frames.append(
            builder.features(builder.proposals(links.subset(~hidden), sources))
            .join(positives, on=["source", "target"], how="left")
            .with_columns(
                pl.col("label").fill_null(0).cast(pl.Int8), pl.lit(fold, dtype=pl.Int32).alias("fold")
            )
        )
    return pl.concat(frames)


def training_sources(pages: int, options: RankerOptions) -> pl.Series | None:
    """None (every page) on a site of at most training_sources pages, else a seeded sample of that many
    pages as sources. Every page is as likely to be drawn, those that link nothing too, so the examples keep
    the site's odds; the ranker's features, fit and validation then cost what the sample does, whatever
    the site's size."""
    if pages <= options.training_sources:
        return None
    drawn = np.random.default_rng([options.seed, 2]).choice(pages, options.training_sources, replace=False)
    return pl.Series("source", np.sort(drawn), dtype=pl.Int64)


def _models(kind: ModelKind, seed: int) -> dict[str, object]:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    models = {
        "gradient_boosting": HistGradientBoostingClassifier(
            max_iter=200,
            learning_rate=0.1,
            max_leaf_nodes=31,
            l2_regularization=1.0,
            early_stopping=False,  # the same fit every run, and no rows held out of it
            random_state=seed,
        ),
        "logistic": make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000)),
    }
    return models if kind == "auto" else {kind: models[kind]}


def fit_ranker(examples: pl.DataFrame, options: RankerOptions, links_known: bool = True) -> Ranker:
    """Fit the site's ranker, or return the default one when the site has too few links (`links_known`:
    whether its links are known at all, or only counted by the crawl)."""
    positives = int(examples["label"].sum()) if not examples.is_empty() else 0
    if positives < options.min_positives or positives == examples.height:
        fallback = default_ranker(
            f"{positives} positive examples (in-content links found among the candidates), fewer than "
            f"min_positives ({options.min_positives}): default weights fitted on the development crawls",
            links_known,
        )
        fallback.positives, fallback.examples = positives, examples.height
        return fallback
    from sklearn.base import clone
    from sklearn.metrics import average_precision_score
    from sklearn.model_selection import GroupKFold

    x, y = _matrix(examples), examples["label"].to_numpy()
    weight = _weights(examples)
    groups = examples["source"].to_numpy()
    folds = min(options.cv_folds, len(np.unique(groups)))
    validation: dict[str, float] = {}
    seconds: dict[str, float] = {}
    candidates = _models(options.model, options.seed)
    for name, model in candidates.items():
        started = time.monotonic()
        scores = np.zeros(len(y), dtype=np.float64)
        for part, (train, test) in enumerate(GroupKFold(n_splits=folds).split(x, y, groups)):
            if y[train].min() == y[train].max():
                scores[test] = y[train].mean()
                continue
            rows = train[negative_sample(y[train], options.negatives_per_positive, (options.seed, part))]
            fitted = _fit(clone(model), x[rows], y[rows], None if weight is None else weight[rows])
            scores[test] = fitted.predict_proba(x[test])[:, 1]
        validation[f"{name}_average_precision"] = float(average_precision_score(y, scores))
        validation.update(
            {f"{name}_{k}": v for k, v in _precision_recall_at(examples, scores, (1, 5, 10)).items()}
        )
        seconds[f"validate_{name}"] = time.monotonic() - started
    best = max(candidates, key=lambda name: validation[f"{name}_average_precision"])
    started = time.monotonic()
    model = _fit(clone(candidates[best]), x, y, weight)
    seconds["fit"] = time.monotonic() - started
    others = ", ".join(
        f"{name} {validation[f'{name}_average_precision']:.3f}" for name in candidates if name != best
    )
    reason = f"{best}: cross-validated average precision {validation[f'{best}_average_precision']:.3f}" + (
        f" (against {others})" if others else ""
    )
    decisions = int((examples["fold"] == -1).sum())
    return Ranker(best, model, reason, positives, len(y), validation, seconds, decisions)


def _weights(examples: pl.DataFrame) -> np.ndarray | None:
    """The examples' weights, or None when they all weigh 1 (no decision learned from): the fit is then
    exactly the unweighted one."""
    if "weight" not in examples.columns or (examples["weight"] == 1).all():
        return None
    return examples["weight"].to_numpy().astype(np.float64)


def _fit(model, x: np.ndarray, y: np.ndarray, weight: np.ndarray | None):
    """model.fit with the examples' weights, given as a Pipeline's last step takes them."""
    if weight is None:
        return model.fit(x, y)
    name = f"{model.steps[-1][0]}__sample_weight" if hasattr(model, "steps") else "sample_weight"
    return model.fit(x, y, **{name: weight})


def negative_sample(labels: np.ndarray, per_positive: int, seed: tuple[int, int]) -> np.ndarray:
    """The rows a validation fit uses: every positive and a uniform sample of `per_positive` negatives for
    each (all of them when there are no more). Held-out scores are compared by rank only (average
    precision, top-k), which the sampling's shift of the odds leaves as it is."""
    negatives = np.flatnonzero(labels == 0)
    kept = min(len(negatives), per_positive * int((labels == 1).sum()))
    if kept == len(negatives):
        return np.arange(len(labels))
    sampled = np.random.default_rng(seed).choice(negatives, kept, replace=False)
    return np.sort(np.concatenate([np.flatnonzero(labels == 1), sampled]))


def validation_figures(ranker: Ranker) -> dict[str, float]:
    """The ranker's validation figures as reported: rounded to 4 places."""
    return {name: round(float(value), 4) for name, value in ranker.validation.items()}


def feature_weights(ranker: Ranker) -> pl.DataFrame:
    """Each feature's weight: |coefficient| of a linear model on standardised features, or the mean
    gain-free proxy of a tree model (the share of splits on it)."""
    model = ranker.model
    if hasattr(model, "coef"):
        weights = np.abs(model.coef)
    elif hasattr(model, "steps"):
        weights = np.abs(model.steps[-1][1].coef_[0])
    else:
        counts = np.zeros(len(FEATURES))
        for predictors in model._predictors:
            for tree in predictors:
                nodes = tree.nodes[~tree.nodes["is_leaf"].astype(bool)]
                counts += np.bincount(nodes["feature_idx"], minlength=len(FEATURES))
        weights = counts
    share = weights / weights.sum() if weights.sum() else weights
    return pl.DataFrame({"feature": list(FEATURES), "weight": np.round(share, 4)}).sort(
        "weight", descending=True
    )


def _precision_recall_at(examples: pl.DataFrame, scores: np.ndarray, ks: tuple[int, ...]) -> dict[str, float]:
    """Per source page with a positive: precision and recall of its top-k candidates by score."""
    ranked = (
        examples.select("fold", "source", "label")
        .with_columns(pl.Series("score", scores))
        .with_columns(
            pl.col("score").rank("ordinal", descending=True).over("fold", "source").alias("position"),
            pl.col("label").sum().over("fold", "source").alias("positives"),
        )
        .filter(pl.col("positives") > 0)
    )
    lists = ranked.select(pl.struct("fold", "source").n_unique()).item()
    total = int(ranked["label"].sum())
    out = {}
    for k in ks:
        hits = int(ranked.filter(pl.col("position") <= k)["label"].sum())
        out[f"precision_at_{k}"] = hits / (k * lists) if lists else 0.0
        out[f"recall_at_{k}"] = hits / total if total else 0.0
    return out


class _DefaultModel:
    """Logistic-regression weights over standardised FEATURES, read from DEFAULT_WEIGHTS."""

    def __init__(self, weights: dict):
        self.mean = np.array([weights["mean"][f] for f in FEATURES], dtype=np.float64)
        self.scale = np.array([weights["scale"][f] for f in FEATURES], dtype=np.float64)
        self.coef = np.array([weights["coef"][f] for f in FEATURES], dtype=np.float64)
        self.intercept = float(weights["intercept"])

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        z = ((x - self.mean) / self.scale) @ self.coef + self.intercept
        p = 1.0 / (1.0 + np.exp(-z))
        return np.column_stack([1 - p, p])


def default_ranker(reason: str, links_known: bool = True) -> Ranker:
    """The default weights: without the site's links, those fitted without the link features."""
    weights = json.loads(DEFAULT_WEIGHTS.read_text())["with_links" if links_known else "without_links"]
    why = "" if links_known else "; no links export: weights fitted without the link features"
    return Ranker("default", _DefaultModel(weights), f"{reason} ({weights['fitted_on']}){why}")


def export_weights(ranker: Ranker, fitted_on: str) -> dict:
    """A fitted logistic ranker as DEFAULT_WEIGHTS' JSON."""
    scaler, logistic = ranker.model.steps[0][1], ranker.model.steps[1][1]
    return {
        "fitted_on": fitted_on,
        "mean": dict(zip(FEATURES, scaler.mean_.round(6).tolist(), strict=True)),
        "scale": dict(
            zip(FEATURES, np.where(scaler.scale_ > 0, scaler.scale_, 1).round(6).tolist(), strict=True)
        ),
        "coef": dict(zip(FEATURES, logistic.coef_[0].round(6).tolist(), strict=True)),
        "intercept": round(float(logistic.intercept_[0]), 6),
    }  # fmt: skip
