"""The plan's invariants: PLAN_INVARIANTS evaluated on a plan (the link_plan asset's own checks). The
blocking ones say the plan is wrong; the others that the settings cannot be met on this site."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from interlink_pipeline.core.graph.anchors import Anchored, AnchorRules
from interlink_pipeline.core.graph.left_for_editor import task_counts
from interlink_pipeline.core.graph.link_evidence import related, with_evidence_columns
from interlink_pipeline.core.graph.plan_options import PlanOptions, link_room
from interlink_pipeline.core.graph.plan_state import PlanStats
from interlink_pipeline.core.graph.planner import Planner
from interlink_pipeline.core.graph.sentences import readable
from interlink_pipeline.core.invariants import Invariant
from interlink_pipeline.core.warehouse.vocabularies import IN_CONTENT, NOT_KEPT, PLANNER_MISSED

PLAN_INVARIANTS = {
    "link_plan_targets_are_pages": "Every planned link joins two kept pages (never an excluded URL).",
    "link_plan_within_budget": "No page exceeds its out-link budget (existing in-content links counted; "
    "section_links for a section index; on a site whose median page already holds more than "
    "out_link_budget, added_link_budget new links per page) but by links its editors accepted; the home page "
    "stays within hub_links, the same way.",
    "link_plan_links_related": "Every planned link has evidence that its pages are about the same thing: "
    "a candidate whose texts, mentions, SERP or URL tree relate them at min_probability or more (half of "
    "it for a topical link into the least linked pages), a listing in the target's own section index or "
    "in the index above it, a hub or a menu member, or an editor's acceptance; no structural link is "
    "placed because a source had room.",
    "link_plan_anchors": "One anchor per (source, target) pair, and no anchor placed in the text points at "
    "more than anchor_max_targets pages (a name in the related links may be two pages' shared title).",
    "link_plan_anchors_readable": "No anchor is a URL path; no anchor placed in the text is a generic phrase "
    "(the list, the site's own spread anchors, its most common words), sits inside code or a table row, or "
    "crosses a sentence's end.",
    "link_plan_no_orphans": "Every page has an in-link after the plan, but a utility page (utility_pages) "
    "and the pages left for an editor (graph.page_metrics.left_for_editor): an orphan that says what a "
    "rescued orphan says (merge, redirect or canonicalise it) and one no related page could link; a "
    "warning counts and names them.",
    "link_plan_depth_target": "Every page is within max_depth clicks of the home page after the plan "
    "(a warning when the settings make that impossible).",
    "link_plan_keeps_accepted": "Every link editors accepted is in the plan, live on the site, or has a page "
    "gone from the crawl (each counted by why in the step's metadata and link_plan_changes).",
}


def check_plan(
    planned: pl.DataFrame,
    anchors: Anchored,
    existing: pl.DataFrame,
    planner: Planner,
    orphans_after: int,
    options: PlanOptions,
    taken: Mapping[str, set[int]] | None = None,
    accepted: pl.DataFrame | None = None,
    rules: AnchorRules | None = None,
) -> list[Invariant]:
    """PLAN_INVARIANTS on a plan (source, target rows, placement) and its anchors, in that order; an
    anchor's targets include those the site's in-content links already give it (`taken`); `accepted`: what
    became of each link editors accepted (accepted_outcomes); `rules`: the site's anchor rules."""
    why = _why_unmet(planner.stats)
    return [
        _targets_are_pages(planned, len(planner.site.page_ids)),
        _within_budget(planned, existing, planner, options),
        links_related(planned, planner, options),
        _anchors(planned, anchors.anchors, options, taken, anchors.offsets),
        _anchors_readable(anchors, rules or AnchorRules(frozenset())),
        _no_orphans(orphans_after, planner, why),
        _depth_target(planner.stats, options, why),
        accepted_kept(accepted if accepted is not None else pl.DataFrame(schema={"outcome": pl.String})),
    ]


def _targets_are_pages(planned: pl.DataFrame, n: int) -> Invariant:
    targets_ok = bool(((planned["source"] < n) & (planned["target"] < n)).all()) if planned.height else True
    return Invariant("link_plan_targets_are_pages", targets_ok, {"links": planned.height})


def _within_budget(
    planned: pl.DataFrame, existing: pl.DataFrame, planner: Planner, options: PlanOptions
) -> Invariant:
    n, home = len(planner.site.page_ids), planner.site.home
    pairs = zip(planned["source"].to_list(), planned["target"].to_list(), strict=True)
    accepted = np.array([pair in planner.accepted_pairs for pair in pairs], dtype=bool)
    sources = planned["source"].to_numpy()
    contextual = planned["placement"].is_in(IN_CONTENT).to_numpy()
    content_out = np.bincount(existing.filter(pl.col("content"))["source"].to_numpy(), minlength=n)[:n]
    planned_out = np.bincount(sources[contextual], minlength=n)
    room = link_room(content_out, planner.site.sections, options)
    budget = room.allowed
    allowed = np.maximum(budget, content_out + np.bincount(sources[contextual & accepted], minlength=n))
    over = np.flatnonzero((planned_out > 0) & (planned_out + content_out > allowed))
    past_budget = (planned_out > 0) & (planned_out + content_out > budget)  # by links editors accepted
    on_home = (planned["placement"] == "home").to_numpy()
    home_planned = int(on_home.sum())
    home_ok = home_planned <= max(options.hub_links - int(content_out[home]), int((on_home & accepted).sum()))
    figures = {
        "pages_over_budget": len(over),
        "pages_past_budget_by_accepted_links": int(past_budget.sum()),
        "home_links_planned": home_planned,
        "out_link_budget": options.out_link_budget,
        "budget_rule": room.rule,
        "budget_rule_why": room.why,
    }
    return Invariant("link_plan_within_budget", not len(over) and home_ok, figures)


def links_related(planned: pl.DataFrame, planner: Planner, options: PlanOptions) -> Invariant:
    """link_plan_links_related on the planned links (source, target, reason, evidence, placement)."""
    tree = planner.site.tree
    judged = with_evidence_columns(
        planned.select("source", "target", "reason", "evidence", "placement"),
        planner.site.candidates,
        tree.parent if tree is not None else None,
    )
    accepted = pl.Series(
        [pair in planner.accepted_pairs for pair in zip(judged["source"], judged["target"], strict=True)],
        dtype=pl.Boolean,
    )
    unrelated = judged.filter(~(related(options.min_probability) | accepted))
    ids = planner.site.page_ids
    figures = {
        "links_checked": judged.height,
        "links_without_evidence": unrelated.height,
        "examples": [
            f"{ids[s]} -> {ids[t]} ({reason}, {p if p is None else round(p, 3)}, {origins or 'no candidate'})"
            for s, t, reason, p, origins in unrelated.select(
                "source", "target", "reason", "probability", "origins"
            )
            .head(10)
            .iter_rows()
        ],
    }
    return Invariant("link_plan_links_related", unrelated.is_empty(), figures)


def _anchors(
    planned: pl.DataFrame,
    anchors: list[str | None],
    options: PlanOptions,
    taken: Mapping[str, set[int]] | None,
    offsets: list[int | None] | None = None,
) -> Invariant:
    anchored = planned.select("source", "target").with_columns(
        pl.Series("anchor", anchors, dtype=pl.String).str.to_lowercase(),
        pl.Series(
            "in_text",
            [o is not None for o in offsets] if offsets else [True] * len(anchors),
            dtype=pl.Boolean,
        ),
    )
    repeated_pairs = anchored.height - anchored.select("source", "target").n_unique()
    targets_by_anchor: dict[str, set[int]] = {}
    in_text = anchored.filter("in_text").drop_nulls("anchor")
    for anchor, target in in_text.select("anchor", "target").iter_rows():
        targets_by_anchor.setdefault(anchor, set((taken or {}).get(anchor, ()))).add(target)
    shared = pl.DataFrame(
        [(a, len(t)) for a, t in targets_by_anchor.items() if len(t) > options.anchor_max_targets],
        schema={"anchor": pl.String, "targets": pl.Int64},
        orient="row",
    )
    names = anchored.filter(~pl.col("in_text")).group_by("anchor").agg(pl.col("target").n_unique())
    figures = {
        "pairs_with_two_links": repeated_pairs,
        "names_shared_by_pages": names.filter(pl.col("target") > 1).height,
        "anchors_over_cap": shared.height,
        "anchor_max_targets": options.anchor_max_targets,
        "examples": shared.sort("targets", descending=True).head(10)["anchor"].to_list(),
    }
    return Invariant("link_plan_anchors", repeated_pairs == 0 and shared.is_empty(), figures)


def _anchors_readable(anchored: Anchored, rules: AnchorRules) -> Invariant:
    refused: list[tuple[str, str]] = []
    for anchor, sentence, offset in zip(anchored.anchors, anchored.sentences, anchored.offsets, strict=True):
        why = rules.refusal(anchor)
        if why == "URL path" or (offset is not None and why is not None):
            refused.append((anchor, why))
        elif offset is not None and (sentence is None or anchor not in sentence or not readable(sentence)):
            refused.append((anchor, "not in a sentence of its own"))
    figures = {
        "anchors_in_text": sum(o is not None for o in anchored.offsets),
        "anchors_refused": len(refused),
        "examples": [f"{a} ({why})" for a, why in refused[:10]],
    }
    return Invariant("link_plan_anchors_readable", not refused, figures)


def accepted_kept(outcomes: pl.DataFrame) -> Invariant:
    """link_plan_keeps_accepted on accepted_outcomes' rows: none left out by the planner itself."""
    counts = dict(outcomes.group_by("outcome").len().iter_rows())
    missed = counts.get(NOT_KEPT + PLANNER_MISSED, 0)
    figures = {"accepted": outcomes.height, **counts}
    return Invariant("link_plan_keeps_accepted", not missed, figures, blocking=False)


def _why_unmet(stats: PlanStats) -> str:
    """Why a structure target was missed: the planner's notes, else what leaves orphans ('' when none)."""
    return "; ".join(stats.notes) or (
        "none of their related pages has room for a link: left for an editor"
        if stats.unresolved_orphans
        else ""
    )


def _no_orphans(orphans_after: int, planner: Planner, why: str) -> Invariant:
    twins = np.flatnonzero(planner.duplicate_of >= 0)
    utility = int((planner.utility & (planner.inbound[: planner.page_count] == 0)).sum())
    ids = planner.site.page_ids
    left = task_counts(planner.left_for_editor)
    before = planner.orphans_before[planner.orphans_before != planner.site.home]
    fixed = int((planner.inbound[before] > 0).sum())
    figures = {
        "orphans_before": len(before),
        "orphans_fixed": fixed,
        "orphans_after": orphans_after,
        "orphans_left_for_editor": left["orphan"],
        "near_duplicates_left_unlinked": len(twins),
        "utility_pages_left_unlinked": utility,
        "near_duplicates": [f"{ids[t]} says what {ids[planner.duplicate_of[t]]} says" for t in twins[:10]],
        "why": why or "none left",
        "unresolved": planner.stats.unresolved_orphans[:20],
    }
    return Invariant("link_plan_no_orphans", orphans_after <= len(twins) + utility, figures, blocking=False)


def _depth_target(stats: PlanStats, options: PlanOptions, why: str) -> Invariant:
    figures = {
        "max_depth": options.max_depth,
        "deeper_pages": stats.too_deep_after,
        "unreachable_pages": stats.unreachable_after,
        "why": why or "target met",
    }
    return Invariant(
        "link_plan_depth_target",
        stats.too_deep_after == 0 and stats.unreachable_after == 0,
        figures,
        blocking=False,
    )
