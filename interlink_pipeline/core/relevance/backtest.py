"""Backtest: hide a seeded share of the site's in-content links, rebuild candidates, ranker and plan without
them, and score what comes back against them, next to a same-budget baseline computed in the same run.

The baseline is what a plain "most similar pages" list gives: each page's top pages by title cosine
(without its existing in-content links), round by round (every page's best, then every page's second…)
until it holds as many links as the plan; for the candidate figures, each page's top k.

In the same rebuild, every link into a seeded sample of pages is hidden too, navigation included, so that
they become orphans (a site with navigation has few orphans otherwise): each orphan rescue's source is
scored against the pages that linked to its target in content, next to the orphan's most similar page by
title as its source.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.files import load_state, save_state
from interlink_pipeline.core.ingest.link_graph import LinkGraph
from interlink_pipeline.core.ml.ann_search import Approximate, SearchCheck, checked_top
from interlink_pipeline.core.ml.exact_search import exact_top
from interlink_pipeline.core.relevance.confidence import precision_by_band
from interlink_pipeline.core.relevance.intervals import (
    Interval,
    interval_text,
    ratio_figures,
    ratio_intervals,
)
from interlink_pipeline.core.relevance.link_candidates import CandidateBuilder
from interlink_pipeline.core.relevance.link_ranker import (
    Ranker,
    RankerOptions,
    SiteState,
    fit_ranker,
    site_state,
    still_fits,
    training_examples,
    training_fingerprint,
)
from interlink_pipeline.core.relevance.site_signals import CandidateOptions, SiteSignals
from interlink_pipeline.core.warehouse.site_tables import SiteTables

PAIR = ["source", "target"]
# Fewer hidden links than this and a backtest's precision says next to nothing (one link more or less found
# moves it by 5 points or more): the step warns, naming the interval.
MIN_MEASURED_LINKS = 20


@dataclass
class BacktestResult:
    hidden_links: int
    figures: dict[str, float | None]  # None: not measured (no orphan made, none rescued)
    intervals: dict[str, Interval]  # each share's 95% interval, resampling the pages it was measured on
    by_reason: pl.DataFrame  # reason, links, hits, known, mean probability, precision, recall, …
    ranker: Ranker
    planned: pl.DataFrame  # the rebuilt plan's links: source, target, reason, probability, …
    seconds: dict[str, float] = field(default_factory=dict)
    by_band: list[dict] = field(default_factory=list)  # per confidence band: links, hits, precision
    baseline_search: SearchCheck = field(default_factory=lambda: SearchCheck("exact"))  # how its lists were


@dataclass(frozen=True)
class HiddenLinks:
    """What a backtest hides: in-content `pairs` (source, target), and every link, navigation included,
    into the `orphaned` pages."""

    pairs: pl.DataFrame
    orphaned: np.ndarray

    def visible(self, links: LinkGraph) -> LinkGraph:
        """The links without the hidden pairs' in-content instances and without any link into an orphan."""
        shown = hide_pairs(links, self.pairs)
        return shown.subset(~np.isin(shown.target, self.orphaned))

    def scored(self, links: LinkGraph) -> pl.DataFrame:
        """The in-content pairs the plan is scored against: the hidden pairs and the orphans' in-links."""
        into_orphans = links.content_pairs().filter(
            pl.col("target").is_in(pl.Series(self.orphaned).implode())
        )
        return pl.concat([self.pairs.select(PAIR), into_orphans]).unique().sort(PAIR)


def links_to_hide(
    links: LinkGraph, fraction: float, seed: int, orphan_fraction: float, home: int
) -> HiddenLinks:
    """A seeded share of the in-content pairs (pairs_to_hide) and a seeded `orphan_fraction` of the pages
    linked in content (the home page and menu members excepted: a menu would list them anyway) whose every
    in-link is hidden."""
    pairs = pairs_to_hide(links, fraction, seed)
    linked = np.unique(links.target[links.content])
    in_menus = np.concatenate([links.sections.child, links.sections.main_sections])
    eligible = linked[(linked != home) & ~np.isin(linked, in_menus)]
    chosen = np.random.default_rng([seed, 1]).random(len(eligible)) < orphan_fraction
    return HiddenLinks(pairs, np.sort(eligible[chosen]))


def pairs_to_hide(links: LinkGraph, fraction: float, seed: int) -> pl.DataFrame:
    """A seeded share of the distinct in-content (source, target) pairs; navigation, header and footer
    links are never hidden."""
    pairs = links.content_pairs()
    chosen = np.random.default_rng(seed).random(pairs.height) < fraction
    if pairs.height and not chosen.any():  # a figure measured on no link would read as 0% precision
        raise InputError(
            f"fraction {fraction:g} hides none of the site's {pairs.height:,} in-content link pairs (seed "
            f"{seed}): nothing would be measured. Hide more, e.g. --fraction "
            f"{min(0.2, 20 / pairs.height):.2g}."
        )
    return pairs.filter(pl.Series(chosen))


def hide_pairs(links: LinkGraph, hidden: pl.DataFrame) -> LinkGraph:
    """The links without the in-content instances of `hidden` (source, target) pairs."""
    flagged = (
        pl.DataFrame({"source": links.source, "target": links.target})
        .join(
            hidden.select(PAIR).unique().with_columns(pl.lit(True).alias("hidden")),
            on=PAIR,
            how="left",
            maintain_order="left",
        )["hidden"]
        .fill_null(False)
        .to_numpy()
    )
    return links.subset(~(flagged & links.content))


def baseline_lists(
    title_vectors: np.ndarray, visible: LinkGraph, depth: int, approximate: Approximate | None = None
) -> tuple[pl.DataFrame, SearchCheck]:
    """source, target, cosine, position: each page's `depth` most similar pages by title, without itself
    and its visible in-content links; pages equally similar (the same title) in target order. Each page is
    searched as deep as it needs (depth, itself and its links), pages of like need together: searching
    every page as deep as the page with the most links made each list 1,205 long on a 100,000-page site,
    and took 121 s and 5.5 GB. The narrowest search (nearly every page's) is approximate past
    `approximate.above` pages where its recall holds (ann_search.checked_top); the few deeper ones exact."""
    n = len(title_vectors)
    needed = depth + 1 + np.bincount(visible.source[visible.content], minlength=n)
    width = np.minimum(n, 2 ** np.ceil(np.log2(needed)).astype(np.int64))
    narrowest = int(width.min()) if n else 0
    idx, scores, check = checked_top(title_vectors, narrowest, approximate or Approximate())
    parts = []
    for searched in np.unique(width):
        rows = np.flatnonzero(width == searched)
        if searched == narrowest:
            found, cosine = idx[rows], scores[rows]
        else:
            found, cosine = exact_top(title_vectors[rows], title_vectors, int(searched), query_ids=rows)
        parts.append(
            pl.DataFrame(
                {"source": np.repeat(rows, found.shape[1]), "target": found.ravel(), "cosine": cosine.ravel()}
            )
        )
    lists = (
        pl.concat(parts)
        .filter(pl.col("cosine").is_finite())  # an approximate list's padding
        .sort(pl.col("source"), pl.col("cosine").round(5), pl.col("target"), descending=[False, True, False])
        .filter(pl.col("source") != pl.col("target"))
        .join(visible.content_pairs(), on=PAIR, how="anti")
        .with_columns(pl.int_range(pl.len()).over("source").add(1).alias("position"))
        .filter(pl.col("position") <= depth)
    )
    return lists, check


def same_budget_baseline(lists: pl.DataFrame, size: int) -> pl.DataFrame:
    """`size` links from the baseline lists, every page's best first, then every page's second, …"""
    return lists.sort(["position", "cosine", "source"], descending=[False, True, False]).head(size)


def precision_recall(links: pl.DataFrame, hidden: pl.DataFrame) -> tuple[int, float, float]:
    hits = links.select(PAIR).unique().join(hidden.select(PAIR), on=PAIR).height
    return hits, hits / links.height if links.height else 0.0, hits / hidden.height if hidden.height else 0.0


def top_k(ranked: pl.DataFrame, score: str, hidden: pl.DataFrame, k: int) -> pl.DataFrame:
    """Each source's top-k pairs (source, target, `score`) by `score`, over the sources with a hidden link
    (the pairs alone are sorted: a large site's candidates carry their origins' text beside them)."""
    return (
        ranked.select("source", "target", score)
        .filter(pl.col("source").is_in(hidden["source"].unique().implode()))
        .sort(["source", score, "target"], descending=[False, True, False])
        .group_by("source", maintain_order=True)
        .head(k)
    )


def hit_flags(hidden: pl.DataFrame) -> pl.DataFrame:
    """source, target, hit = 1: the hidden pairs, to left-join onto links and count the hits."""
    return hidden.select(PAIR).with_columns(pl.lit(1).alias("hit"))


def per_source(name: str, links: pl.DataFrame, hidden: pl.DataFrame) -> pl.DataFrame:
    """source, `name`_links, `name`_hits: how many of `links` each source has, and how many were hidden."""
    return (
        links.select(PAIR)
        .unique()
        .join(hit_flags(hidden), on=PAIR, how="left")
        .group_by("source")
        .agg(pl.len().alias(f"{name}_links"), pl.col("hit").fill_null(0).sum().alias(f"{name}_hits"))
    )


def run_backtest(
    signals: SiteSignals,
    visible: LinkGraph,
    hidden: pl.DataFrame,
    orphaned: np.ndarray,
    plan: Callable[[LinkGraph, pl.DataFrame], tuple[pl.DataFrame, np.ndarray]],
    candidate_options: CandidateOptions,
    ranker_options: RankerOptions,
    k: int = 10,
    decided: pl.DataFrame | None = None,
    min_probability: float = 0.1,
) -> BacktestResult:
    """Rebuild candidates, ranker and plan from the `visible` links only (HiddenLinks.visible), and score
    them against the `hidden` in-content pairs (HiddenLinks.scored); the rescues of the `orphaned` pages
    against their hidden in-links.

    `plan(visible links, scored candidates)` returns the plan's links (source, target, reason,
    probability) and which pages are within reach (link_plan.within_reach); it is the same planning the
    site's own run uses. The ranker learns from the editors' decisions (`decided`: source, target,
    decision) but those about hidden pairs (their answer is what is measured); with decisions, the plan of
    a ranker that ignores them is measured too (`plan_precision_without_decisions`). Each confidence band
    (by the plan's `min_probability`) is measured apart: what the report says a band is worth.
    """
    seconds: dict[str, float] = {}
    builder = CandidateBuilder(signals, candidate_options)
    learned = decisions_learned(decided, hidden, ranker_options)
    ranker, candidates, planned, reach = _rebuilt(builder, visible, plan, ranker_options, learned, seconds)
    depth = max(k, 50)
    lists, searched = baseline_lists(
        signals.vectors["title"], visible, depth, candidate_options.approximate(depth)
    )
    figures, intervals = _figures(planned, candidates, lists, hidden, k, ranker_options.seed)
    figures |= {"decisions_learned": learned.height, "plan_precision_without_decisions": None}
    if learned.height:
        _, alone, planned_alone, _ = _rebuilt(builder, visible, plan, ranker_options, None, {})
        without, _ = _figures(planned_alone, alone, lists, hidden, k, ranker_options.seed)
        figures["plan_precision_without_decisions"] = without["plan_precision"]
    orphans, orphan_intervals = _orphan_figures(
        planned, hidden, orphaned, signals.vectors["title"], ranker_options.seed
    )
    by_reason = figures_by_reason(planned, hidden, reach, ranker_options.seed)
    hits = planned.join(hit_flags(hidden), on=PAIR, how="left", maintain_order="left")["hit"].fill_null(0)
    return BacktestResult(
        hidden.height, figures | orphans, intervals | orphan_intervals, by_reason, ranker, planned, seconds,
        precision_by_band(planned, hits, min_probability), searched,
    )  # fmt: skip


def decisions_learned(
    decided: pl.DataFrame | None, hidden: pl.DataFrame, options: RankerOptions
) -> pl.DataFrame:
    """The decisions a backtest's ranker learns from: those its weights count (accepted_weight,
    rejected_weight above 0), none about a hidden pair."""
    if decided is None:
        return pl.DataFrame(schema={"source": pl.Int64, "target": pl.Int64, "decision": pl.String})
    weight = pl.col("decision").replace_strict(options.decision_weights(), return_dtype=pl.Float64)
    counted = decided.filter(weight > 0)
    return counted.join(hidden.select(PAIR), on=PAIR, how="anti")


def _rebuilt(
    builder: CandidateBuilder,
    visible: LinkGraph,
    plan: Callable[[LinkGraph, pl.DataFrame], tuple[pl.DataFrame, np.ndarray]],
    options: RankerOptions,
    decided: pl.DataFrame | None,
    seconds: dict[str, float],
) -> tuple[Ranker, pl.DataFrame, pl.DataFrame, np.ndarray]:
    """The ranker, scored candidates and plan rebuilt from the visible links (timed into `seconds`)."""
    started = time.monotonic()
    ranker = fit_ranker(training_examples(builder, visible, options, decided), options)
    seconds["ranker"] = time.monotonic() - started
    started = time.monotonic()
    candidates = builder.features(builder.proposals(visible), each=scored_by(ranker))
    seconds["candidates"] = time.monotonic() - started
    started = time.monotonic()
    planned, reach = plan(visible, candidates)
    seconds["plan"] = time.monotonic() - started
    return ranker, candidates, planned, reach


def scored_by(ranker: Ranker) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """Candidate rows -> what the plan and the figures read of them (source, target, origins, the phrase
    the source's text uses for the target, probability): the backtest keeps a chunk's scores, not its
    features, so a large site's candidates are never held with every feature at once."""

    def scored(rows: pl.DataFrame) -> pl.DataFrame:
        return rows.select("source", "target", "origins", "mention_offset", "mention_words").with_columns(
            pl.Series("probability", ranker.probability(rows))
        )

    return scored


# figure -> (numerator, denominator) of the per-source counts _figures sums; each gets an interval
FIGURE_RATIOS = {
    "plan_precision": ("plan_hits", "plan_links"),
    "plan_recall": ("plan_hits", "hidden"),
    "baseline_precision": ("baseline_hits", "baseline_links"),
    "baseline_recall": ("baseline_hits", "hidden"),
    "candidate_precision_at_k": ("candidate_top_hits", "top_slots"),
    "candidate_recall_at_k": ("candidate_top_hits", "hidden"),
    "baseline_precision_at_k": ("baseline_top_hits", "top_slots"),
    "baseline_recall_at_k": ("baseline_top_hits", "hidden"),
    "candidate_coverage": ("candidate_hits", "hidden"),
}


def _figures(
    planned: pl.DataFrame,
    candidates: pl.DataFrame,
    lists: pl.DataFrame,
    hidden: pl.DataFrame,
    k: int,
    seed: int,
) -> tuple[dict[str, float], dict[str, Interval]]:
    """The plan and the candidates scored against the hidden links, next to the baseline `lists` (the plan
    against as many of their links, the candidates' top k against theirs), and each figure's interval
    (resampling source pages)."""
    baseline = same_budget_baseline(lists, planned.height)
    counts = pl.concat(
        [
            per_source("plan", planned, hidden),
            per_source("baseline", baseline, hidden),
            per_source("candidate_top", top_k(candidates, "probability", hidden, k), hidden),
            per_source("baseline_top", top_k(lists, "cosine", hidden, k), hidden),
            # every source with candidates (the intervals resample them), its hits counted among the
            # hidden pairs only: never a copy of a large site's millions of candidate pairs
            candidates.select(pl.col("source").unique()),
            per_source("candidate", candidates.join(hidden, on=PAIR, how="semi"), hidden).drop(
                "candidate_links"
            ),
            hidden.group_by("source").agg(pl.len().alias("hidden"), pl.lit(k).alias("top_slots")),
        ],
        how="align",
    ).fill_null(0)
    figures, intervals = ratio_figures(counts, "source", FIGURE_RATIOS, seed, empty=0.0)
    figures |= {
        "plan_links": planned.height,
        "plan_hits": int(counts["plan_hits"].sum()),
        "baseline_hits": int(counts["baseline_hits"].sum()),
        "candidates": candidates.height,
    }
    return figures, intervals


def _orphan_figures(
    planned: pl.DataFrame, hidden: pl.DataFrame, orphaned: np.ndarray, title_vectors: np.ndarray, seed: int
) -> tuple[dict[str, float | None], dict[str, Interval]]:
    """The orphans made by hiding their in-links: how many the plan rescued, how often a rescue's source
    is a page that linked to the orphan in content, and how often the orphan's most similar page by title
    is (the baseline: "link it from its closest page"); intervals resampling the orphans."""
    truth = hidden.filter(pl.col("target").is_in(pl.Series(orphaned).implode()))
    orphans = truth["target"].unique()
    rescues = planned.filter(
        (pl.col("reason") == "orphan-rescue") & pl.col("target").is_in(orphans.implode())
    ).select(PAIR)
    closest = np.empty(0, dtype=np.int64)
    if len(orphans):
        queries = orphans.to_numpy()
        idx, _ = exact_top(title_vectors[queries], title_vectors, 2, query_ids=queries)
        closest = idx[:, 0]
    baseline = pl.DataFrame(
        {"source": closest, "target": orphans.to_numpy()}, schema=dict.fromkeys(PAIR, pl.Int64)
    )
    hit = hit_flags(truth)
    counts = pl.concat(
        [
            rescues.join(hit, on=PAIR, how="left")
            .group_by("target")
            .agg(pl.len().alias("rescues"), pl.col("hit").fill_null(0).sum().alias("rescue_hits")),
            baseline.join(hit, on=PAIR, how="left").select(
                "target", pl.col("hit").fill_null(0).alias("baseline_hits"), pl.lit(1).alias("orphans")
            ),
        ],
        how="align",
    ).fill_null(0)
    ratios = {
        "orphan_rescue_precision": ("rescue_hits", "rescues"),
        "orphan_baseline_precision": ("baseline_hits", "orphans"),
    }
    figures, intervals = ratio_figures(counts, "target", ratios, seed, empty=None)
    return figures | {"orphaned_pages": len(orphans), "orphan_rescues": rescues.height}, intervals


# per reason: figure -> (numerator, denominator) of its per-source counts
REASON_RATIOS = {
    "precision": ("hits", "links"),
    "known_precision": ("hits", "known"),
    "reachable_precision": ("reachable_hits", "reachable"),
}


def figures_by_reason(
    planned: pl.DataFrame, hidden: pl.DataFrame, reach: np.ndarray, seed: int = 0
) -> pl.DataFrame:
    """The plan's figures per reason: links, hits, precision, recall (the share of the hidden links it
    found), mean probability; for the links into a page that lost an in-link to the hiding (`known`), their
    precision; and for those into a page that lost one from a page within `reach` (`reachable`), theirs: a
    structural link's target is forced and only its source chosen, and a page the editors linked only from
    pages the plan may not use (deeper ones, for a depth shortcut) has no source to find. Each precision
    has its interval (`_low`, `_high`), resampling the source pages."""
    lost = hidden.select(pl.col("target").unique(), pl.lit(True).alias("known"))
    lost_within_reach = (
        hidden.filter(pl.Series(reach[hidden["source"].to_numpy()]))
        .select(pl.col("target").unique(), pl.lit(True).alias("reachable"))
    )  # fmt: skip
    by_source = (
        planned.join(hit_flags(hidden), on=PAIR, how="left")
        .join(lost, on="target", how="left")
        .join(lost_within_reach, on="target", how="left")
        .group_by("reason", "source")
        .agg(
            pl.len().alias("links"),
            pl.col("hit").fill_null(0).sum().alias("hits"),
            pl.col("known").fill_null(False).sum().alias("known"),
            pl.col("reachable").fill_null(False).sum().alias("reachable"),
            (pl.col("hit").fill_null(0) * pl.col("reachable").fill_null(False)).sum().alias("reachable_hits"),
        )
    )
    intervals = pl.DataFrame(
        [
            {"reason": reason}
            | {
                f"{name}_{end}": (interval[i] if interval else None)
                for name, interval in ratio_intervals(rows, "source", REASON_RATIOS, seed).items()
                for i, end in enumerate(("low", "high"))
            }
            for (reason,), rows in by_source.group_by("reason")
        ],
        schema={"reason": pl.String}
        | {f"{n}_{e}": pl.Float64 for n in REASON_RATIOS for e in ("low", "high")},
    )
    return (
        by_source.group_by("reason")
        .agg(pl.col("links", "hits", "known", "reachable", "reachable_hits").sum())
        .join(
            planned.group_by("reason").agg(pl.col("probability").mean().alias("mean_probability")), "reason"
        )
        .with_columns(
            (pl.col("hits") / pl.col("links")).alias("precision"),
            (pl.col("hits") / max(hidden.height, 1)).alias("recall"),
            (pl.col("hits") / pl.col("known")).fill_nan(None).alias("known_precision"),
            (pl.col("reachable_hits") / pl.col("reachable")).fill_nan(None).alias("reachable_precision"),
        )
        .drop("reachable_hits")
        .join(intervals, on="reason", how="left")
        .sort(["links", "reason"], descending=[True, False])  # group_by's order is not stable
    )


# --- the backtest's run: what it measured, and its row in graph.backtest_runs ---------------------------


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
