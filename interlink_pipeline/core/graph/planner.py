"""The planner: which page should link to which, built on the link graph (after Omio's "Link Pie").

Steps, each adding links only where the source page has spare out-link budget and the link does not exist:

1. **Centrality.** Betweenness on the relatedness graph (link candidates and similar pairs, undirected):
   pages that sit between topics. Exact below `exact_centrality_below` pages, sampled above; a sampled
   estimate is reused on a re-crawl while at most `recompute_centrality_above` of the graph's edges changed.
2. **Hubs** (`hub`, placed on the home page): the site's main sections (the top level of its menu), then
   the most central page of each of the largest topic clusters, then the most central pages overall, up
   to `hub_links`.
   **Sections** (`section`): each section index links the pages its menu lists under it, up to
   `section_links` (the site's own menu declares the section; editors link an index to its members).
3. **Structure** (`orphan-rescue`, `component-bridge`, `depth-shortcut`): level by level, the shallowest
   pages with budget link the too-deep or unreachable pages (most out-links first, one per cut-off group),
   each from its most related page at that level, until every page is within `max_depth` clicks or no
   page within `max_depth - 1` clicks has budget left. Orphans and cut-off groups left then get a link from
   their most related page anywhere (see structure.py).
4. **Topical links** (`topical`): candidates best first, while the target is under its in-content quota
   (from `min_inlinks` for the least central pages to `max_inlinks` for the most).

Structure comes before topical links so that the shallow pages' budgets build a wide, shallow tree. Related
pages come from the similarity pairs and candidates first, then from an exact search over the vectors.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import polars as pl
from scipy import sparse

from interlink_pipeline.core.graph.centrality import KeptCentrality, centrality, relatedness_edges
from interlink_pipeline.core.graph.metrics import UNREACHABLE, adjacency, click_depth
from interlink_pipeline.core.graph.plan_options import PlanOptions, check_options, out_link_budgets
from interlink_pipeline.core.graph.site_sections import SiteSections
from interlink_pipeline.core.graph.structure import bridge_components, rescue_orphans, shorten_depth

# each reason as a person reads it (the report's plan table)
REASON_WORDS = {
    "hub": "hub: linked from the home page",
    "section": "section: the menu lists it here",
    "topical": "topical: the site's editors would link it",
    "orphan-rescue": "orphan rescue: nothing linked to it",
    "component-bridge": "bridge: no path from home reached it",
    "depth-shortcut": "depth shortcut: it was too deep",
}


@dataclass
class PlanStats:
    centrality: str = ""
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
    candidates: pl.DataFrame  # source, target (page indices), score (the ranker's probability), provenance
    similar: pl.DataFrame  # a, b (page indices), score — symmetric: both directions listed
    existing: pl.DataFrame  # source, target (node indices), content (bool)
    nodes: int = 0  # pages + pass-through nodes (0: pages only)
    vectors: np.ndarray | None = None
    sections: SiteSections = field(default_factory=SiteSections.empty)
    # the last plan's links to keep (source, target page indices, reason, score, evidence, placement),
    # in the order they were planned; kept first, before any new link
    kept: pl.DataFrame | None = None
    kept_centrality: KeptCentrality | None = None  # the last run's sampled estimate, reused while it holds

    def __post_init__(self) -> None:
        self.nodes = max(self.nodes, len(self.page_ids))


class Planner:
    def __init__(self, site: SiteGraph, options: PlanOptions):
        self.g = site
        self.o = options
        self.n = len(site.page_ids)
        self.nodes = site.nodes
        existing = site.existing
        # a link in the body is what the plan adds: one that exists only in navigation may be added too
        content = existing.filter(pl.col("content"))
        self.exists = set(zip(content["source"].to_list(), content["target"].to_list(), strict=True))
        content_out = np.bincount(
            existing.filter(pl.col("content"))["source"].to_numpy(), minlength=self.nodes
        )
        self.budget = np.zeros(self.nodes, dtype=np.int64)  # pass-through nodes are never linked from
        self.budget[: self.n] = np.maximum(
            0, out_link_budgets(self.n, site.sections, options) - content_out[: self.n]
        )
        self.hub_budget = max(0, options.hub_links - int(content_out[site.home]))
        self.inbound = np.bincount(existing["target"].to_numpy(), minlength=self.nodes).astype(np.int64)
        # quotas count in-content links only: a sitewide menu link does not make a page well linked
        self.contextual_in = np.bincount(
            existing.filter(pl.col("content"))["target"].to_numpy(), minlength=self.nodes
        ).astype(np.int64)
        self.links: list[
            tuple[int, int, str, float, str, str]
        ] = []  # source, target, reason, score, evidence, place
        self.planned: set[tuple[int, int]] = set()
        self.planned_sources: list[int] = []
        self.planned_targets: list[int] = []
        self.neighbours = self._neighbour_lists()
        self.stats = PlanStats()
        self.kept_centrality: KeptCentrality | None = None  # set by run: the estimate for the next run
        self.refused: dict[tuple[int, int], str] = {}  # links of the last plan not kept, and why

    def _neighbour_lists(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each page, the pages most likely to link to it: its candidate sources by the ranker's
        probability first, then its similar pages by cosine (scored below every candidate)."""
        candidates = self.g.candidates.select(
            pl.col("target").alias("page"), pl.col("source").alias("other"), "score", pl.lit(0).alias("tier")
        )
        similar = self.g.similar.select(
            pl.col("a").alias("page"), pl.col("b").alias("other"), "score", pl.lit(1).alias("tier")
        )
        related = (
            pl.concat([candidates, similar.join(candidates, on=["page", "other"], how="anti")])
            .sort(["page", "tier", "score", "other"], descending=[False, False, True, False])
            .select("page", "other", "score")
        )
        empty = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32))
        lists = [empty] * self.n
        for page, others, scores in (
            related.group_by("page", maintain_order=True).agg("other", "score").iter_rows()
        ):
            lists[page] = (np.asarray(others, dtype=np.int64), np.asarray(scores, dtype=np.float32))
        return lists

    def is_new(self, source: int, target: int) -> bool:
        """A link the page does not have yet, neither on the site (in content) nor in the plan."""
        return (
            source != target and (source, target) not in self.exists and (source, target) not in self.planned
        )

    def add(
        self, source: int, target: int, reason: str, score: float, evidence: str, home: bool = False
    ) -> bool:
        if not self.is_new(source, target):
            return False
        if home:
            if self.hub_budget <= 0:
                return False
            self.hub_budget -= 1
        else:
            if self.budget[source] <= 0:
                return False
            self.budget[source] -= 1
        self.planned.add((source, target))
        self.planned_sources.append(source)
        self.planned_targets.append(target)
        self.inbound[target] += 1
        self.contextual_in[target] += 1
        self.links.append((source, target, reason, float(score), evidence, "home" if home else "contextual"))
        return True

    def graph(self) -> sparse.csr_matrix:
        """The existing links plus the plan so far."""
        sources = np.concatenate([self.g.existing["source"].to_numpy(), np.asarray(self.planned_sources)])
        targets = np.concatenate([self.g.existing["target"].to_numpy(), np.asarray(self.planned_targets)])
        return adjacency(self.nodes, sources.astype(np.int64), targets.astype(np.int64))

    def run(self) -> None:
        o, g = self.o, self.g
        started = time.monotonic()
        self.centrality, self.stats.centrality, self.kept_centrality = centrality(
            g.page_ids, relatedness_edges(g.similar, g.candidates), o, g.kept_centrality
        )
        self.stats.seconds["centrality"] = time.monotonic() - started
        quantile = np.argsort(np.argsort(self.centrality, kind="stable"), kind="stable") / max(1, self.n - 1)
        self.quota = (o.min_inlinks + np.round(quantile * (o.max_inlinks - o.min_inlinks))).astype(np.int64)
        self.hubs = self._choose_hubs()
        self._keep_previous()
        # Structure first, while the shallow pages still have budget: every page within max_depth clicks
        # (unreachable ones included), then orphans and any group still cut off, then topical links with
        # the budgets left.
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
        """The last plan's still-valid links, first: the new plan only adds what the change needs."""
        if self.g.kept is None:
            return
        for source, target, reason, score, evidence, placement in self.g.kept.iter_rows():
            home = placement == "home"
            if (source, target) in self.exists:
                self.refused[(source, target)] = "now on the site"
            elif not self.add(source, target, reason, score, evidence, home=home):
                self.refused[(source, target)] = "no link budget left on the source"

    def _choose_hubs(self) -> list[int]:
        order = [int(i) for i in np.argsort(-self.centrality, kind="stable") if i != self.g.home]
        sizes = (
            np.bincount(self.g.cluster[self.g.cluster >= 0]) if (self.g.cluster >= 0).any() else np.array([])
        )
        best_per_cluster: dict[int, int] = {}
        for page in order:
            cluster = int(self.g.cluster[page])
            if cluster >= 0 and cluster not in best_per_cluster:
                best_per_cluster[cluster] = page
        by_size = sorted(best_per_cluster, key=lambda c: -sizes[c])
        main = [int(p) for p in self.g.sections.main_sections if p != self.g.home]
        hubs = list(dict.fromkeys([*main, *(best_per_cluster[c] for c in by_size)]))
        chosen = set(hubs)
        hubs += [p for p in order if p not in chosen]
        return hubs[: self.o.hub_links]

    def _link_hubs(self) -> None:
        home = self.g.home
        for hub in self.hubs:
            self.add(home, hub, "hub", float(self.centrality[hub]), "centrality", home=True)

    def _link_sections(self) -> None:
        """Each menu parent links the pages listed under it, the most probable first."""
        pairs = (
            self.g.sections.pairs()
            .join(self.g.candidates.select("source", "target", "score"), on=["source", "target"], how="left")
            .with_columns(pl.col("score").fill_null(0.0))
            .sort(["source", "score", "target"], descending=[False, True, False])
        )
        for index, member, score in pairs.iter_rows():
            self.add(index, member, "section", score, "menu")

    def _topical(self) -> None:
        """The most probable candidates, best first, within the sources' budgets: first up to each target's
        in-link quota, then (quotas are soft) beyond it. Nothing under min_probability is added."""
        ordered = self.g.candidates.filter(pl.col("score") >= self.o.min_probability).sort(
            ["score", "source", "target"], descending=[True, False, False]
        )
        rows = ordered.select("source", "target", "score", "provenance").rows()
        for within_quota in (True, False):
            for source, target, score, provenance in rows:
                if self.budget[source] > 0 and (
                    not within_quota or self.contextual_in[target] < self.quota[target]
                ):
                    self.add(source, target, "topical", score, provenance)


def plan_links(site: SiteGraph, options: PlanOptions | None = None) -> tuple[pl.DataFrame, Planner]:
    """The planned links (source, target indices, reason, score, evidence, placement) and the planner."""
    options = options or PlanOptions()
    check_options(options)
    planner = Planner(site, options)
    planner.run()
    depth = click_depth(planner.graph(), site.home)[: planner.n]
    planner.stats.unreachable_after = int((depth == UNREACHABLE).sum())
    planner.stats.too_deep_after = int((depth > options.max_depth).sum())
    frame = pl.DataFrame(
        planner.links,
        schema={
            "source": pl.Int64,
            "target": pl.Int64,
            "reason": pl.String,
            "score": pl.Float32,
            "evidence": pl.String,
            "placement": pl.String,
        },
        orient="row",
    )
    return frame, planner
