"""Broad targets: a page the site links from most of its topics (a continent, "Memory", the championship
every engine played) is linked only where a sentence of the source is about it, never as a related-links
entry: listed under a page's related links it tells the reader nothing of that page."""

from __future__ import annotations

import numpy as np
import polars as pl

MIN_TOPICS = 3  # under three topics, "most of them" says nothing of a page's breadth


def broad_pages(cluster_of: np.ndarray, linkers: pl.DataFrame) -> np.ndarray:
    """Per page, whether the pages that link it or are likely to (`linkers`: source, target page indices)
    come from more than half of the site's topics (`cluster_of`: each page's topic, -1 unknown)."""
    n = len(cluster_of)
    topics = int(np.unique(cluster_of[cluster_of >= 0]).size)
    broad = np.zeros(n, dtype=bool)
    if topics < MIN_TOPICS or linkers.is_empty():
        return broad
    pairs = linkers.filter(pl.col("source") < n, pl.col("target") < n)
    spread = (
        pairs.with_columns(pl.Series("topic", cluster_of[pairs["source"].to_numpy()]))
        .filter(pl.col("topic") >= 0)
        .group_by("target")
        .agg(pl.col("topic").n_unique().alias("topics"))
    )
    broad[spread.filter(pl.col("topics") > topics / 2)["target"].to_numpy()] = True
    return broad
