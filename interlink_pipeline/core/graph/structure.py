"""The plan's structure steps: every page within max_depth clicks of the home page, orphans rescued, groups
cut off from the home page bridged; each link from the target's most related page with room left (its
candidate sources by the ranker's probability first, then its similar pages, then the nearest pages by an
exact vector search), naming the next best sources as alternatives."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import islice

import numpy as np
import polars as pl
from scipy import sparse
from scipy.sparse import csgraph

from interlink_pipeline.core.graph.metrics import UNREACHABLE, click_depth, out_degree
from interlink_pipeline.core.graph.plan_state import PlanState
from interlink_pipeline.core.ml.exact_search import exact_top


def _nearest_sources(
    planner: PlanState, targets: list[int], eligible: np.ndarray
) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The nearest eligible pages with budget for each target, by one blocked vector search."""
    pool = np.flatnonzero(eligible[: planner.page_count] & (planner.out_budget[: planner.page_count] > 0))
    vectors = planner.site.vectors
    if vectors is None or not targets or not len(pool):
        return {}
    idx, scores = exact_top(vectors[targets], vectors[pool], min(50, len(pool)))
    unlikely = np.zeros(idx.shape[1], dtype=bool)  # found by their words alone: never beyond a budget
    return {t: (pool[idx[row]], scores[row], unlikely) for row, t in enumerate(targets)}


ALTERNATIVES = 3  # the next best sources a structural link names


def _link_first_open(
    planner: PlanState,
    target: int,
    related: tuple[np.ndarray, np.ndarray, np.ndarray],
    eligible: np.ndarray,
    reason: str,
) -> bool:
    """Link target from the first of its `related` pages (best first: pages, scores, likely) that is
    eligible, has room and no link yet, naming the next ALTERNATIVES such pages as its alternatives. An
    index page has room in its list, whatever its in-content budget, when it is a likely place for the link
    or the target's own section index (its URL parent: a guide beyond the guides hub's list joins it)."""
    others, scores, likely = related
    tree = planner.site.tree
    section_index = int(tree.parent[target]) if tree is not None else -1

    def room(i: int, other: int) -> str | None:
        if planner.out_budget[other] > 0:
            return "contextual"
        listed = likely[i] or (other == section_index and other != planner.site.home)
        return "listing" if listed and planner.is_index[other] else None

    open_sources = list(
        islice(
            (
                (other, score, place)
                for i, (other, score) in enumerate(zip(others.tolist(), scores.tolist(), strict=True))
                if eligible[other] and planner.is_new(other, target) and (place := room(i, other))
            ),
            1 + ALTERNATIVES,
        )
    )
    if not open_sources:
        return False
    (source, score, place), rest = open_sources[0], open_sources[1:]
    return planner.add(
        source, target, reason, score, "semantic", alternatives=tuple(o for o, _, _ in rest),
        listing=place == "listing",
    )  # fmt: skip


def link_from_related(
    planner: PlanState, targets: np.ndarray, eligible: np.ndarray, reason: str | Mapping[int, str]
) -> list[int]:
    """Give each target, in order, one link from its most related eligible page with budget left: its
    similar pages and candidates first, then (for the targets still unlinked) the nearest eligible pages
    by vector search. `reason` is one for all, or one per target. Returns the targets that found none."""

    def why(target: int) -> str:
        return reason if isinstance(reason, str) else reason[target]

    unlinked = [
        int(t)
        for t in targets
        if not _link_first_open(planner, int(t), planner.neighbours[int(t)], eligible, why(int(t)))
    ]
    nearest = _nearest_sources(planner, unlinked, eligible)
    return [
        t
        for t in unlinked
        if t not in nearest or not _link_first_open(planner, t, nearest[t], eligible, why(t))
    ]


def deep_sections(planner: PlanState, floor: int, linked: set[int], room: int) -> list[int]:
    """Up to `room` section pages — pages with `floor` pages or more below them in the URL tree, or index
    pages listing as many (none of `linked`) — whose pages lie deeper than max_depth clicks or out of
    reach, greedily: the section holding the most such pages not yet in a chosen section first. A link
    from the home page to each brings its pages up."""
    n = planner.page_count
    if room <= 0:
        return []
    depth = click_depth(planner.current_graph(), planner.site.home)[:n]
    left = ((depth > planner.options.max_depth) | (depth == UNREACHABLE)).astype(np.float64)
    if not left.any():
        return []
    sections, holds = _section_members(planner, floor, linked)
    chosen: list[int] = []
    while len(chosen) < room and sections.size:
        held = holds @ left
        held[np.isin(sections, chosen)] = 0
        best = int(np.argmax(held))
        if held[best] == 0:
            break
        chosen.append(int(sections[best]))
        left[holds[best].indices] = 0
    return chosen


def _section_members(
    planner: PlanState, floor: int, linked: set[int]
) -> tuple[np.ndarray, sparse.csr_matrix]:
    """The candidate sections and, one row each, the pages they hold: a URL-tree page's pages below it,
    an index page's listed pages (its existing in-content links)."""
    n, tree = planner.page_count, planner.site.tree
    rows: list[np.ndarray] = []
    sections: list[int] = []
    if tree is not None:
        below = tree.descendants
        for page in np.flatnonzero((below >= floor) & (tree.depth >= 1)).tolist():
            level = tree.depth[page] - 1
            inside = np.flatnonzero(tree.prefix[:, level] == tree.prefix[page, level])
            sections.append(page)
            rows.append(inside[inside != page])
    content = planner.site.existing.filter(pl.col("content") & (pl.col("target") < n))
    listed = content.group_by("source").agg("target").filter(pl.col("target").list.len() >= floor)
    for page, members in listed.iter_rows():
        if page < n and planner.is_index[page]:
            sections.append(page)
            rows.append(np.asarray(members, dtype=np.int64))
    keep = [i for i, page in enumerate(sections) if page not in linked and page != planner.site.home]
    lengths = [len(rows[i]) for i in keep]
    holds = sparse.csr_matrix(
        (
            np.ones(sum(lengths)),
            (
                np.repeat(np.arange(len(keep)), lengths),
                np.concatenate([rows[i] for i in keep] or [np.empty(0, np.int64)]),
            ),
        ),
        shape=(len(keep), n),
    )
    return np.asarray([sections[i] for i in keep], dtype=np.int64), holds


NEAR_DUPLICATE = 0.95  # the cosine above which two orphans say the same: rescue one, name the other


def near_duplicate_orphans(planner: PlanState) -> None:
    """Orphans that say what a more central orphan says (their vectors' cosine NEAR_DUPLICATE or more) are
    not rescued side by side: the more central is, and the other is named as its possible cannibal
    (planner.duplicate_of) for an editor to merge, redirect or canonicalise."""
    vectors = planner.site.vectors
    # the orphans of the site's own links (not of the links kept from the last plan, which rescued one of
    # each pair then: the same pair is named again)
    orphans = planner.orphans_before[~planner.utility[planner.orphans_before]]
    orphans = orphans[orphans != planner.site.home]
    if vectors is None or len(orphans) < 2:
        return
    orphans = orphans[np.argsort(-planner.centrality[orphans], kind="stable")]
    found, scores = exact_top(
        vectors[orphans], vectors[orphans], min(10, len(orphans)), query_ids=np.arange(len(orphans))
    )
    for row, page in enumerate(orphans.tolist()):
        if planner.duplicate_of[page] >= 0:
            continue
        twins = orphans[found[row][(scores[row] >= NEAR_DUPLICATE) & (found[row] > row)]]
        planner.duplicate_of[twins[planner.duplicate_of[twins] < 0]] = page


def rescue_orphans(planner: PlanState) -> None:
    """Every page nobody links to gets a link from its most related page anywhere, the most central first;
    then every page the plan rescued and that has that one link gets a second from the next likely source
    with room (a candidate at min_probability or more): one link is one edit away from an orphan again."""
    order = np.argsort(-planner.centrality, kind="stable")
    anywhere = np.ones(planner.page_count, dtype=bool)
    needs = (planner.inbound[: planner.page_count] == 0) & ~planner.left_alone
    orphans = order[needs[order] & (order != planner.site.home)]
    missed = link_from_related(planner, orphans, anywhere, "orphan-rescue")
    planner.stats.unresolved_orphans = [str(planner.site.page_ids[p]) for p in missed]
    rescued = order[np.isin(order, planner.orphans_before)]
    once = rescued[(planner.inbound[rescued] == 1) & (rescued != planner.site.home)]
    for target in once.tolist():
        others, scores, likely = planner.neighbours[target]
        _link_first_open(
            planner, target, (others[likely], scores[likely], likely[likely]), anywhere, "orphan-rescue"
        )


def bridge_components(planner: PlanState) -> None:
    """Each group of pages still cut off from the home page gets a link into its most central page from a
    related reachable page, until none is left or none can be linked."""
    n = planner.page_count
    for _ in range(50):
        graph = planner.current_graph()
        depth = click_depth(graph, planner.site.home)
        unreachable = np.flatnonzero((depth[:n] == UNREACHABLE) & ~planner.left_alone)
        if not len(unreachable):
            return
        count, labels = csgraph.connected_components(
            graph[unreachable][:, unreachable], directed=True, connection="weak"
        )
        # each group enters through its most central page
        entries = np.array(
            [
                unreachable[labels == c][np.argmax(planner.centrality[unreachable[labels == c]])]
                for c in range(count)
            ]
        )
        if len(link_from_related(planner, entries, depth != UNREACHABLE, "component-bridge")) == len(entries):
            planner.stats.notes.append(
                f"{len(unreachable)} pages stay unreachable: no related reachable page has out-link "
                "budget left (raise out_link_budget)"
            )
            return


def shorten_depth(planner: PlanState) -> None:
    """Bring every page within max_depth clicks: first the lists of many too-deep pages (_lift_lists),
    then each too-deep or unreachable page left (those with the most out-links first, then the most
    central; a section's index before its own pages) gets a link from the index above its own index, else
    its most related page, among those within max_depth - 1 clicks that have budget left, and then passes
    links on in turn: round by round, until none is too deep. A link to a page nobody linked is an orphan
    rescue; into a group cut off from the home page, a component bridge."""
    limit, n = planner.options.max_depth, planner.page_count
    _lift_lists(planner)
    unrelated = np.zeros(n, dtype=bool)  # givers none of the remaining too-deep pages relate to
    while True:
        graph = planner.current_graph()
        depth = click_depth(graph, planner.site.home)
        too_deep = np.flatnonzero(((depth[:n] > limit) | (depth[:n] == UNREACHABLE)) & ~planner.left_alone)
        if not len(too_deep):
            return
        room = (planner.out_budget[:n] > 0) | planner.is_index[:n]
        givers = (depth[:n] >= 0) & (depth[:n] < limit) & room & ~unrelated
        if not givers.any():
            planner.stats.notes.append(
                f"{len(too_deep)} pages stay deeper than {limit} clicks: no page within {limit - 1} "
                "clicks has out-link budget left (raise out_link_budget or hub_links)"
            )
            return
        eligible = np.zeros(planner.node_count, dtype=bool)
        eligible[:n] = givers
        # at most as many targets as the givers have budget for: the rest wait for the next round
        capacity = int(planner.out_budget[:n][givers].sum()) + int((givers & planner.is_index[:n]).sum())
        ordered = _next_targets(planner, graph, depth, too_deep)[: 2 * capacity]
        reasons = np.where(
            planner.inbound[ordered] == 0,
            "orphan-rescue",
            np.where(depth[ordered] == UNREACHABLE, "component-bridge", "depth-shortcut"),
        )
        linked = len(planner.links)
        into = graph[:n][:, :n].astype(bool).T.tocsr()
        why = dict(zip(ordered.tolist(), reasons.tolist(), strict=True))
        # a section's index before its pages: once it is in reach, it is their place (its list)
        heads = _section_heads(planner, ordered)
        if len(heads):
            _link_from_above_or_related(planner, heads, into, depth[:n], eligible, why)
            if len(planner.links) > linked:
                continue
        _link_from_above_or_related(planner, ordered, into, depth[:n], eligible, why)
        if len(planner.links) == linked:
            unrelated[givers] = True


def _section_heads(planner: PlanState, targets: np.ndarray) -> np.ndarray:
    """The targets that are another target's URL parent (a guides hub as far out of reach as its guides)."""
    tree = planner.site.tree
    if tree is None:
        return targets[:0]
    return targets[np.isin(targets, tree.parent[targets])]


LIFTED_PAGES = 5  # the fewest too-deep pages a page must list for one link to it to bring them all up


def _lift_lists(planner: PlanState) -> None:
    """One link for many: each page that links LIFTED_PAGES or more pages deeper than max_depth (an index
    of error codes, a reference's list of members), the most such pages first, gets a link from a page
    within max_depth - 2 clicks — the index above its own index first (a level skipped in the site's own
    hierarchy), else its most related page — so that it comes within max_depth - 1 clicks and its pages
    within max_depth, instead of a shortcut from a sibling to each. Round by round, each round's lists
    greedily, each counting only the pages no list before it in the round brings up."""
    limit, n = planner.options.max_depth, planner.page_count
    tried = np.zeros(n, dtype=bool)
    while True:
        graph = planner.current_graph()[:n][:, :n].astype(bool).tocsr()
        depth = click_depth(graph, planner.site.home)[:n]
        too_deep = ((depth > limit) | (depth == UNREACHABLE)) & ~planner.left_alone
        lists = np.asarray(graph @ too_deep.astype(np.int64)).ravel()
        lists[tried | (depth < limit) | (depth == UNREACHABLE)] = 0
        givers = np.zeros(planner.node_count, dtype=bool)
        givers[:n] = (depth >= 0) & (depth <= limit - 2)
        linked, chosen = len(planner.links), []
        for page in np.flatnonzero(lists >= LIFTED_PAGES)[np.argsort(-lists[lists >= LIFTED_PAGES])]:
            listed = _row(graph, page)[too_deep[_row(graph, page)]]
            if len(listed) >= LIFTED_PAGES:  # counting only the pages no list before it brings up
                chosen.append(int(page))
                tried[page], too_deep[listed] = True, False
        chosen_pages = np.asarray(chosen, dtype=np.int64)
        _link_from_above_or_related(planner, chosen_pages, graph.T.tocsr(), depth, givers, "depth-shortcut")
        if len(planner.links) == linked:
            return


def _link_from_above_or_related(
    planner: PlanState,
    targets: np.ndarray,
    into: sparse.csr_matrix,
    depth: np.ndarray,
    eligible: np.ndarray,
    reason: str | Mapping[int, str],
) -> None:
    """Give each target one link from the `eligible` index above its own index (_indexes_above), else, for
    those none is open on, from its most related eligible page (link_from_related: one search for all)."""
    rest = []
    for target in targets.tolist():
        why = reason if isinstance(reason, str) else reason[target]
        above = _indexes_above(planner, into, depth, target, eligible[: planner.page_count])
        if above is None or not _link_first_open(planner, target, above, eligible, why):
            rest.append(target)
    link_from_related(planner, np.asarray(rest, dtype=np.int64), eligible, reason)


def _indexes_above(
    planner: PlanState, into: sparse.csr_matrix, depth: np.ndarray, page: int, givers: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The `givers` that link a page that links `page` one level up (its index's index: `into` holds each
    page's in-links), most similar to it first (pages, cosines, whether an index page: a likely place for
    it in its list)."""
    linking = _row(into, page)
    parents = linking[depth[linking] == depth[page] - 1]
    above = np.unique(np.concatenate([_row(into, p) for p in parents.tolist()] or [np.array([], int)]))
    above = above[givers[above]]
    if not len(above):
        return None
    vectors = planner.site.vectors
    scores = vectors[above] @ vectors[page] if vectors is not None else planner.centrality[above]
    order = np.argsort(-scores, kind="stable")
    return above[order], scores[order].astype(np.float64), planner.is_index[above[order]]


def _row(matrix: sparse.csr_matrix, row: int) -> np.ndarray:
    """A CSR row's column indices, without building a one-row matrix (50x faster, called per target)."""
    return matrix.indices[matrix.indptr[row] : matrix.indptr[row + 1]]


def _next_targets(
    planner: PlanState, graph: sparse.csr_matrix, depth: np.ndarray, too_deep: np.ndarray
) -> np.ndarray:
    """The too-deep pages in the order they are brought up, one per group of unreachable pages."""
    # pages that link to many others first: each one brought up brings its pages up a level too
    fan_out = out_degree(graph)[too_deep]
    ordered = too_deep[np.lexsort((-planner.centrality[too_deep], -fan_out))]
    # one way into each group of unreachable pages: the others follow through its links
    cut_off = depth[ordered] == UNREACHABLE
    _, group = csgraph.connected_components(
        graph[ordered[cut_off]][:, ordered[cut_off]], directed=True, connection="weak"
    )
    entry = np.ones(len(ordered), dtype=bool)
    first_of_group = np.zeros(len(group), dtype=bool)
    first_of_group[np.unique(group, return_index=True)[1]] = True
    entry[cut_off] = first_of_group
    return ordered[entry]
