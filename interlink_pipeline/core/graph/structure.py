"""The plan's structure steps: every page within max_depth clicks of the home page, orphans rescued, groups
cut off from the home page bridged. Sense before structure: each link comes from the target's own section
index, the index above its own, or one of its `structural_sources` most related pages over the whole site
(structural_sources.py); a page none of them can link is left for an editor (left_for_editor.py)."""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy import sparse
from scipy.sparse import csgraph

from interlink_pipeline.core.graph.link_evidence import SECTION_INDEX
from interlink_pipeline.core.graph.metrics import UNREACHABLE, click_depth, out_degree
from interlink_pipeline.core.graph.plan_state import PlanState
from interlink_pipeline.core.graph.structural_sources import (
    IndexLists,
    Sources,
    csr_row,
    link_first_open,
    link_from_above_or_related,
    link_from_related,
    related_sources,
)
from interlink_pipeline.core.ml.ann_search import APPROXIMATE_ABOVE, Approximate, checked_top


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
ORPHAN_SEARCH = Approximate(APPROXIMATE_ABOVE)  # the orphans' neighbour search: approximate past as many


def near_duplicate_orphans(planner: PlanState, approximate: Approximate = ORPHAN_SEARCH) -> None:
    """Orphans that say what a more central orphan says (their vectors' cosine NEAR_DUPLICATE or more) are
    not rescued side by side: the more central is, and the other is named as its possible cannibal
    (planner.duplicate_of) for an editor to merge, redirect or canonicalise. Each orphan's ten nearest are
    searched among the orphans, exactly, or past `approximate.above` of them where the approximate lists'
    recall holds (an exact search grows with their square: 11 s for 35,000 orphans, 100,000 pages), the
    search said in planner.stats."""
    vectors = planner.site.vectors
    # the orphans of the site's own links (not of the links kept from the last plan, which rescued one of
    # each pair then: the same pair is named again)
    orphans = planner.orphans_before[~planner.utility[planner.orphans_before]]
    orphans = orphans[orphans != planner.site.home]
    if vectors is None or len(orphans) < 2:
        return
    orphans = orphans[np.argsort(-planner.centrality[orphans], kind="stable")]
    found, scores, check = checked_top(vectors[orphans], min(10, len(orphans)), approximate)
    planner.stats.near_duplicate_search = f"{len(orphans):,} orphans, {check.described()}"
    for row, page in enumerate(orphans.tolist()):
        if planner.duplicate_of[page] >= 0:
            continue
        twins = orphans[found[row][(scores[row] >= NEAR_DUPLICATE) & (found[row] > row)]]
        planner.duplicate_of[twins[planner.duplicate_of[twins] < 0]] = page


def rescue_orphans(planner: PlanState) -> None:
    """Every page nobody links to gets a link from a related source anywhere (related_sources): first the
    orphaned section indexes (pages the URL tree puts others below), from the home page when they are top
    level and it has room for them, so that their orphaned pages can join their lists; then the rest, the
    most central first. Then every page the plan rescued that has that one link gets a second from its next
    related source with room that is likely on its own (min_probability or more, or its section index):
    one link is one edit away from an orphan again."""
    order = np.argsort(-planner.centrality, kind="stable")
    anywhere = np.ones(planner.page_count, dtype=bool)
    home, tree = planner.site.home, planner.site.tree
    needs = (planner.inbound[: planner.page_count] == 0) & ~planner.left_alone
    orphans = order[needs[order] & (order != home)]
    heads = _section_heads(planner, orphans, every_page=True)
    missed = []
    for head in heads.tolist():
        top_level = tree is not None and int(tree.parent[head]) == home
        if not (top_level and planner.add(home, head, "orphan-rescue", 0.0, SECTION_INDEX, home=True)):
            missed += link_from_related(planner, np.array([head]), anywhere, "orphan-rescue")
    missed += link_from_related(planner, orphans[~np.isin(orphans, heads)], anywhere, "orphan-rescue")
    planner.stats.unresolved_orphans = [str(planner.site.page_ids[p]) for p in missed]
    rescued = order[np.isin(order, planner.orphans_before)]
    once = rescued[(planner.inbound[rescued] == 1) & (rescued != home)]
    for target in once.tolist():
        # a second link is not forced: its source must be likely on its own, not only stand out
        sources = related_sources(planner, target)
        likely = (sources.scores >= planner.options.min_probability) | np.array(
            [evidence == SECTION_INDEX for evidence in sources.evidence], dtype=bool
        )
        chosen = Sources(
            sources.pages[likely], sources.scores[likely], tuple(np.array(sources.evidence)[likely])
        )
        link_first_open(planner, target, chosen, anywhere, "orphan-rescue")


def bridge_components(planner: PlanState) -> None:
    """Each group of pages still cut off from the home page gets a link into its most central page from a
    related reachable page, until none is left or none can be linked (left for an editor)."""
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
            return  # shorten_depth tries them again, and says what stays


def shorten_depth(planner: PlanState) -> None:
    """Bring every page within max_depth clicks: first the lists of many too-deep pages (_lift_lists),
    then each too-deep or unreachable page left (those with the most out-links first, then the most
    central; a section's index before its own pages) gets a link from the index above its own index, else
    its first related source (related_sources) within max_depth - 1 clicks with room, and then passes links
    on in turn: round by round, until none is too deep, or none of those left has a related source within
    reach (they are left for an editor). A link to a page nobody linked is an orphan rescue; into a group
    cut off from the home page, a component bridge."""
    limit, n = planner.options.max_depth, planner.page_count
    _lift_lists(planner)
    failed = np.zeros(n, dtype=bool)  # too-deep pages no source could take since the last new link
    progress = False  # whether a link was added since `failed` was last cleared
    while True:
        graph = planner.current_graph()
        depth = click_depth(graph, planner.site.home)
        too_deep = np.flatnonzero(((depth[:n] > limit) | (depth[:n] == UNREACHABLE)) & ~planner.left_alone)
        waiting = too_deep[~failed[too_deep]]
        if not len(waiting):
            if not (progress and len(too_deep)):
                break
            failed[:], progress = False, False  # pages came within reach since: try the others again
            continue
        givers = (
            (depth[:n] >= 0) & (depth[:n] < limit) & ((planner.out_budget[:n] > 0) | planner.is_index[:n])
        )
        eligible = np.zeros(planner.node_count, dtype=bool)
        eligible[:n] = givers
        # at most as many targets as the givers have room for: the rest wait for the next round
        capacity = int(planner.out_budget[:n][givers].sum()) + int((givers & planner.is_index[:n]).sum())
        ordered = _next_targets(planner, graph, depth, waiting)[: max(1, 2 * capacity)]
        reasons = np.where(
            planner.inbound[ordered] == 0,
            "orphan-rescue",
            np.where(depth[ordered] == UNREACHABLE, "component-bridge", "depth-shortcut"),
        )
        linked = len(planner.links)
        lists = IndexLists(planner.site.vectors, graph[:n][:, :n].astype(bool).tocsr())
        why = dict(zip(ordered.tolist(), reasons.tolist(), strict=True))
        # a section's index before its pages: once it is in reach, it is their place (its list)
        heads = _section_heads(planner, ordered)
        if len(heads):
            link_from_above_or_related(planner, heads, lists, depth[:n], eligible, why)
            if len(planner.links) > linked:
                progress = True
                continue
        link_from_above_or_related(planner, ordered, lists, depth[:n], eligible, why)
        progress |= len(planner.links) > linked
        if len(planner.links) == linked:
            failed[ordered] = True
    _say_what_stays(planner, depth[:n])


def _say_what_stays(planner: PlanState, depth: np.ndarray) -> None:
    """The planner's note on the pages still too deep or cut off after shorten_depth (`depth`: each's)."""
    limit = planner.options.max_depth
    deep = int(((depth > limit) & ~planner.left_alone).sum())
    cut_off = int(((depth == UNREACHABLE) & ~planner.left_alone).sum())
    stay = " and ".join(
        [f"{deep} pages stay deeper than {limit} clicks"] * bool(deep)
        + [f"{cut_off} pages stay unreachable"] * bool(cut_off)
    )
    near = f"within {limit - 1} clicks" if limit > 1 else "the home page"
    if stay:
        planner.stats.notes.append(
            f"{stay}: none of their related pages is {near} with room for a link (left for an editor, in "
            "graph.page_metrics.left_for_editor)"
        )


def _section_heads(planner: PlanState, targets: np.ndarray, every_page: bool = False) -> np.ndarray:
    """The targets that are another target's URL parent (a guides hub as far out of reach as its guides),
    or, `every_page`, any page's."""
    tree = planner.site.tree
    if tree is None:
        return targets[:0]
    return targets[np.isin(targets, tree.parent if every_page else tree.parent[targets])]


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
            listed = csr_row(graph, page)[too_deep[csr_row(graph, page)]]
            if len(listed) >= LIFTED_PAGES:  # counting only the pages no list before it brings up
                chosen.append(int(page))
                tried[page], too_deep[listed] = True, False
        chosen_pages = np.asarray(chosen, dtype=np.int64)
        lists = IndexLists(planner.site.vectors, graph)
        link_from_above_or_related(planner, chosen_pages, lists, depth, givers, "depth-shortcut")
        if len(planner.links) == linked:
            return


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
