"""The link plan of a site, from end to end: its inputs (pages, vectors, clusters, similar pairs, existing
links), the planner run on its scored candidates, the anchors, what changed since the last plan, the
before/after figures and the invariants — everything the link_plan step writes, from frames it reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from interlink_pipeline.core.files import load_state, save_state
from interlink_pipeline.core.frames import looked_up
from interlink_pipeline.core.graph.centrality import KeptCentrality
from interlink_pipeline.core.graph.decided_links import (
    LIVE_COLUMNS,
    DecidedLinks,
    accepted_outcomes,
    decided_links,
    links_seen_live,
)
from interlink_pipeline.core.graph.metrics import GraphSummary, click_depth
from interlink_pipeline.core.graph.plan_inputs import PlanInputs, indexed, read_plan_inputs
from interlink_pipeline.core.graph.plan_invariants import check_plan
from interlink_pipeline.core.graph.plan_metrics import before_and_after, page_metrics_rows, site_metrics_rows
from interlink_pipeline.core.graph.plan_options import PlanOptions, pages_matching
from interlink_pipeline.core.graph.plan_rows import navigation_pairs, placed_links, plan_rows
from interlink_pipeline.core.graph.plan_stability import (
    links_to_keep,
    page_fingerprints,
    plan_changes,
    refused_links,
    unchanged_pages,
)
from interlink_pipeline.core.graph.plan_state import SiteGraph
from interlink_pipeline.core.graph.planner import Planner, plan_links
from interlink_pipeline.core.graph.review_queue import ReviewedPages, reviewed_pages, why_added, with_history
from interlink_pipeline.core.graph.sensible_candidates import sensible_candidates
from interlink_pipeline.core.ingest.link_graph import LinkGraph
from interlink_pipeline.core.ingest.site_links import (
    content_page_pairs,
    without_hidden,
)
from interlink_pipeline.core.invariants import Invariant
from interlink_pipeline.core.ml.page_embeddings import SentenceEncoder
from interlink_pipeline.core.relevance.backtest import BacktestResult, HiddenLinks, run_backtest
from interlink_pipeline.core.relevance.backtest_runs import BacktestSetup
from interlink_pipeline.core.relevance.confidence import MeasuredConfidence
from interlink_pipeline.core.relevance.site_signals import SiteSignals
from interlink_pipeline.core.urls import url_parts
from interlink_pipeline.core.warehouse.site_tables import SiteTables, standing_decisions
from interlink_pipeline.core.warehouse.vocabularies import NOT_KEPT

# what the plan reads of each table
CANDIDATE_COLUMNS = ["source_page_id", "target_page_id", "probability", "origins", "mention_offset",
                     "mention_words"]  # fmt: skip
PREVIOUS_COLUMNS = ["link_id", "source_page_id", "target_page_id", "source_url", "target_url", "reason",
                    "score", "evidence", "placement", "alternative_source_urls", "planned_since",
                    "added_because"]  # fmt: skip


def plan_site(
    inputs: PlanInputs,
    candidates: pl.DataFrame,
    existing: pl.DataFrame,
    options: PlanOptions,
    kept: pl.DataFrame | None = None,
    kept_centrality: KeptCentrality | None = None,
    decided: DecidedLinks | None = None,
    reviewed: ReviewedPages | None = None,
) -> tuple[pl.DataFrame, Planner]:
    """The plan from scored candidates (source, target, probability, origins) and the existing links,
    placing the links editors accepted and then the last plan's `kept` links first, never those they
    rejected (`decided`), adding few links to the pages editors `reviewed` (review_queue.py), reusing
    `kept_centrality` while it holds; the planned links carry the candidate's probability (null when no
    signal proposed the pair). Only sensible_candidates are planned (a shared name in the source's branch,
    a broad page where the source's text names it)."""
    decided = decided or DecidedLinks.none()
    sensible = sensible_candidates(
        inputs.pages, inputs.tree, inputs.name_groups, inputs.cluster_of, candidates, existing, options,
        inputs.sense, inputs.links_known == "links",
    )  # fmt: skip
    scored = sensible.select(
        "source",
        "target",
        pl.col("probability").alias("score"),
        pl.col("origins").alias("provenance"),
        "tied",
    )
    graph = SiteGraph(
        inputs.pages["page_id"].to_numpy(),
        int(np.flatnonzero(inputs.pages["is_home"].to_numpy())[0]),
        inputs.cluster_of,
        scored,
        inputs.similar,
        existing,
        nodes=inputs.nodes,
        vectors=inputs.vectors,
        sections=inputs.sections,
        kept=kept,
        accepted=decided.accepted,
        rejected=decided.rejected,
        kept_centrality=kept_centrality,
        counted_inlinks=inputs.counted_inlinks,
        tree=inputs.tree,
        priority=striking_distance(inputs.pages, inputs.search_console, options),
        utility=pages_matching(inputs.pages["path"], options.utility_pages),
        generated=pages_matching(inputs.pages["path"], options.generated_pages),
        reviewed=reviewed.pages if reviewed else None, settled=reviewed.settled if reviewed else frozenset(),
    )  # fmt: skip
    planned, planner = plan_links(graph, options)
    pair = ["source", "target"]
    planned = looked_up(planned, candidates.select(*pair, pl.col("probability").cast(pl.Float32)), pair)
    planned = looked_up(planned, sensible.select(*pair, "needs_sentence", "tied"), pair).with_columns(
        pl.col("needs_sentence").fill_null(False), pl.col("tied").fill_null(True)
    )
    return planned, planner


def striking_distance(
    pages: pl.DataFrame, console: pl.DataFrame | None, options: PlanOptions
) -> np.ndarray | None:
    """Per page: in striking distance by the Search Console export — an average position from
    striking_distance_from to striking_distance_to, and at least the median impressions of the export's
    pages in that range (None without an export)."""
    if console is None or console.is_empty():
        return None
    near = console.filter(
        pl.col("position").is_between(options.striking_distance_from, options.striking_distance_to)
    )
    wanted = near.filter(pl.col("impressions") >= (near["impressions"].median() or 0))
    keys = url_parts(wanted["url"])["url_key"]
    return pages["url_key"].is_in(keys.implode()).fill_null(False).to_numpy()


def planner_without(
    inputs: PlanInputs, hidden: pl.DataFrame, orphaned: np.ndarray, options: PlanOptions
) -> Callable[[LinkGraph, pl.DataFrame], tuple[pl.DataFrame, np.ndarray]]:
    """The site's planning for a backtest: (visible links, scored candidates) -> (planned links, the pages
    within reach), with the `hidden` in-content pairs taken out of the existing links (kept where navigation
    also joins them) and every link into the `orphaned` pages taken out."""

    def plan(visible: LinkGraph, candidates: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray]:
        navigation = visible.subset(~visible.content)
        nav_pairs = pl.DataFrame({"source": navigation.source, "target": navigation.target})
        existing = without_hidden(inputs.existing, hidden, nav_pairs).filter(
            ~pl.col("target").is_in(pl.Series(orphaned, dtype=pl.Int64).implode())
        )
        planned, planner = plan_site(inputs, candidates, existing, options)
        planned, _ = placed_links(inputs.pages, planned, planner, candidates, options, inputs.taken,
                                  inputs.parents, inputs.sense, inputs.anchor_rules)  # fmt: skip
        return planned, within_reach(planner)

    return plan


def within_reach(planner: Planner) -> np.ndarray:
    """The pages within max_depth - 1 clicks of the home page once planned: those a depth shortcut may come
    from (a page the editors linked only from deeper pages has no source the plan could find)."""
    depth = click_depth(planner.current_graph(), planner.site.home)[: planner.page_count]
    return (depth >= 0) & (depth < planner.options.max_depth)


def backtest_plan(
    signals: SiteSignals,
    links: LinkGraph,
    base: PlanInputs,
    hiding: HiddenLinks,
    setup: BacktestSetup,
    decided: pl.DataFrame | None = None,
) -> BacktestResult:
    """The site's backtest: candidates, ranker (learning from the editors' `decided` pairs) and plan
    rebuilt without what `hiding` hides, scored against it (see relevance/backtest.py)."""
    hidden = hiding.scored(links)
    return run_backtest(
        signals,
        hiding.visible(links),
        hidden,
        hiding.orphaned,
        planner_without(base, hidden, hiding.orphaned, setup.plan),
        setup.candidates,
        setup.ranker,
        setup.k,
        decided,
        setup.plan.min_probability,
    )


@dataclass
class PlanHistory:
    """What a site's plan carries over from its earlier runs and its editors."""

    previous: pl.DataFrame  # the last plan: graph.link_plan rows (PREVIOUS_COLUMNS)
    fingerprints: pl.DataFrame  # each page's fingerprint then: page_id, plan_fingerprint
    kept_centrality: KeptCentrality | None  # the last sampled centrality estimate
    decisions: pl.DataFrame  # the standing decisions: graph.link_decisions' newest row per link
    live: pl.DataFrame  # graph.live_links rows: the links seen live so far
    measured: MeasuredConfidence  # what the site's last backtest measured of each kind of link
    planned_at: datetime | None = None  # when the last plan was made (None: never)
    ranker_fitted_at: datetime | None = None  # when the ranker scoring this plan's candidates was fitted


@dataclass
class SitePlan:
    """A site's plan and what is written and shown with it."""

    plan: pl.DataFrame  # graph.link_plan
    changes: pl.DataFrame  # graph.link_plan_changes
    page_rows: pl.DataFrame  # graph.page_metrics
    site_rows: pl.DataFrame  # graph.site_metrics
    live: pl.DataFrame  # graph.live_links
    decided: DecidedLinks
    accepted: pl.DataFrame  # the links editors accepted, and what became of each (accepted_outcomes)
    checks: list[Invariant]  # PLAN_INVARIANTS on the plan
    planner: Planner
    before: GraphSummary | None  # None when the existing links are unknown (no All Inlinks export)
    after: GraphSummary


def build_site_plan(
    site: str,
    inputs: PlanInputs,
    candidates: pl.DataFrame,
    history: PlanHistory,
    options: PlanOptions,
    computed_at: datetime,
) -> SitePlan:
    """The site's plan from its inputs and scored candidates (ml.link_candidates, by page id), keeping what
    the last plan still may and what editors accepted, never what they rejected (see decided_links.py)."""
    candidates = indexed(candidates, inputs.index, {"source_page_id": "source", "target_page_id": "target"})
    pages = inputs.pages
    fingerprints = pages.select("page_id", page_fingerprints(pages)).join(inputs.index, on="page_id")
    previous = with_alternatives(history.previous, pages["url"])
    kept, dropped = links_to_keep(previous, history.fingerprints, fingerprints)
    decided = decided_links(history.decisions, pages, inputs.index, previous, options.rejected_returns_below)
    reviewed = reviewed_pages(history.decisions, history.previous, inputs.index)
    planned, planner = plan_site(inputs, candidates, inputs.existing, options,
                                 kept if options.keep_previous else None, history.kept_centrality, decided,
                                 reviewed)  # fmt: skip
    planned, anchored = placed_links(inputs.pages, planned, planner, candidates, options, inputs.taken,
                                     inputs.parents, inputs.sense, inputs.anchor_rules)  # fmt: skip
    plan = plan_rows(site, inputs.pages, planned, anchored, options.min_probability,
                     navigation_pairs(inputs.existing), history.measured)  # fmt: skip
    let_go = pl.concat([dropped, refused_links(pages["page_id"], planner.refused)])
    plan = plan_history(plan, history, fingerprints, let_go, computed_at)
    live = live_links(site, inputs, history, computed_at)
    accepted = accepted_outcomes(history.decisions, plan, live, pages["page_id"])
    not_kept = accepted.filter(pl.col("outcome").str.starts_with(NOT_KEPT))
    changes = plan_changes(history.previous, plan, let_go, not_kept).with_columns(
        pl.lit(site).alias("site"), pl.lit(computed_at).dt.cast_time_unit("us").alias("computed_at")
    )
    before, after = before_and_after(planner)
    fingerprint_rows = fingerprints.sort("i")["plan_fingerprint"]
    placed = planned.with_columns(pl.Series("placement", anchored.placements, dtype=pl.String))
    orphans = after.summary.orphan_pages
    checks = check_plan(placed, anchored, inputs.existing, planner, orphans, options, inputs.taken, accepted,
                        inputs.anchor_rules)  # fmt: skip
    site_rows = site_metrics_rows(site, pages["crawl_id"][0], computed_at, before, after, planned.height,
                                  inputs.links_known, planner.waiting_for_review)  # fmt: skip
    return SitePlan(
        plan,
        changes,
        page_metrics_rows(site, pages, planner, planned, fingerprint_rows, before, after),
        site_rows,
        live,
        decided,
        accepted,
        checks,
        planner,
        before.summary if before is not None else None,
        after.summary,
    )


def plan_history(
    plan: pl.DataFrame, history: PlanHistory, fingerprints: pl.DataFrame, let_go: pl.DataFrame, now: datetime
) -> pl.DataFrame:
    """graph.link_plan rows with when each link entered the plan and why it is new (review_queue.py), given
    each page's `fingerprints` now (page_id, plan_fingerprint, i) and the last plan's links let go (`let_go`:
    pairs, why)."""
    same = unchanged_pages(history.fingerprints, fingerprints).drop("i")
    since, fitted = history.planned_at, history.ranker_fitted_at
    refit = since is not None and fitted is not None and fitted > since
    learned = history.decisions.filter(pl.col("decided_at") > since).height if refit else None
    added = why_added(plan, history.previous, same, let_go, learned)
    return with_history(plan, history.previous, added, now, since)


def live_links(site: str, inputs: PlanInputs, history: PlanHistory, now: datetime) -> pl.DataFrame:
    """graph.live_links: the links seen live so far, and those of the last plan or accepted by an editor
    that this crawl's All Inlinks shows in a page's content (a crawl without it shows none)."""
    if inputs.links_known != "links":
        return history.live
    standing = history.decisions
    watched = pl.concat(
        [
            history.previous.select(LIVE_COLUMNS).join(
                standing.select("link_id", "decision"), on="link_id", how="left"
            ),
            standing.filter(pl.col("decision") == "accept").select(*LIVE_COLUMNS, "decision"),
        ]
    )
    pairs = content_page_pairs(inputs.existing, inputs.pages["page_id"])
    return links_seen_live(site, watched, pairs, history.live, inputs.pages["crawl_id"][0], now)


def with_alternatives(previous: pl.DataFrame, urls: pl.Series) -> pl.DataFrame:
    """The last plan's links with their alternative sources as page indices (those still pages): a kept
    link keeps them."""
    index = pl.int_range(urls.len(), eager=True)
    return previous.with_columns(
        pl.col("alternative_source_urls")
        .list.eval(pl.element().replace_strict(urls, index, default=None, return_dtype=pl.Int64))
        .list.drop_nulls()
        .fill_null([])
        .alias("alternatives")
    )


def centrality_path(tables: SiteTables, site: str) -> Path:
    """Where the last sampled centrality estimate is kept for the next plan of the site."""
    return tables.kept_state(site) / "centrality.joblib"


def plan_for_site(
    tables: SiteTables,
    site: str,
    options: PlanOptions,
    now: datetime,
    encoder: SentenceEncoder,
) -> tuple[SitePlan, PlanInputs, PlanHistory]:
    """The site's plan from the warehouse's tables and its kept centrality, with the inputs and the history
    it was built on; `encoder`: the model ml.page_embeddings was made with (read_plan_inputs)."""
    inputs = read_plan_inputs(tables, site, encoder)
    history = PlanHistory(
        tables.read_site("graph.link_plan", site, PREVIOUS_COLUMNS),
        tables.read_site("graph.page_metrics", site, ["page_id", "plan_fingerprint"]),
        load_state(centrality_path(tables, site), KeptCentrality),
        standing_decisions(tables.read_site("graph.link_decisions", site)),
        tables.read_site("graph.live_links", site),
        MeasuredConfidence.of(tables.read_site("graph.backtest_runs", site).sort("ran_at").tail(1)),
        tables.read_site("graph.site_metrics", site, ["computed_at"])["computed_at"].max(),
        tables.read_site("ml.link_ranker_runs", site, ["trained_at"])["trained_at"].max(),
    )
    result = build_site_plan(
        site,
        inputs,
        tables.read_site("ml.link_candidates", site, CANDIDATE_COLUMNS),
        history,
        options,
        now,
    )
    return result, inputs, history


def keep_centrality(tables: SiteTables, site: str, result: SitePlan) -> None:
    """Keep the plan's sampled centrality estimate for the next run (after the write: a run that fails
    keeps the last estimate)."""
    if result.planner.kept_centrality is not None:
        save_state(result.planner.kept_centrality, centrality_path(tables, site))
