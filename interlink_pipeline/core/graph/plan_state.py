"""The plan as it grows: its links so far, each page's out-link budget left and in-links, and the pages most
related to each page. The planner's steps (planner.py, structure.py) add links through it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import polars as pl
from scipy import sparse

from interlink_pipeline.core.graph.centrality import KeptCentrality
from interlink_pipeline.core.graph.link_evidence import structurally_related, with_shares
from interlink_pipeline.core.graph.metrics import adjacency
from interlink_pipeline.core.graph.plan_options import PlanOptions, link_room
from interlink_pipeline.core.ingest.site_sections import SiteSections
from interlink_pipeline.core.relevance.url_tree import UrlTree


class PlannedLink(NamedTuple):
    """One link of the plan: page indices, why it is planned, its score, the evidence, where it goes."""

    source: int
    target: int
    reason: str
    score: float
    evidence: str
    placement: str  # "home" (the home page's hub links), "listing" (an index's list) or "contextual"
    alternatives: tuple[int, ...] = ()  # a structural link's next best sources, best first (up to three)


PLANNED_SCHEMA = {
    "source": pl.Int64,
    "target": pl.Int64,
    "reason": pl.String,
    "score": pl.Float32,
    "evidence": pl.String,
    "placement": pl.String,
    "alternatives": pl.List(pl.Int64),
}


def planned_frame(links: list) -> pl.DataFrame:
    """PlannedLink rows as a frame (page indices)."""
    return pl.DataFrame(links, schema=PLANNED_SCHEMA, orient="row")


@dataclass
class PlanStats:
    centrality: str = ""
    near_duplicate_search: str = ""  # how the orphans' near-duplicates were searched (structure.py)
    seconds: dict[str, float] = field(default_factory=dict)
    unresolved_orphans: list[str] = field(default_factory=list)  # page ids
    unreachable_after: int = 0
    too_deep_after: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class SiteGraph:
    """Everything the plan works on. Kept pages are nodes 0..n-1; other crawled URLs that appear in the
    existing links (paginated listings, parameter URLs, noindex pages) are pass-through nodes n..nodes-1:
    they carry click paths but are never linked to or from by the plan."""

    page_ids: np.ndarray
    home: int
    cluster: np.ndarray  # cluster id per page (-1 when unknown)
    # source, target (page indices), score (the ranker's probability), provenance, and `tied`: whether the
    # site's own links tie the pair (sensible_candidates; true when not given)
    candidates: pl.DataFrame
    similar: pl.DataFrame  # a, b (page indices), score — symmetric: both directions listed
    existing: pl.DataFrame  # source, target (node indices), content (bool)
    nodes: int = 0  # pages + pass-through nodes (0: pages only)
    vectors: np.ndarray | None = None
    sections: SiteSections = field(default_factory=SiteSections.empty)
    # the last plan's links to keep (source, target page indices, reason, score, evidence, placement,
    # alternatives), in the order they were planned; kept first, before any new link
    kept: pl.DataFrame | None = None
    # links editors accepted (the columns of `kept`), placed before all others, and the pairs they rejected,
    # never planned (see decided_links.py)
    accepted: pl.DataFrame | None = None
    rejected: frozenset[tuple[int, int]] = frozenset()
    kept_centrality: KeptCentrality | None = None  # the last run's sampled estimate, reused while it holds
    # each page's in-links as the crawl counted them, when that is all that is known of the existing links
    # (`existing` then only carries the crawl's click depths)
    counted_inlinks: np.ndarray | None = None
    tree: UrlTree | None = None  # the pages' URL tree (None: every page a leaf of the home page)
    utility: np.ndarray | None = None  # pages that never take a planned link (about, contact, cart, …)
    generated: np.ndarray | None = None  # pages a generator writes: never a planned link's source
    priority: np.ndarray | None = None  # pages in striking distance by the Search Console export
    # pages an editor has decided links on (review_queue.py): they take new_links_per_reviewed_page new
    # links at most, those of the last plan already there at the page's last review (`settled`) not counted
    reviewed: np.ndarray | None = None
    settled: frozenset[tuple[int, int]] = frozenset()

    def __post_init__(self) -> None:
        self.nodes = max(self.nodes, len(self.page_ids))
        if "tied" not in self.candidates.columns:
            self.candidates = self.candidates.with_columns(pl.lit(True).alias("tied"))


class PlanState:
    """The links planned so far on top of the site's own, and what each page has left to give and take."""

    def __init__(self, site: SiteGraph, options: PlanOptions):
        self.site = site
        self.options = options
        self.page_count = len(site.page_ids)
        self.node_count = site.nodes
        existing = site.existing
        # a link in the body is what the plan adds: one that exists only in navigation may be added too
        content = existing.filter(pl.col("content"))
        self.exists = set(zip(content["source"].to_list(), content["target"].to_list(), strict=True))
        content_out = np.bincount(content["source"].to_numpy(), minlength=self.node_count)
        self.content_out = content_out  # each page's existing in-content links
        # pass-through nodes are never linked from
        self.room = link_room(content_out[: self.page_count], site.sections, options)
        self.out_budget = np.zeros(self.node_count, dtype=np.int64)
        self.out_budget[: self.page_count] = self.room.left(content_out[: self.page_count])
        # about, contact, cart (no editor links from them, nor to them in content) and a generator's pages
        # (a link added there is lost at the next build): never a link's source
        none = np.zeros(self.page_count, dtype=bool)
        self.utility = site.utility if site.utility is not None else none
        self.generated = site.generated if site.generated is not None else none
        self.out_budget[: self.page_count][self.utility | self.generated] = 0
        self.reviewed = site.reviewed if site.reviewed is not None else none
        unbounded = np.iinfo(np.int64).max
        self.review_room = np.where(self.reviewed, options.new_links_per_reviewed_page, unbounded)
        self.held_back: set[tuple[int, int]] = set()  # refused: their reviewed page had its new links
        hub_room = 0 if self.generated[site.home] else options.hub_links - int(content_out[site.home])
        self.hub_budget = max(0, hub_room)
        # the home page is its URL children's section index while they fit its hub links (with flat URLs,
        # every page's parent, it heads no section)
        children = int((site.tree.parent == site.home).sum()) if site.tree is not None else 0
        self.home_lists_children = 0 < children <= options.hub_links
        self.inbound = np.bincount(existing["target"].to_numpy(), minlength=self.node_count).astype(np.int64)
        # quotas count in-content links only: a sitewide menu link does not make a page well linked
        self.contextual_in = np.bincount(content["target"].to_numpy(), minlength=self.node_count).astype(
            np.int64
        )
        self.links: list[PlannedLink] = []
        self.planned: set[tuple[int, int]] = set()
        self.planned_sources: list[int] = []
        self.planned_targets: list[int] = []
        self.is_index = self._index_pages()
        self.orphans_before = np.flatnonzero(self.inbound[: self.page_count] == 0)
        self.new_in = np.zeros(self.node_count, dtype=np.int64)  # links the plan adds into each page
        # an orphan left unlinked because it says what another orphan, rescued, says (-1: none)
        self.duplicate_of = np.full(self.page_count, -1, dtype=np.int64)
        self.neighbours = self._neighbour_lists()
        # pages the plan leaves for an editor, and why (left_for_editor.EditorTask; set by plan_links)
        self.left_for_editor: dict = {}
        self.stats = PlanStats()
        self.kept_centrality: KeptCentrality | None = None  # set by run: the estimate for the next run
        self.refused: dict[tuple[int, int], str] = {}  # links of the last plan not kept, and why
        self.accepted_pairs: set[tuple[int, int]] = set()  # links editors accepted, placed whatever the room

    def _index_pages(self) -> np.ndarray:
        """Index pages list their members: menu parents, first pages of paginated listings, and pages whose
        content already links more pages than listing_links or out_link_budget, whichever is fewer (a
        category's product list; on a link-rich site, than nine in ten of its pages do too). A structural
        link may join an index's list beyond its budget when the index is a likely place for it or the
        target's own section index. Never a utility page or a generator's."""
        content_out, options = self.content_out[: self.page_count], self.options
        is_index = np.zeros(self.node_count, dtype=bool)
        is_index[self.site.sections.indexes] = True
        listing = min(options.listing_links, options.out_link_budget)
        if self.room.rule != "total":
            listing = max(listing, float(np.quantile(content_out, 0.9)))
        is_index[: self.page_count] |= content_out > listing
        is_index[: self.page_count][self.utility | self.generated] = False
        return is_index

    def _neighbour_lists(self) -> list[tuple[np.ndarray, np.ndarray, tuple[str, ...]]]:
        """For each page, the pages that may give it a structural link: its `structural_sources` most
        probable candidate sources with evidence that both pages are about the same thing, at
        min_probability or more or holding that share of its candidates' probabilities
        (link_evidence.structurally_related), best first (pages, scores, origins)."""
        related = (
            with_shares(self.site.candidates)
            .filter(structurally_related(self.options.min_probability))
            .select(pl.col("target").alias("page"), pl.col("source").alias("other"), "score", "provenance")
            .sort(["page", "score", "other"], descending=[False, True, False])
            .group_by("page", maintain_order=True)
            .head(self.options.structural_sources)
            .group_by("page", maintain_order=True)
            .agg("other", "score", "provenance")
        )
        empty = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32), ())
        lists: list[tuple[np.ndarray, np.ndarray, tuple[str, ...]]] = [empty] * self.page_count
        for page, others, scores, provenance in related.iter_rows():
            lists[page] = (
                np.asarray(others, dtype=np.int64),
                np.asarray(scores, dtype=np.float32),
                tuple(provenance),
            )
        return lists

    def is_new(self, source: int, target: int) -> bool:
        """A link the page does not have yet, neither on the site (in content) nor in the plan, and that no
        editor rejected."""
        pair = (source, target)
        return (
            source != target
            and pair not in self.exists
            and pair not in self.planned
            and pair not in self.site.rejected
        )

    def add(
        self,
        source: int,
        target: int,
        reason: str,
        score: float,
        evidence: str,
        home: bool = False,
        alternatives: tuple[int, ...] = (),
        listing: bool = False,
        accepted: bool = False,
    ) -> bool:
        """Add a link if it is new and its place has room: the home page's hub budget (`home`), an index
        page's list (`listing`: no budget), else the source's in-content budget. A link an editor
        `accepted` is added whatever room is left (it uses up what there is): the editor decided to
        publish it. A page an editor reviewed takes new_links_per_reviewed_page new links at most (the
        others are held back: waiting_for_review)."""
        if not self.is_new(source, target):
            return False
        if listing and not self.is_index[source]:  # no longer an index: in-content, for an accepted link
            if not accepted:
                return False
            listing = False
        if not accepted and (self.hub_budget <= 0 if home else not listing and self.out_budget[source] <= 0):
            return False
        new_on_reviewed = self.new_on_reviewed(source, target, accepted)
        if new_on_reviewed and self.review_room[source] <= 0:
            self.held_back.add((source, target))
            return False
        if new_on_reviewed:
            self.review_room[source] -= 1
        if home:
            self.hub_budget = max(0, self.hub_budget - 1)
        elif not listing:
            self.out_budget[source] = max(0, self.out_budget[source] - 1)
        if accepted:
            self.accepted_pairs.add((source, target))
        self.planned.add((source, target))
        self.planned_sources.append(source)
        self.planned_targets.append(target)
        self.inbound[target] += 1
        self.contextual_in[target] += 1
        self.new_in[target] += 1
        placement = "home" if home else "listing" if listing else "contextual"
        self.links.append(
            PlannedLink(source, target, reason, float(score), evidence, placement, alternatives)
        )
        return True

    def new_on_reviewed(self, source: int, target: int, accepted: bool) -> bool:
        """A link its editor has not seen on a page they reviewed: neither accepted nor settled there."""
        return not accepted and bool(self.reviewed[source]) and (source, target) not in self.site.settled

    @property
    def waiting_for_review(self) -> int:
        """Links held back because their reviewed page had its new links (none of them planned since)."""
        return len(self.held_back - self.planned)

    def drop_topical_past(self, cap: int) -> set[tuple[int, int]]:
        """Take out each target's least probable topical links past `cap` new in-links (its structural
        links and those editors accepted stay), giving their sources' budgets back; the pairs taken out."""
        taken = Counter(link.target for link in self.links if link.reason != "topical")
        ranked = sorted(
            (i for i, link in enumerate(self.links) if link.reason == "topical"),
            key=lambda i: (-self.links[i].score, i),
        )
        dropped = set()
        for i in ranked:  # links editors accepted stay, and count
            link = self.links[i]
            taken[link.target] += 1
            if taken[link.target] > cap and (link.source, link.target) not in self.accepted_pairs:
                dropped.add((link.source, link.target))
        self.remove(dropped)
        return dropped

    def remove(self, pairs: set[tuple[int, int]]) -> None:
        """Take these planned links out, giving their places' room back."""
        if not pairs:
            return
        for link in self.links:
            if (link.source, link.target) not in pairs:
                continue
            self.planned.discard((link.source, link.target))
            accepted = (link.source, link.target) in self.accepted_pairs
            if self.new_on_reviewed(link.source, link.target, accepted):
                self.review_room[link.source] += 1
            if link.placement == "home":
                self.hub_budget += 1
            elif link.placement == "contextual":
                self.out_budget[link.source] += 1
            self.inbound[link.target] -= 1
            self.contextual_in[link.target] -= 1
            self.new_in[link.target] -= 1
        self.links = [link for link in self.links if (link.source, link.target) not in pairs]
        self.planned_sources = [link.source for link in self.links]
        self.planned_targets = [link.target for link in self.links]

    @property
    def left_alone(self) -> np.ndarray:
        """The pages the structure steps leave unlinked on purpose: utility pages and near-duplicate
        orphans."""
        return self.utility | (self.duplicate_of >= 0)

    def current_graph(self) -> sparse.csr_matrix:
        """The existing links plus the plan so far."""
        sources = np.concatenate([self.site.existing["source"].to_numpy(), np.asarray(self.planned_sources)])
        targets = np.concatenate([self.site.existing["target"].to_numpy(), np.asarray(self.planned_targets)])
        return adjacency(self.node_count, sources.astype(np.int64), targets.astype(np.int64))
