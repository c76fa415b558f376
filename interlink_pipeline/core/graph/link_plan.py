"""The link plan: which page should link to which, built on the link graph (after Omio's "Link Pie").

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
   their most related page anywhere.
4. **Topical links** (`topical`): candidates best first, while the target is under its in-content quota
   (from `min_inlinks` for the least central pages to `max_inlinks` for the most).

Structure comes before topical links so that the shallow pages' budgets build a wide, shallow tree. Related
pages come from the similarity pairs and candidates first, then from an exact search over the vectors.
Anchors vary per link to the same target: the target's H1, its title, and its topic's phrases, kept short.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from scipy import sparse
from scipy.sparse import csgraph

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.graph.link_candidates import LinkGraph, followed_hyperlinks
from interlink_pipeline.core.graph.metrics import UNREACHABLE, adjacency, click_depth, out_degree
from interlink_pipeline.core.graph.site_sections import SiteSections
from interlink_pipeline.core.ml.exact_search import exact_top
from interlink_pipeline.core.sorted_sets import differing_count, sorted_unique

REASONS = ("hub", "section", "topical", "orphan-rescue", "component-bridge", "depth-shortcut")


@dataclass(frozen=True)
class PlanOptions:
    """Every field is a `link_plan` config setting of the same name."""

    out_link_budget: int = 10  # contextual (in-content) links per page, existing ones included
    hub_links: int = 20  # links from the home page to hubs, existing ones included
    section_links: int = 20  # in-content links of a section index (menu parent, listing), existing included
    min_inlinks: int = 1
    max_inlinks: int = 20
    max_depth: int = 4
    exact_centrality_below: int = 5_000
    centrality_samples: int = 512
    recompute_centrality_above: float = 0.05  # share of relatedness edges changed since a kept estimate
    anchor_max_words: int = 6  # anchors are whole phrases of at most this many words
    anchor_max_targets: int = 1  # an anchor text points at no more targets than this across the site
    min_probability: float = 0.1  # topical links less likely than this are never added to fill a budget
    keep_previous: bool = True  # keep the last plan's links that are still valid (a stable plan)


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


def existing_links(links: pl.DataFrame, url_keys: pl.Series) -> tuple[pl.DataFrame, int]:
    """Followed hyperlinks as (source, target, content) node edges, and the number of nodes.

    Kept pages (`url_keys`, in order) are nodes 0..n-1; any other URL the links mention gets a node after
    them. `content` is false for links in headers, footers, navigation and sidebars.
    """
    from interlink_pipeline.core.urls import url_parts

    n = len(url_keys)
    empty = pl.DataFrame(schema={"source": pl.Int64, "target": pl.Int64, "content": pl.Boolean})
    if links.is_empty():
        return empty, n
    hyperlinks = followed_hyperlinks(links)
    keyed = pl.DataFrame(
        {
            "source_key": url_parts(hyperlinks["source_url"])["url_key"],
            "target_key": url_parts(hyperlinks["target_url"])["url_key"],
            "content": hyperlinks["content"],
        }
    ).drop_nulls(["source_key", "target_key"])
    known = pl.DataFrame({"key": url_keys, "i": np.arange(n, dtype=np.int64)})
    others = (
        pl.concat([keyed["source_key"], keyed["target_key"]])
        .unique(maintain_order=True)
        .alias("key")
        .to_frame()
        .join(known, on="key", how="anti")
    )
    index = pl.concat(
        [known, others.with_columns(pl.int_range(n, n + others.height, dtype=pl.Int64).alias("i"))]
    )
    edges = keyed.join(index.rename({"key": "source_key", "i": "source"}), on="source_key").join(
        index.rename({"key": "target_key", "i": "target"}), on="target_key"
    )
    # a link present both in the content and in navigation counts as content
    edges = (
        edges.filter(pl.col("source") != pl.col("target"))
        .group_by("source", "target")
        .agg(pl.col("content").any())
        .sort("source", "target")
    )
    return edges, n + others.height


@dataclass(frozen=True)
class KeptCentrality:
    """A sampled centrality estimate and the graph it was measured on, for the next run to reuse."""

    page_ids: np.ndarray
    scores: np.ndarray
    method: str
    edges: np.ndarray  # sorted hashes of the relatedness graph's undirected edges, by page id
    samples: int


def relatedness_edges(similar: pl.DataFrame, candidates: pl.DataFrame) -> pl.DataFrame:
    """The undirected relatedness graph (u < v page indices), sorted: similar pairs and link candidates."""
    both = pl.concat(
        [
            similar.select("a", "b"),
            candidates.select(pl.col("source").alias("a"), pl.col("target").alias("b")),
        ]
    )
    return (
        both.select(pl.min_horizontal("a", "b").alias("u"), pl.max_horizontal("a", "b").alias("v"))
        .unique()
        .sort("u", "v")
    )


def edge_hashes(page_ids: np.ndarray, pairs: pl.DataFrame) -> np.ndarray:
    """A sorted hash per undirected edge, by its pages' ids: the same edge hashes alike whatever the
    pages' positions, so two runs' graphs compare."""
    by_page = pl.Series(page_ids).cast(pl.String).hash(seed=29).to_numpy()
    low, high = by_page[pairs["u"].to_numpy()], by_page[pairs["v"].to_numpy()]
    lo, hi = np.minimum(low, high), np.maximum(low, high)  # by id, not by position
    with np.errstate(over="ignore"):
        return sorted_unique(lo * np.uint64(0x9E3779B97F4A7C15) + hi)


def betweenness(n: int, pairs: pl.DataFrame, options: PlanOptions) -> tuple[np.ndarray, str]:
    """Betweenness centrality of the undirected graph `pairs` (exact, or sampled on large graphs)."""
    import networkit as nk

    graph = nk.Graph(n, weighted=False, directed=False)
    graph.addEdges((pairs["u"].to_numpy().astype(np.uint64), pairs["v"].to_numpy().astype(np.uint64)))
    if n < options.exact_centrality_below:
        algorithm = nk.centrality.Betweenness(graph, normalized=True)
        method = "exact betweenness"
    else:
        samples = min(options.centrality_samples, n)
        nk.engineering.setSeed(0, False)  # the same graph gives the same sample, so the same plan
        algorithm = nk.centrality.EstimateBetweenness(graph, samples, normalized=True, parallel=True)
        method = f"betweenness estimated from {samples} sampled sources"
    algorithm.run()
    # rounded: threads sum in varying order, and the last bits must not reorder pages between runs;
    # normalising divides by (n-1)(n-2), so graphs of one or two pages give NaN: no page is between others
    scores = np.nan_to_num(np.asarray(algorithm.scores(), dtype=np.float64), nan=0.0)
    return np.round(scores, 12), method


def _changed_share(before: np.ndarray, now: np.ndarray) -> float:
    """The share of edges in one of two sorted, unique hash arrays but not the other (of all edges)."""
    differing = differing_count(before, now)
    return differing / max(1, (len(before) + len(now) + differing) // 2)  # of the union


def centrality(
    page_ids: np.ndarray, pairs: pl.DataFrame, options: PlanOptions, kept: KeptCentrality | None
) -> tuple[np.ndarray, str, KeptCentrality | None]:
    """Each page's betweenness, how it was had, and the estimate to keep for the next run (None when
    exact: exact scores are cheap below `exact_centrality_below` pages and are always measured).

    A kept sampled estimate is reused while at most `recompute_centrality_above` of the edges changed
    since it was measured: sampling already moves the scores more than such a change does. Pages new
    since then score 0 (the least central); removed ones are dropped."""
    n = len(page_ids)
    if n < options.exact_centrality_below:
        scores, method = betweenness(n, pairs, options)
        return scores, method, None
    edges = edge_hashes(page_ids, pairs)
    samples = min(options.centrality_samples, n)
    if kept is not None and kept.samples == samples:
        changed = _changed_share(kept.edges, edges)
        if changed <= options.recompute_centrality_above:
            scores = (
                pl.DataFrame({"page_id": page_ids})
                .join(
                    pl.DataFrame({"page_id": kept.page_ids, "score": kept.scores}),
                    on="page_id",
                    how="left",
                    maintain_order="left",
                )["score"]
                .fill_null(0.0)
                .to_numpy()
            )
            limit = options.recompute_centrality_above
            return scores, f"{kept.method}, reused: {changed:.1%} of edges changed (limit {limit:.0%})", kept
        reason = f"recomputed: {changed:.1%} of relatedness edges changed since the last estimate"
    else:
        reason = "no estimate kept" if kept is None else "sample size changed"
    scores, method = betweenness(n, pairs, options)
    return scores, f"{method} ({reason})", KeptCentrality(page_ids.copy(), scores, method, edges, samples)


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

    def add(
        self, source: int, target: int, reason: str, score: float, evidence: str, home: bool = False
    ) -> bool:
        if source == target or (source, target) in self.exists or (source, target) in self.planned:
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

    def _open(self, source: int, target: int) -> bool:
        return (
            source != target and (source, target) not in self.exists and (source, target) not in self.planned
        )

    def _nearest_sources(
        self, targets: list[int], eligible: np.ndarray
    ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """The nearest eligible pages with budget for each target, by one blocked vector search."""
        pool = np.flatnonzero(eligible[: self.n] & (self.budget[: self.n] > 0))
        if self.g.vectors is None or not targets or not len(pool):
            return {}
        idx, scores = exact_top(self.g.vectors[targets], self.g.vectors[pool], min(50, len(pool)))
        return {t: (pool[idx[row]], scores[row]) for row, t in enumerate(targets)}

    def _link_first_open(
        self, target: int, others: np.ndarray, scores: np.ndarray, eligible: np.ndarray, reason: str
    ) -> bool:
        """Link target from the first of `others` (best first) that is eligible, has budget, no link yet."""
        for other, score in zip(others.tolist(), scores.tolist(), strict=True):
            if eligible[other] and self.budget[other] > 0 and self._open(other, target):
                return self.add(other, target, reason, score, "semantic")
        return False

    def link_from_related(
        self, targets: np.ndarray, eligible: np.ndarray, reason: str | Mapping[int, str]
    ) -> list[int]:
        """Give each target, in order, one link from its most related eligible page with budget left: its
        similar pages and candidates first, then (for the targets still unlinked) the nearest eligible pages
        by vector search. `reason` is one for all, or one per target. Returns the targets that found none."""

        def why(target: int) -> str:
            return reason if isinstance(reason, str) else reason[target]

        unlinked = [
            int(t)
            for t in targets
            if not self._link_first_open(int(t), *self.neighbours[int(t)], eligible, why(int(t)))
        ]
        nearest = self._nearest_sources(unlinked, eligible)
        return [
            t
            for t in unlinked
            if t not in nearest or not self._link_first_open(t, *nearest[t], eligible, why(t))
        ]

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
            ("depth", self._shorten_depth),
            ("orphans", self._rescue_orphans),
            ("bridges", self._bridge_components),
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

    def _rescue_orphans(self) -> None:
        order = np.argsort(-self.centrality, kind="stable")
        orphans = order[(self.inbound[: self.n][order] == 0) & (order != self.g.home)]
        missed = self.link_from_related(orphans, np.ones(self.n, dtype=bool), "orphan-rescue")
        self.stats.unresolved_orphans = [str(self.g.page_ids[p]) for p in missed]

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

    def _bridge_components(self) -> None:
        n = self.n
        for _ in range(50):
            graph = self.graph()
            depth = click_depth(graph, self.g.home)
            unreachable = np.flatnonzero(depth[:n] == UNREACHABLE)
            if not len(unreachable):
                return
            count, labels = csgraph.connected_components(
                graph[unreachable][:, unreachable], directed=True, connection="weak"
            )
            # each group enters through its most central page
            entries = np.array(
                [
                    unreachable[labels == c][np.argmax(self.centrality[unreachable[labels == c]])]
                    for c in range(count)
                ]
            )
            if len(self.link_from_related(entries, depth != UNREACHABLE, "component-bridge")) == len(entries):
                self.stats.notes.append(
                    f"{len(unreachable)} pages stay unreachable: no related reachable page has out-link "
                    "budget left (raise out_link_budget)"
                )
                return

    def _shorten_depth(self) -> None:
        """Bring every page within max_depth clicks, level by level: the shallowest pages with budget left
        link the too-deep or unreachable pages with the most out-links (then the most central), which then
        sit one click below them and pass links on in turn — the budgets build a wide, shallow tree rather
        than a single layer at the limit. A link to a page nobody linked is an orphan rescue; into a group
        cut off from the home page, a component bridge."""
        limit, n = self.o.max_depth, self.n
        unrelated = np.zeros(n, dtype=bool)  # givers none of the remaining too-deep pages relate to
        while True:
            graph = self.graph()
            depth = click_depth(graph, self.g.home)
            too_deep = np.flatnonzero((depth[:n] > limit) | (depth[:n] == UNREACHABLE))
            if not len(too_deep):
                return
            givers = np.flatnonzero(
                (depth[:n] >= 0) & (depth[:n] < limit) & (self.budget[:n] > 0) & ~unrelated
            )
            if not len(givers):
                self.stats.notes.append(
                    f"{len(too_deep)} pages stay deeper than {limit} clicks: no page within {limit - 1} "
                    "clicks has out-link budget left (raise out_link_budget or hub_links)"
                )
                return
            level = depth[givers].min()
            eligible = np.zeros(self.nodes, dtype=bool)
            eligible[givers[depth[givers] == level]] = True
            # at most as many targets as the level has budget to give: the rest wait for the next level
            capacity = int(self.budget[:n][eligible[:n]].sum())
            # pages that link to many others first: each one brought up brings its pages up a level too
            fan_out = out_degree(graph)[too_deep]
            ordered = too_deep[np.lexsort((-self.centrality[too_deep], -fan_out))]
            # one way into each group of unreachable pages: the others follow through its links
            cut_off = depth[ordered] == UNREACHABLE
            _, group = csgraph.connected_components(
                graph[ordered[cut_off]][:, ordered[cut_off]], directed=True, connection="weak"
            )
            entry = np.ones(len(ordered), dtype=bool)
            first_of_group = np.zeros(len(group), dtype=bool)
            first_of_group[np.unique(group, return_index=True)[1]] = True
            entry[cut_off] = first_of_group
            ordered = ordered[entry][: 2 * capacity]
            reasons = np.where(
                self.inbound[ordered] == 0,
                "orphan-rescue",
                np.where(depth[ordered] == UNREACHABLE, "component-bridge", "depth-shortcut"),
            )
            linked = len(self.links)
            self.link_from_related(
                ordered, eligible, dict(zip(ordered.tolist(), reasons.tolist(), strict=True))
            )
            if len(self.links) == linked:
                unrelated[eligible[:n]] = True


def without_hidden(existing: pl.DataFrame, hidden: pl.DataFrame, navigation: pl.DataFrame) -> pl.DataFrame:
    """Existing node edges with the `hidden` in-content pairs taken out: an edge that also exists in
    navigation (`navigation` pairs) stays, as a navigation link."""
    flagged = existing.join(
        hidden.select("source", "target").with_columns(pl.lit(True).alias("hidden")),
        on=["source", "target"],
        how="left",
    ).join(
        navigation.select("source", "target").unique().with_columns(pl.lit(True).alias("navigation")),
        on=["source", "target"],
        how="left",
    )
    hidden_edge = pl.col("hidden").fill_null(False)
    return (
        flagged.filter(~hidden_edge | pl.col("navigation").fill_null(False))
        .with_columns(pl.when(hidden_edge).then(False).otherwise(pl.col("content")).alias("content"))
        .select(existing.columns)
    )


def out_link_budgets(n: int, sections: SiteSections, options: PlanOptions) -> np.ndarray:
    """Each page's in-content out-links allowed, existing ones included: `out_link_budget`, and
    `section_links` for a section index (a menu parent or the first page of a paginated listing)."""
    budget = np.full(n, options.out_link_budget, dtype=np.int64)
    budget[sections.indexes] = max(options.out_link_budget, options.section_links)
    return budget


def plan_links(site: SiteGraph, options: PlanOptions | None = None) -> tuple[pl.DataFrame, Planner]:
    """The planned links (source, target indices, reason, score, evidence, placement) and the planner."""
    options = options or PlanOptions()
    o = options
    if min(o.out_link_budget, o.max_depth) < 1 or min(o.hub_links, o.section_links) < 0:
        raise InputError(
            "out_link_budget and max_depth must be at least 1, hub_links and section_links at least 0."
        )
    if not 0 <= options.min_inlinks <= options.max_inlinks:
        raise InputError("min_inlinks must be between 0 and max_inlinks.")
    if not 0 <= options.min_probability <= 1:
        raise InputError("min_probability must be between 0 and 1.")
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


# --- stability: what the last plan keeps, and what changed -----------------------------------------

PAGE_FINGERPRINT = ("url", "is_home", "title", "h1", "meta_description", "text_hash")
CHANGES = ("kept", "added", "removed")


def page_fingerprints(pages: pl.DataFrame) -> pl.Series:
    """A hash of what the plan reads of each page: a page whose fingerprint differs is planned anew."""
    return pages.select(
        pl.concat_str(
            [pl.col(c).cast(pl.String).fill_null("\x00") for c in PAGE_FINGERPRINT], separator="\x1f"
        )
        .hash(seed=17)
        .cast(pl.String)
        .alias("plan_fingerprint")
    ).to_series()


def links_to_keep(
    previous: pl.DataFrame, before: pl.DataFrame, now: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(links to keep, links dropped with why) of the last plan (`previous`: source_page_id,
    target_page_id, reason, score, evidence, placement), given each page's fingerprint then (`before`) and
    now (`now`: page_id, plan_fingerprint, i). A link is kept while both its pages stand unchanged; one
    whose page changed is decided anew (and often planned again), one whose page is gone is dropped."""
    fingerprints = now.join(before, on="page_id", how="left", suffix="_before").select(
        "page_id",
        "i",
        (pl.col("plan_fingerprint") == pl.col("plan_fingerprint_before")).fill_null(False).alias("same"),
    )
    joined = previous.with_row_index("order")
    for side in ("source", "target"):
        joined = joined.join(
            fingerprints.rename({"page_id": f"{side}_page_id", "i": side, "same": f"{side}_same"}),
            on=f"{side}_page_id",
            how="left",
            maintain_order="left",
        )
    why = (
        pl.when(pl.col("source").is_null() | pl.col("target").is_null())
        .then(pl.lit("page removed"))
        .when(~(pl.col("source_same") & pl.col("target_same")))
        .then(pl.lit("page changed: planned anew"))
    )
    joined = joined.with_columns(why.alias("why"))
    keep = (
        joined.filter(pl.col("why").is_null())
        .sort("order")
        .select("source", "target", "reason", "score", "evidence", "placement")
    )
    dropped = joined.filter(pl.col("why").is_not_null()).select("source_page_id", "target_page_id", "why")
    return keep, dropped


def plan_changes(previous: pl.DataFrame, plan: pl.DataFrame, dropped: pl.DataFrame) -> pl.DataFrame:
    """Each link of the last plan or this one: kept, added or removed, and why (`dropped`: the links
    links_to_keep or the planner let go, with why; a link of both plans was kept)."""
    pair = ["source_page_id", "target_page_id"]
    columns = [*pair, "source_url", "target_url", "reason"]
    kept = plan.join(previous, on=pair, how="semi").select(
        *columns, pl.lit("kept").alias("change"), pl.lit("still valid").alias("why")
    )
    replanned = kept.join(dropped, on=pair, how="semi").with_columns(
        pl.lit("planned again after a change").alias("why")
    )
    kept = pl.concat([kept.join(dropped, on=pair, how="anti"), replanned])
    added = plan.join(previous, on=pair, how="anti").select(
        *columns, pl.lit("added").alias("change"), pl.lit("new in this plan").alias("why")
    )
    removed = (
        previous.join(plan, on=pair, how="anti")
        .join(dropped, on=pair, how="left", maintain_order="left")
        .select(*columns, pl.lit("removed").alias("change"), pl.col("why").fill_null("no longer chosen"))
    )
    return pl.concat([kept, added, removed]).sort("change", *pair)


# --- the entry point: a site's inputs and scored candidates -> the plan and its anchors ----------------


@dataclass
class PlanInputs:
    """What a plan is built on, besides its candidates: pages in page-id order (row = node), their
    vectors and clusters, similar pairs both ways, and the existing links as node edges."""

    pages: pl.DataFrame
    vectors: np.ndarray
    index: pl.DataFrame  # page_id -> i
    cluster_of: np.ndarray
    similar: pl.DataFrame
    existing: pl.DataFrame
    nodes: int
    taken: dict[str, set[int]]  # existing in-content anchor (lower case) -> the pages it points at
    sections: SiteSections = field(default_factory=SiteSections.empty)


def plan_anchors(
    inputs: PlanInputs,
    planned: pl.DataFrame,
    candidates: pl.DataFrame,
    options: PlanOptions,
    glue: frozenset[str],
) -> tuple[list[str], list[int | None]]:
    """Each planned link's anchor and, when the source's text already holds it, its offset there."""
    pages = inputs.pages
    texts = pages.select(pl.coalesce("body_text", "meta_description").alias("t"))["t"].to_list()
    mentions = planned.select("source", "target", "score").join(
        candidates.select("source", "target", "mention_offset", "mention_words"),
        on=["source", "target"],
        how="left",
        maintain_order="left",
    )
    mentions = mentions.with_columns(
        pl.Series(
            "mention_text",
            [
                mention_span(texts[s], o, int(w or 0))
                for s, o, w in mentions.select("source", "mention_offset", "mention_words").iter_rows()
            ],
            dtype=pl.String,
        )
    )
    titles, h1s, paths = pages["title"].to_list(), pages["h1"].to_list(), pages["path"].to_list()
    targets = planned["target"].unique().to_list()
    phrases = {t: anchor_phrases(titles[t], h1s[t], options.anchor_max_words, glue) for t in targets}
    fallback = {
        t: [a for a in (first_clause(titles[t] or h1s[t]), titles[t], paths[t]) if a] for t in targets
    }
    return choose_anchors(mentions, phrases, fallback, options.anchor_max_targets, inputs.taken)


def plan_site(
    inputs: PlanInputs,
    candidates: pl.DataFrame,
    existing: pl.DataFrame,
    options: PlanOptions,
    kept: pl.DataFrame | None = None,
    kept_centrality: KeptCentrality | None = None,
) -> tuple[pl.DataFrame, Planner, SiteGraph]:
    """The plan from scored candidates (source, target, probability, origins) and the existing links,
    keeping the last plan's `kept` links first (and reusing `kept_centrality` while it holds); the planned
    links carry the candidate's probability (null when no signal proposed the pair)."""
    scored = candidates.select(
        "source", "target", pl.col("probability").alias("score"), pl.col("origins").alias("provenance")
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
        kept_centrality=kept_centrality,
    )
    planned, planner = plan_links(graph, options)
    planned = planned.join(
        candidates.select("source", "target", pl.col("probability").cast(pl.Float32)),
        on=["source", "target"],
        how="left",
        maintain_order="left",
    )
    return planned, planner, graph


def planner_without(
    inputs: PlanInputs, hidden: pl.DataFrame, options: PlanOptions
) -> Callable[[LinkGraph, pl.DataFrame], pl.DataFrame]:
    """The site's planning for a backtest: (visible links, scored candidates) -> planned links, with the
    `hidden` in-content pairs taken out of the existing links (kept where navigation also joins them)."""

    def plan(visible: LinkGraph, candidates: pl.DataFrame) -> pl.DataFrame:
        navigation = visible.subset(~visible.content)
        nav_pairs = pl.DataFrame({"source": navigation.source, "target": navigation.target})
        existing = without_hidden(inputs.existing, hidden, nav_pairs)
        return plan_site(inputs, candidates, existing, options)[0]

    return plan


# --- invariants ------------------------------------------------------------------------------------

PLAN_INVARIANTS = {
    "link_plan_targets_are_pages": "Every planned link joins two kept pages (never an excluded URL).",
    "link_plan_within_budget": "No page exceeds its out-link budget (existing in-content links counted; "
    "section_links for a section index); the home page stays within hub_links.",
    "link_plan_anchors": "One anchor per (source, target) pair, and no anchor text points at more than "
    "anchor_max_targets pages.",
    "link_plan_no_orphans": "Every page has an in-link after the plan; when the settings make that "
    "impossible, a warning names the pages and why.",
    "link_plan_depth_target": "Every page is within max_depth clicks of the home page after the plan "
    "(a warning when the settings make that impossible).",
}


@dataclass(frozen=True)
class PlanCheck:
    """One of PLAN_INVARIANTS evaluated on a plan; `blocking` failures mean the plan is wrong, the others
    that the settings cannot be met on this site."""

    name: str
    passed: bool
    blocking: bool
    figures: dict[str, object]


def check_plan(
    planned: pl.DataFrame,
    anchors: list[str | None],
    existing: pl.DataFrame,
    planner: Planner,
    orphans_after: int,
    options: PlanOptions,
    taken: Mapping[str, set[int]] | None = None,
) -> list[PlanCheck]:
    """PLAN_INVARIANTS on a plan (source, target rows, placement) and its anchors, in that order; an
    anchor's targets include those the site's in-content links already give it (`taken`)."""
    n, home = len(planner.g.page_ids), planner.g.home
    targets_ok = bool(((planned["source"] < n) & (planned["target"] < n)).all()) if planned.height else True
    contextual = planned.filter(pl.col("placement") == "contextual")
    content_out = np.bincount(existing.filter(pl.col("content"))["source"].to_numpy(), minlength=n)[:n]
    planned_out = np.bincount(contextual["source"].to_numpy(), minlength=n)
    budget = out_link_budgets(n, planner.g.sections, options)
    over = np.flatnonzero((planned_out > 0) & (planned_out + content_out > budget))
    home_planned = int((planned["placement"] == "home").sum())
    home_ok = home_planned <= max(0, options.hub_links - int(content_out[home]))
    anchored = planned.select("source", "target").with_columns(
        pl.Series("anchor", anchors, dtype=pl.String).str.to_lowercase()
    )
    repeated_pairs = anchored.height - anchored.select("source", "target").n_unique()
    targets_by_anchor: dict[str, set[int]] = {}
    for anchor, target in anchored.drop_nulls("anchor").select("anchor", "target").iter_rows():
        targets_by_anchor.setdefault(anchor, set((taken or {}).get(anchor, ()))).add(target)
    shared = pl.DataFrame(
        [(a, len(t)) for a, t in targets_by_anchor.items() if len(t) > options.anchor_max_targets],
        schema={"anchor": pl.String, "targets": pl.Int64},
        orient="row",
    )
    why = "; ".join(planner.stats.notes) or (
        "no similar page with spare out-link budget: raise out_link_budget"
        if planner.stats.unresolved_orphans
        else ""
    )
    return [
        PlanCheck("link_plan_targets_are_pages", targets_ok, True, {"links": planned.height}),
        PlanCheck(
            "link_plan_within_budget",
            not len(over) and home_ok,
            True,
            {
                "pages_over_budget": len(over),
                "home_links_planned": home_planned,
                "out_link_budget": options.out_link_budget,
            },
        ),
        PlanCheck(
            "link_plan_anchors",
            repeated_pairs == 0 and shared.is_empty(),
            True,
            {
                "pairs_with_two_links": repeated_pairs,
                "anchors_over_cap": shared.height,
                "anchor_max_targets": options.anchor_max_targets,
                "examples": shared.sort("targets", descending=True).head(10)["anchor"].to_list(),
            },
        ),
        PlanCheck(
            "link_plan_no_orphans",
            orphans_after == 0,
            False,
            {
                "orphans_after": orphans_after,
                "why": why or "none left",
                "unresolved": planner.stats.unresolved_orphans[:20],
            },
        ),
        PlanCheck(
            "link_plan_depth_target",
            planner.stats.too_deep_after == 0 and planner.stats.unreachable_after == 0,
            False,
            {
                "max_depth": options.max_depth,
                "deeper_pages": planner.stats.too_deep_after,
                "unreachable_pages": planner.stats.unreachable_after,
                "why": why or "target met",
            },
        ),
    ]


# --- anchors ---------------------------------------------------------------------------------------

_CUT = re.compile(r"\s+[|:–—-]\s+|[:,;(]\s*")
_WORD = re.compile(r"\w+", re.UNICODE)


def first_clause(text: str | None) -> str:
    """A title's own words: the part before ' | ', ': ', ' - ', ','."""
    return _CUT.split((text or "").strip())[0].strip(" .") if text else ""


def anchor_phrases(title: str | None, h1: str | None, max_words: int, glue: frozenset[str]) -> list[str]:
    """Anchors for one target, best first, each a whole phrase of its H1 or title — never cut mid-phrase:
    each clause (the first ones first; of the title, only the first) when it has at most `max_words`
    words, else the phrases between its function words ('How to Choose a Sleeping Bag for Winter Camping'
    gives 'Sleeping Bag', 'Winter Camping', …), longest first (single words only as a last resort)."""
    phrases: list[str] = []
    clauses = [first_clause(h1), first_clause(title)]
    # the H1's later clauses too (a title's may be branding: 'Hiking Boots | Alpine Gear')
    clauses += [c.strip(" .") for c in _CUT.split((h1 or "").strip())[1:]]
    for clause in clauses:
        words = clause.split()
        if not words:
            continue
        if len(words) <= max_words:
            phrases.append(clause)
            continue
        chunks: list[list[str]] = [[]]
        for word in words:
            if word.lower().strip(".,!?¿¡") in glue:
                chunks.append([])
            else:
                chunks[-1].append(word)
        fitting = [c for c in chunks if 0 < len(c) <= max_words]
        phrases += [" ".join(c) for c in sorted(fitting, key=len, reverse=True)]
    seen: set[str] = set()
    distinct = []
    for phrase in sorted(phrases, key=lambda p: len(p.split()) < 2):  # stable: phrases of 2+ words first
        if phrase.lower() not in seen:
            seen.add(phrase.lower())
            distinct.append(phrase)
    return distinct


def mention_span(text: str | None, offset: int | None, words: int) -> str | None:
    """The `words`-word phrase of `text` starting at character `offset`, as written there."""
    if not text or offset is None or offset < 0 or words < 1:
        return None
    if offset and _WORD.match(text[offset - 1]):  # not at a word's start
        return None
    tokens = list(_WORD.finditer(text.lower(), offset))[:words]
    if len(tokens) < words or tokens[0].start() != offset:
        return None
    return text[offset : tokens[-1].end()]


def choose_anchors(
    links: pl.DataFrame,
    phrases: Mapping[int, list[str]],
    fallback: Mapping[int, list[str]],
    max_targets: int,
    taken: Mapping[str, set[int]] | None = None,
) -> tuple[list[str], list[int | None]]:
    """One anchor per planned link (source, target, score, and optionally mention_text, mention_offset):
    the phrase the source's own text already uses for the target, where there is one (its character
    offset is returned, so the link can be inserted in place); else the target's best phrase. No anchor
    text points at more than `max_targets` targets, counting the site's existing in-content anchors
    (`taken`: lower-cased anchor -> targets); the target's `fallback` anchors (its whole title, then its
    URL path, which no other page has) are used when every phrase is taken. Links are served most
    probable first."""
    used: dict[str, set[int]] = {k: set(v) for k, v in (taken or {}).items()}

    def free(anchor: str, target: int) -> bool:  # an anchor the site already spreads too wide stays unused
        return len(used.get(anchor.lower(), set()) | {target}) <= max_targets

    order = links.with_row_index("row").sort(["score", "row"], descending=[True, False], nulls_last=True)
    has_mention = "mention_text" in links.columns
    anchors: list[str] = [""] * links.height
    offsets: list[int | None] = [None] * links.height
    for row in order.iter_rows(named=True):
        target = row["target"]
        choice, offset = None, None
        if has_mention and row["mention_text"] and free(row["mention_text"], target):
            choice, offset = row["mention_text"], row["mention_offset"]
        else:
            choice = next((p for p in phrases.get(target, []) if free(p, target)), None)
        if choice is None:
            choice = next((f for f in fallback[target] if free(f, target)), fallback[target][-1])
        used.setdefault(choice.lower(), set()).add(target)
        anchors[row["row"]], offsets[row["row"]] = choice, offset
    return anchors, offsets
