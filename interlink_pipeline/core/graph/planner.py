"""The planner: which page should link to which, built on the link graph (after Omio's "Link Pie").

Steps, each adding links only where the source page has spare out-link budget and the link does not exist
(nor did an editor reject it: see decided_links.py):

0. **What stands.** The links editors accepted (past a page's budget if need be: the editor decided to publish
   them; they use up the room there is), then the last plan's links whose pages are unchanged. A page an
   editor has reviewed takes at most `new_links_per_reviewed_page` links its editor has not seen, in every
   step: the queue does not grow behind the editor (review_queue.py).

1. **Centrality.** Betweenness on the relatedness graph (link candidates and similar pairs, undirected):
   pages that sit between topics. Exact below `exact_centrality_below` pages, sampled above; a sampled
   estimate is reused on a re-crawl while at most `recompute_centrality_above` of the graph's edges changed.
2. **Hubs** (`hub`, placed on the home page): the sections it does not link yet (the top level of the
   site's menu, the largest top-level pages of the URL tree, then the largest listings), up to
   `hub_links`; never a leaf page.
   **Sections** (`section`): each section index links the pages its menu lists under it, up to
   `section_links` (the site's own menu declares the section; editors link an index to its members).
3. **Structure** (`orphan-rescue`, `component-bridge`, `depth-shortcut`): round by round, each too-deep or
   unreachable page (most out-links first, one per cut-off group) gets a link from its first related source
   (its section index, the index above its index, or one of its `structural_sources` most related pages
   with evidence: see structure.py) among the pages within `max_depth - 1` clicks with room, until every
   page is within `max_depth` clicks or none left has such a source. Orphans and cut-off groups left then
   get a link from a related source anywhere. An index page (a menu parent, a paginated listing) takes the
   link in its list (`listing`) whatever its in-content budget. A page none of its related pages can link
   is left for an editor (left_for_editor.py), never linked from wherever there is room.
4. **Topical links** (`topical`): candidates best first, those into topics linked under the site's median
   before the others, while the target is under its in-content quota (from `min_inlinks` for the least
   central pages to `max_inlinks` for the most), then beyond it outside the best-linked quarter; no target
   takes more than `max_target_share` of the plan.

Utility pages (about, contact, cart: `utility_pages`) are never a link's source nor a topical link's target,
and the structure steps leave them alone, as they leave an orphan that says what a rescued orphan says.
Pages a generator writes (`generated_pages`) are never a link's source, but for links editors accepted.

Structure comes before topical links so that the shallow pages' budgets build a wide, shallow tree. The
candidates a plan may use are sensible_candidates': none into a same-named page in another branch, into a
broad page only where the source's text names it in place.
"""

from __future__ import annotations

import time
from functools import partial

import numpy as np
import polars as pl

from interlink_pipeline.core.frames import looked_up
from interlink_pipeline.core.graph.centrality import centrality, relatedness_edges
from interlink_pipeline.core.graph.left_for_editor import editor_tasks
from interlink_pipeline.core.graph.link_evidence import (
    INDEX_ABOVE,
    RELATED_EVIDENCE,
    SECTION_INDEX,
    WEAKEST_BAR,
    related,
    with_evidence_columns,
)
from interlink_pipeline.core.graph.metrics import UNREACHABLE, click_depth
from interlink_pipeline.core.graph.plan_options import PlanOptions, check_options
from interlink_pipeline.core.graph.plan_state import PlanState, SiteGraph, planned_frame
from interlink_pipeline.core.graph.structure import (
    bridge_components,
    deep_sections,
    near_duplicate_orphans,
    rescue_orphans,
    shorten_depth,
)

WAITS_FOR_REVIEW = "waits: its page was reviewed and has its new links (new_links_per_reviewed_page)"
SECTION_PAGES = 5  # the fewest pages below a page in the URL tree that make it a section for the home page
# each reason as a person reads it (the report's plan table)
REASON_WORDS = {
    "hub": "hub: linked from the home page",
    "section": "section: the menu lists it here",
    "topical": "topical: the site's editors would link it",
    "orphan-rescue": "orphan rescue: nothing linked to it",
    "component-bridge": "bridge: no path from home reached it",
    "depth-shortcut": "depth shortcut: it was too deep",
}


class Planner(PlanState):
    """The plan's steps in order, over the state they grow (see the module's docstring)."""

    def run(self) -> None:
        options, site = self.options, self.site
        started = time.monotonic()
        self.centrality, self.stats.centrality, self.kept_centrality = centrality(
            site.page_ids,
            relatedness_edges(self.page_count, site.similar, site.candidates),
            options,
            site.kept_centrality,
        )
        self.stats.seconds["centrality"] = time.monotonic() - started
        quantile = np.argsort(np.argsort(self.centrality, kind="stable"), kind="stable") / max(
            1, self.page_count - 1
        )
        spread = options.max_inlinks - options.min_inlinks
        self.quota = (options.min_inlinks + np.round(quantile * spread)).astype(np.int64)
        self.hubs = self._choose_hubs()
        self._keep_previous()
        near_duplicate_orphans(self)
        # Structure first, while the pages within reach still have budget: every page within max_depth
        # clicks (unreachable ones included), then orphans and any group still cut off, then topical links
        # with the budgets left.
        timed = [
            ("hubs", self._link_hubs),
            ("sections", self._link_sections),
            ("depth", partial(shorten_depth, self)),
            ("orphans", partial(rescue_orphans, self)),
            ("bridges", partial(bridge_components, self)),
            ("topical", self._topical),
        ]
        for name, step in timed:
            started = time.monotonic()
            step()
            self.stats.seconds[name] = time.monotonic() - started

    def _keep_previous(self) -> None:
        """The links editors accepted (whatever room their page has left), then the last plan's still-valid
        links that still have evidence their pages are about the same thing (link_evidence.related), first:
        the new plan only adds what the change needs."""
        for kept, accepted in ((self.site.accepted, True), (self.site.kept, False)):
            if kept is None:
                continue
            columns = kept.columns
            kept = with_evidence_columns(
                kept, self.site.candidates, self.site.tree.parent if self.site.tree is not None else None
            ).with_columns(
                (pl.lit(accepted) | related(self.options.min_probability)).alias("is_related"),
                pl.coalesce(
                    pl.when(pl.col("evidence").is_in([SECTION_INDEX, INDEX_ABOVE])).then("evidence"),
                    "origins",
                    "evidence",
                ).alias("evidence"),
            )
            for *row, is_related in kept.select(*columns, "is_related").iter_rows():
                source, target, reason, score, evidence, placement, alternatives = row
                pair = (source, target)
                if pair in self.exists:
                    self.refused[pair] = "now on the site"
                elif pair in self.site.rejected:
                    self.refused[pair] = "rejected by an editor"
                elif pair in self.planned:
                    continue
                elif not is_related:
                    self.refused[pair] = "no longer related: no evidence both pages are about the same thing"
                elif self.generated[source] and not accepted:
                    self.refused[pair] = "its source is written by a generator (generated_pages)"
                elif not self.add(
                    source, target, reason, score, evidence, home=placement == "home",
                    alternatives=tuple(alternatives), listing=placement == "listing", accepted=accepted,
                ):  # fmt: skip
                    self.refused[pair] = (
                        WAITS_FOR_REVIEW if pair in self.held_back else "no link budget left on the source"
                    )

    def _choose_hubs(self) -> list[int]:
        """The sections the home page does not link yet: the top level of the site's menu, the top-level
        pages of the URL tree with the most pages below them, then the sections whose pages lie deeper than
        max_depth, most such pages first (see structure.deep_sections) — each with at least SECTION_PAGES
        pages below it and a hundredth of the site; never a leaf page; none when the home page links every
        section and reaches their pages within max_depth."""
        site = self.site
        linked = {site.home, *site.existing.filter(pl.col("source") == site.home)["target"].to_list()}
        floor = max(SECTION_PAGES, self.page_count // 100)
        main = [int(p) for p in site.sections.main_sections]
        tops: list[int] = []
        if site.tree is not None:
            below = np.where(site.tree.depth == 1, site.tree.descendants, 0)
            tops = [int(p) for p in np.argsort(-below, kind="stable") if below[p] >= floor]
        sections = [p for p in dict.fromkeys([*main, *tops]) if p not in linked][: self.options.hub_links]
        deep = deep_sections(self, floor, linked | set(sections), self.options.hub_links - len(sections))
        return [*sections, *deep]

    def _link_hubs(self) -> None:
        home = self.site.home
        for hub in self.hubs:
            self.add(home, hub, "hub", float(self.centrality[hub]), "centrality", home=True)

    def _link_sections(self) -> None:
        """Each menu parent links the pages listed under it, the most probable first."""
        pairs = (
            looked_up(
                self.site.sections.pairs(),
                self.site.candidates.select("source", "target", "score"),
                ["source", "target"],
            )
            .with_columns(pl.col("score").fill_null(0.0))
            .sort(["source", "score", "target"], descending=[False, True, False])
        )
        for index, member, score in pairs.iter_rows():
            self.add(index, member, "section", score, "menu")

    def _topical(self) -> None:
        """The most probable candidates, best first (into topics linked under the site's median before the
        others: weak_topics), within the sources' budgets: first up to each target's
        in-link quota, then beyond it for the targets outside the best-linked quarter. No target takes more
        than max_target_share of the links so planned (at least 2): a target past it keeps its most probable
        links, and the budgets freed go to the targets under it. A pair needs RELATED_EVIDENCE besides the
        site's linking habits, and, where the site's links are known, a tie in them (sensible_candidates) or
        a mention of the target in the source's text. Nothing under min_probability is added
        (WEAKEST_BAR of it into the least linked quarter of pages, when the site's links are known, and
        into the pages in striking distance, which also take a full quota)."""
        linked_before = (self.inbound - self.new_in)[: self.page_count]
        strongest = linked_before >= np.quantile(linked_before, 0.75)
        weakest = linked_before <= np.quantile(linked_before, 0.25)
        # the least linked pages take likely links from a lower bar, where the links are known (the crawl's
        # in-link counts, menus included, say too little of which pages need them)
        known = self.site.counted_inlinks is None
        # pages in striking distance (Search Console) too, whatever their links, with a full quota
        priority = self.site.priority if self.site.priority is not None else np.zeros(self.page_count, bool)
        self.quota[priority] = np.maximum(self.quota[priority], self.options.max_inlinks)
        strongest &= ~priority
        bar = np.where((weakest & known) | priority, WEAKEST_BAR, 1.0) * self.options.min_probability
        candidates = self.site.candidates
        ordered = candidates.filter(
            (pl.col("score") >= pl.Series(bar[candidates["target"].to_numpy()], dtype=pl.Float64))
            & pl.col("provenance").str.contains(RELATED_EVIDENCE)
            & (pl.col("tied") | pl.col("provenance").str.contains("mention"))
            & ~pl.Series(self.utility[candidates["target"].to_numpy()], dtype=pl.Boolean)
        )
        # links into the topics linked under the site's median go first, where sources' budgets compete
        under = pl.Series(weak_topics(linked_before, self.site.cluster)[ordered["target"].to_numpy()])
        ordered = ordered.with_columns(under.alias("weak_topic")).sort(
            ["weak_topic", "score", "source", "target"], descending=[True, True, False, False]
        )
        rows = ordered.select("source", "target", "score", "provenance").rows()

        def fill(cap: int) -> None:
            for beyond_quota in (False, True):
                for source, target, score, provenance in rows:
                    if (
                        self.out_budget[source] > 0
                        and self.new_in[target] < cap
                        and (beyond_quota or self.contextual_in[target] < self.quota[target])
                        and not (beyond_quota and strongest[target] and "mention" not in provenance)
                    ):
                        self.add(source, target, "topical", score, provenance)

        fill(len(rows) + 1)
        cap = max(2, int(self.options.max_target_share * len(self.links)))
        if (self.new_in > cap).any():
            self.drop_topical_past(cap)
            fill(cap)


def weak_topics(inlinks: np.ndarray, cluster: np.ndarray) -> np.ndarray:
    """Whether each page's topic is linked under the site's median: its pages' median in-links below the
    site's (pages of no topic: never)."""
    site_median = float(np.median(inlinks)) if len(inlinks) else 0.0
    weak = np.zeros(len(inlinks), dtype=bool)
    for topic in np.unique(cluster[cluster >= 0]):
        members = cluster == topic
        weak[members] = float(np.median(inlinks[members])) < site_median
    return weak


def plan_links(site: SiteGraph, options: PlanOptions | None = None) -> tuple[pl.DataFrame, Planner]:
    """The planned links (source, target indices, reason, score, evidence, placement) and the planner."""
    options = options or PlanOptions()
    check_options(options)
    planner = Planner(site, options)
    planner.run()
    depth = click_depth(planner.current_graph(), site.home)[: planner.page_count]
    # a page left alone is said apart (a near-duplicate a topical link reached is not left out)
    planner.duplicate_of[planner.inbound[: planner.page_count] > 0] = -1
    left = ~planner.left_alone
    planner.stats.unreachable_after = int(((depth == UNREACHABLE) & left).sum())
    planner.stats.too_deep_after = int(((depth > options.max_depth) & left).sum())
    planner.left_for_editor = editor_tasks(planner)
    frame = planned_frame(planner.links)
    return frame, planner
