"""The URL hierarchy of the kept pages: which pages it proposes for a page (its parent, its most similar
children and siblings) and how two pages relate in it (the pair's hierarchy features)."""

from __future__ import annotations

from functools import cached_property

import numpy as np
import polars as pl

from interlink_pipeline.core.ml.exact_search import exact_top
from interlink_pipeline.core.relevance.site_signals import CandidateOptions

CHUNK_ROWS = 4096  # pairs per vectorised step: small enough to stay in cache


class UrlTree:
    """The URL hierarchy of the kept pages: each page's parent is its nearest ancestor path among them."""

    def __init__(self, paths: list[str]):
        self.n = len(paths)
        segments = [[s for s in (p or "/").split("?")[0].split("/") if s] for p in paths]
        self.depth = np.array([len(s) for s in segments], dtype=np.int64)
        by_path = {"/".join(s): i for i, s in reversed(list(enumerate(segments)))}
        self.section = np.array([by_path.get(s[0], -1) if s else -1 for s in segments], dtype=np.int64)
        # prefix[i, d]: an id of page i's first d+1 path segments (-1 past its depth), so two pages' common
        # prefix length is a vector comparison; a section is a first segment
        self.prefix = _prefix_ids(segments, int(self.depth.max(initial=0)))
        # name[i, d]: an id of page i's (d+1)-th path segment alone (-1 past its depth): the same name under
        # another prefix is a template's part in another branch (a community's name, a floor plan's)
        self.name = _segment_ids(segments, self.prefix.shape[1])
        parent = np.full(self.n, -1, dtype=np.int64)
        for i, s in enumerate(segments):
            for up in range(len(s) - 1, -1, -1):
                found = by_path.get("/".join(s[:up]))
                if found is not None and found != i:
                    parent[i] = found
                    break
        self.parent = parent

    @cached_property
    def descendants(self) -> np.ndarray:
        """How many pages lie below each page in the URL tree (its section's size)."""
        count = np.zeros(self.n, dtype=np.int64)
        above = self.parent.copy()
        while (held := above >= 0).any():
            np.add.at(count, above[held], 1)
            above[held] = self.parent[above[held]]
        return count

    def groups(self, above: int = 0) -> dict[int, np.ndarray]:
        """{parent: the pages right below it} for the parents with more than `above` such pages."""
        has_parent = np.flatnonzero(self.parent >= 0)
        groups = (
            pl.DataFrame({"page": has_parent, "parent": self.parent[has_parent]})
            .group_by("parent", maintain_order=True)
            .agg("page")
            .filter(pl.col("page").list.len() > above)
        )
        return {parent: np.asarray(pages, dtype=np.int64) for parent, pages in groups.iter_rows()}

    def pairs(
        self, vectors: np.ndarray, options: CandidateOptions, siblings_found: set[int] = frozenset()
    ) -> pl.DataFrame:
        """Parent, the most similar children, the most similar siblings of every page (but of the pages
        below the `siblings_found` parents, whose siblings are searched elsewhere)."""
        has_parent = np.flatnonzero(self.parent >= 0)
        frames = [
            pl.DataFrame({"source": has_parent, "target": self.parent[has_parent]}),
        ]
        for parent, members in self.groups().items():
            frames.append(self._nearest(parent, members, vectors, options.children_per_page, parent_row=True))
            if len(members) > 1 and parent not in siblings_found:
                idx, _ = exact_top(
                    vectors[members], vectors[members], min(options.siblings_per_page + 1, len(members)),
                    query_ids=np.arange(len(members)),
                )  # fmt: skip
                frames.append(
                    pl.DataFrame({"source": np.repeat(members, idx.shape[1]), "target": members[idx.ravel()]})
                )
        return pl.concat(frames)

    @staticmethod
    def _nearest(
        parent: int, members: np.ndarray, vectors: np.ndarray, k: int, parent_row: bool
    ) -> pl.DataFrame:
        if len(members) > k:
            scores = vectors[members] @ vectors[parent]
            members = members[np.argsort(-scores, kind="stable")[:k]]
        return pl.DataFrame({"source": np.full(len(members), parent, dtype=np.int64), "target": members})

    def relations(self, source: np.ndarray, target: np.ndarray) -> dict[str, np.ndarray]:
        """is_parent (target is the source's parent), is_child, is_sibling, same_section, tree_distance,
        template_twin (their paths hold the same name at the same depth below different prefixes: parts of
        a template in two branches, as the same floor plan, or floor plans of same-named communities, in
        two cities), the pages' depths."""
        ps, pt = self.parent[source], self.parent[target]
        common = np.zeros(len(source), dtype=np.int64)
        twin = np.zeros(len(source), dtype=bool)
        for start in range(0, len(source), CHUNK_ROWS):
            part = slice(start, start + CHUNK_ROWS)
            left = self.prefix[source[part]]
            same = (left == self.prefix[target[part]]) & (left >= 0)
            common[part] = np.cumprod(same, axis=1).sum(axis=1)
            # the same name at the same depth below different prefixes
            names = self.name[source[part]]
            renamed = (names == self.name[target[part]]) & (names >= 0)
            twin[part] = (renamed[:, 1:] & ~same[:, :-1]).any(axis=1)
        distance = self.depth[source] + self.depth[target] - 2 * common
        return {
            "is_parent": (ps == target).astype(np.float32),
            "is_child": (pt == source).astype(np.float32),
            "is_sibling": ((ps == pt) & (ps >= 0)).astype(np.float32),
            "same_section": (common >= 1).astype(np.float32),
            "tree_distance": distance.astype(np.float32),
            "template_twin": twin.astype(np.float32),
            "source_depth": self.depth[source].astype(np.float32),
            "target_depth": self.depth[target].astype(np.float32),
        }


def _segment_ids(segments: list[list[str]], depth: int) -> np.ndarray:
    """An id per distinct path segment name, by page and depth; -1 past a page's depth."""
    ids: dict[str, int] = {}
    name = np.full((len(segments), max(depth, 1)), -1, dtype=np.int64)
    for i, parts in enumerate(segments):
        for d, part in enumerate(parts):
            name[i, d] = ids.setdefault(part, len(ids))
    return name


def _prefix_ids(segments: list[list[str]], depth: int) -> np.ndarray:
    """An id per distinct path prefix, by page and prefix length; -1 past a page's depth."""
    ids: dict[tuple[str, ...], int] = {}
    prefix = np.full((len(segments), max(depth, 1)), -1, dtype=np.int64)
    for i, parts in enumerate(segments):
        for d in range(len(parts)):
            prefix[i, d] = ids.setdefault(tuple(parts[: d + 1]), len(ids))
    return prefix
