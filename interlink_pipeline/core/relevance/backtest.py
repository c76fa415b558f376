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

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.link_graph import LinkGraph
from interlink_pipeline.core.ml.ann_search import SearchCheck
from interlink_pipeline.core.relevance.backtest_scores import (
    PAIR,
    baseline_lists,
    figures_against_baseline,
    figures_by_reason,
    hit_flags,
    orphan_figures,
)
from interlink_pipeline.core.relevance.confidence import precision_by_band
from interlink_pipeline.core.relevance.intervals import Interval
from interlink_pipeline.core.relevance.link_candidates import CandidateBuilder
from interlink_pipeline.core.relevance.link_ranker import (
    Ranker,
    RankerOptions,
    fit_ranker,
    training_examples,
)
from interlink_pipeline.core.relevance.site_signals import CandidateOptions, SiteSignals


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
    learned = decisions_learned(decided, hidden, ranker_options)
    ranker, candidates, alone = _rescored(
        signals, candidate_options, visible, ranker_options, learned, seconds
    )
    started = time.monotonic()
    planned, reach = plan(visible, candidates)
    seconds["plan"] = time.monotonic() - started
    depth = max(k, 50)
    started = time.monotonic()
    baseline = baseline_lists(signals.vectors["title"], visible, depth, candidate_options.approximate(depth))
    seconds["baseline"] = time.monotonic() - started
    lists, seed = baseline.lists, ranker_options.seed
    figures, intervals = figures_against_baseline(planned, candidates, lists, hidden, k, seed)
    figures |= {"decisions_learned": learned.height, "plan_precision_without_decisions": None}
    if alone is not None:
        without, _ = figures_against_baseline(plan(visible, alone)[0], alone, lists, hidden, k, seed)
        figures["plan_precision_without_decisions"] = without["plan_precision"]
    orphans, orphan_intervals = orphan_figures(planned, hidden, orphaned, baseline.closest, seed)
    by_reason = figures_by_reason(planned, hidden, reach, seed)
    hits = planned.join(hit_flags(hidden), on=PAIR, how="left", maintain_order="left")["hit"].fill_null(0)
    return BacktestResult(
        hidden.height, figures | orphans, intervals | orphan_intervals, by_reason, ranker, planned, seconds,
        precision_by_band(planned, hits, min_probability), baseline.search,
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


def _rescored(
    signals: SiteSignals,
    candidate_options: CandidateOptions,
    visible: LinkGraph,
    options: RankerOptions,
    learned: pl.DataFrame,
    seconds: dict[str, float],
) -> tuple[Ranker, pl.DataFrame, pl.DataFrame | None]:
    """The ranker fitted (learning the editors' `learned` decisions) and the candidates it scores, rebuilt
    from the visible links (timed into `seconds`); with decisions, also the candidates of a ranker fitted
    without them (else None). The builder — its neighbour lists and fixed pairs, 1.3 GB at 300,000 pages —
    is let go here, before anything is planned: the plans read the scored candidates only."""
    builder = CandidateBuilder(signals, candidate_options)
    started = time.monotonic()
    ranker = fit_ranker(training_examples(builder, visible, options, learned), options)
    seconds["ranker"] = time.monotonic() - started
    started = time.monotonic()
    candidates = builder.features(builder.proposals(visible), each=scored_by(ranker))
    seconds["candidates"] = time.monotonic() - started
    if not learned.height:
        return ranker, candidates, None
    alone = fit_ranker(training_examples(builder, visible, options), options)
    return ranker, candidates, builder.features(builder.proposals(visible), each=scored_by(alone))


def scored_by(ranker: Ranker) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """Candidate rows -> what the plan and the figures read of them (source, target, origins, the phrase
    the source's text uses for the target, probability): the backtest keeps a chunk's scores, not its
    features, so a large site's candidates are never held with every feature at once."""

    def scored(rows: pl.DataFrame) -> pl.DataFrame:
        return rows.select("source", "target", "origins", "mention_offset", "mention_words").with_columns(
            pl.Series("probability", ranker.probability(rows))
        )

    return scored
