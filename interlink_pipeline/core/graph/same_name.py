"""One name, the right branch. When several pages bear one name (the same floor plan in many communities,
two "The Meadows"), a page's link to that name means the one in its own branch of the URL tree: the page of
the name that shares the longest part of its path, alone. A link to another of them — or to any, when none
shares more of the source's path than another does, or when the source bears the name itself — says the
name, not the meaning: it is never planned."""

from __future__ import annotations

import numpy as np
import polars as pl

from interlink_pipeline.core.relevance.url_tree import UrlTree
from interlink_pipeline.core.text import page_name


def name_groups(pages: pl.DataFrame) -> np.ndarray:
    """Per page, an id of its name (text.page_name, in lower case) when another page bears it too, else
    -1."""
    names = [page_name(title, h1).lower() for title, h1 in pages.select("title", "h1").iter_rows()]
    frame = pl.DataFrame({"name": names}).with_row_index("page")
    shared = frame.filter((pl.col("name") != "") & (pl.col("name").count().over("name") > 1))
    group = np.full(len(names), -1, dtype=np.int64)
    group[shared["page"].to_numpy()] = shared["name"].rank("dense").to_numpy().astype(np.int64) - 1
    return group


def outside_branch(tree: UrlTree, group: np.ndarray, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """For each (source, target) page pair, whether the target is a page of a shared name (`group`) that is
    not the one in the source's own branch (see the module's docstring)."""
    named = group[target] >= 0
    out = np.zeros(len(source), dtype=bool)
    if not named.any():
        return out
    rows = np.flatnonzero(named)
    s, t, g = source[rows], target[rows], group[target[rows]]
    levels = tree.prefix.shape[1]
    members = np.flatnonzero(group >= 0)
    # how many pages of each name lie below each path prefix
    below = (
        pl.DataFrame(
            {
                "group": np.repeat(group[members], levels),
                "level": np.tile(np.arange(levels), len(members)),
                "prefix": tree.prefix[members].ravel(),
            }
        )
        .filter(pl.col("prefix") >= 0)
        .group_by("group", "level", "prefix")
        .len("pages")
    )
    own = (group[s] == g).astype(np.int64)  # the source bears the name: it is not one of the others
    best = np.zeros(len(rows), dtype=np.int64)  # the longest path a page of the name shares with the source
    alone = np.zeros(len(rows), dtype=bool)  # ... and whether one page alone shares it
    for level in range(levels):
        counted = pl.DataFrame({"group": g, "level": level, "prefix": tree.prefix[s, level]}).join(
            below, on=["group", "level", "prefix"], how="left", maintain_order="left"
        )["pages"].fill_null(0).to_numpy() - own * (tree.prefix[s, level] >= 0)
        deeper = counted >= 1
        best[deeper] = level + 1
        alone[deeper] = counted[deeper] == 1
    same = (tree.prefix[s] == tree.prefix[t]) & (tree.prefix[s] >= 0)
    common = np.cumprod(same, axis=1).sum(axis=1)
    right = (own == 0) & (best >= 1) & alone & (common == best)
    out[rows] = ~right
    return out
