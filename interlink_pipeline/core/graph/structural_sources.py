"""Where a structural link comes from: the target's most related pages over the whole site, its own
section index, or the index above its own index — the first of them with room takes the link and the next
ones are named as its alternatives. Room decides whether a source can take one more link, never which page
is the source."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import islice
from typing import NamedTuple

import numpy as np
from scipy import sparse

from interlink_pipeline.core.graph.link_evidence import INDEX_ABOVE, SECTION_INDEX, in_list_only
from interlink_pipeline.core.graph.plan_state import PlanState

ALTERNATIVES = 3  # the next best sources a structural link names


class Sources(NamedTuple):
    """The pages that may give a target a structural link, best first: their scores and the evidence that
    relates each to the target (a candidate's origins, SECTION_INDEX or INDEX_ABOVE)."""

    pages: np.ndarray
    scores: np.ndarray
    evidence: tuple[str, ...]


def related_sources(planner: PlanState, target: int) -> Sources:
    """The target's most related pages (planner.neighbours: candidates with evidence that stand out), then
    its own section index when not among them: its URL parent, when that is an index page — or the home
    page, when its URL children fit its hub links (with flat URLs, every page's parent, it heads no
    section)."""
    pages, scores, provenance = planner.neighbours[target]
    tree = planner.site.tree
    parent = int(tree.parent[target]) if tree is not None else -1
    home = planner.site.home
    heads = planner.is_index[parent] if parent != home else planner.home_lists_children
    if parent < 0 or not heads or parent in pages:
        return Sources(pages, scores, provenance)
    return Sources(np.append(pages, parent), np.append(scores, np.float32(0.0)), (*provenance, SECTION_INDEX))


def link_first_open(
    planner: PlanState, target: int, sources: Sources, eligible: np.ndarray, reason: str
) -> bool:
    """Link target from the first of its `sources` that is eligible, has room and no link yet, naming the
    next ALTERNATIVES such pages as its alternatives. A candidate whose text relates it to the target takes
    the link in its content while it has budget, else in its list when it is an index page (the home page:
    only its sections' indexes); a section index, the index above or an index proposing the target as like
    what it lists takes it in its list only (link_evidence.in_list_only)."""

    def room(other: int, evidence: str) -> str | None:
        home = other == planner.site.home
        if home and evidence == SECTION_INDEX and planner.hub_budget > 0:
            return "home"
        if not in_list_only(evidence) and planner.out_budget[other] > 0:
            return "contextual"
        # beyond its hub links the home page lists only the indexes of its own sections (an orphaned
        # /guides/), never whatever is too deep
        return "listing" if planner.is_index[other] and (not home or own_section) else None

    tree = planner.site.tree
    own_section = (
        bool(planner.is_index[target]) and tree is not None and tree.parent[target] == planner.site.home
    )

    open_sources = list(
        islice(
            (
                (other, score, evidence, place)
                for other, score, evidence in zip(
                    sources.pages.tolist(), sources.scores.tolist(), sources.evidence, strict=True
                )
                if eligible[other] and planner.is_new(other, target) and (place := room(other, evidence))
            ),
            1 + ALTERNATIVES,
        )
    )
    if not open_sources:
        return False
    (source, score, evidence, place), rest = open_sources[0], open_sources[1:]
    return planner.add(
        source, target, reason, score, evidence, alternatives=tuple(o for o, *_ in rest),
        listing=place == "listing", home=place == "home",
    )  # fmt: skip


def link_from_related(
    planner: PlanState, targets: np.ndarray, eligible: np.ndarray, reason: str | Mapping[int, str]
) -> list[int]:
    """Give each target, in order, one link from its first related source (related_sources) that is
    eligible and has room. `reason` is one for all, or one per target. Returns the targets that found
    none."""

    def why(target: int) -> str:
        return reason if isinstance(reason, str) else reason[target]

    return [
        int(t)
        for t in targets
        if not link_first_open(planner, int(t), related_sources(planner, int(t)), eligible, why(int(t)))
    ]


def link_from_above_or_related(
    planner: PlanState,
    targets: np.ndarray,
    lists: IndexLists,
    depth: np.ndarray,
    eligible: np.ndarray,
    reason: str | Mapping[int, str],
) -> None:
    """Give each target one link from the `eligible` index above its own index (indexes_above) whose list
    holds pages like it (`lists`: the pages' links), else, for those none is open on, from its first
    eligible related source (link_from_related)."""
    rest = []
    for target in targets.tolist():
        why = reason if isinstance(reason, str) else reason[target]
        above = indexes_above(planner, lists, depth, target, eligible[: planner.page_count])
        if above is None or not link_first_open(planner, target, above, eligible, why):
            rest.append(target)
    link_from_related(planner, np.asarray(rest, dtype=np.int64), eligible, reason)


class IndexLists:
    """The pages' links (`out`: each page's out-links; `into`: its in-links), and whether a page belongs
    in an index's list: it is at least as close to the pages the list holds as its typical page is to the
    others (their median). A list holds pages of one kind — the controls' overviews, a category's
    products — and a page of another kind (a control's member functions, one level further down) is no
    entry of it, however deep it sits."""

    def __init__(self, vectors: np.ndarray | None, out: sparse.csr_matrix):
        self.vectors, self.out = vectors, out
        self.into = out.T.tocsr()
        self._lists: dict[int, tuple[np.ndarray, int, float] | None] = {}  # per index, asked once

    def holds_like(self, index: int, page: int) -> bool:
        if index not in self._lists:
            self._lists[index] = self._list(index)
        known = self._lists[index]
        if known is None:
            return True  # nothing to tell its kind by
        total, items, typical = known
        return float(self.vectors[page] @ total) / items >= typical

    def _list(self, index: int) -> tuple[np.ndarray, int, float] | None:
        """The sum of the vectors of the pages the index lists, their number, and their typical closeness
        (the median of each one's mean cosine to the others, through the sum); None below two pages."""
        items = csr_row(self.out, index)  # (a page already among them is no new link: not asked)
        if self.vectors is None or len(items) < 2:
            return None
        block = self.vectors[items]
        total = block.sum(axis=0)
        own = np.einsum("ij,ij->i", block, block)
        return total, len(items), float(np.median((block @ total - own) / (len(items) - 1)))


def indexes_above(
    planner: PlanState, lists: IndexLists, depth: np.ndarray, page: int, givers: np.ndarray
) -> Sources | None:
    """The `givers` that are index pages, link a page that links `page` one level up (its index's index)
    and whose list holds pages like it (`lists`), most similar to it first: the site's own hierarchy
    places the page in their list."""
    linking = csr_row(lists.into, page)
    parents = linking[depth[linking] == depth[page] - 1]
    above = np.unique(
        np.concatenate([csr_row(lists.into, p) for p in parents.tolist()] or [np.array([], int)])
    )
    above = above[givers[above] & planner.is_index[above]]
    above = np.asarray([index for index in above.tolist() if lists.holds_like(index, page)], dtype=np.int64)
    if not len(above):
        return None
    vectors = planner.site.vectors
    scores = vectors[above] @ vectors[page] if vectors is not None else planner.centrality[above]
    order = np.argsort(-scores, kind="stable")
    return Sources(above[order], scores[order].astype(np.float64), (INDEX_ABOVE,) * len(above))


def csr_row(matrix: sparse.csr_matrix, row: int) -> np.ndarray:
    """A CSR row's column indices, without building a one-row matrix (50x faster, called per target)."""
    return matrix.indices[matrix.indptr[row] : matrix.indptr[row + 1]]
