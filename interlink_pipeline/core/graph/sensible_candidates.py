"""The candidates a plan may use: sense before any score. None into a page of a shared name outside the
source's own branch (same_name.py); into a broad page (broad_targets.py) only those whose source's text names
it in a sentence that can take the link."""

from __future__ import annotations

import numpy as np
import polars as pl

from interlink_pipeline.core.graph.anchors import placed_mentions
from interlink_pipeline.core.graph.broad_targets import broad_pages
from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.graph.same_name import outside_branch
from interlink_pipeline.core.relevance.url_tree import UrlTree


def sensible_candidates(
    pages: pl.DataFrame,
    tree: UrlTree,
    name_groups: np.ndarray,
    cluster_of: np.ndarray,
    candidates: pl.DataFrame,
    existing: pl.DataFrame,
    options: PlanOptions,
) -> pl.DataFrame:
    """`candidates` (source, target page indices, probability, mention_offset, mention_words) less those a
    plan may not use (see the module's docstring); `existing`: the site's links (source, target, content),
    which with the likely candidates say which pages are broad."""
    far = outside_branch(tree, name_groups, candidates["source"].to_numpy(), candidates["target"].to_numpy())
    linkers = pl.concat(
        [
            existing.filter("content").select("source", "target"),
            candidates.filter(pl.col("probability") >= options.min_probability).select("source", "target"),
        ]
    )
    broad = broad_pages(cluster_of, linkers)[candidates["target"].to_numpy()]
    near = candidates.filter(pl.Series(~far, dtype=pl.Boolean))
    into_broad = pl.Series(broad[~far], dtype=pl.Boolean)
    named = placed_mentions(
        pages,
        near.filter(into_broad).select(
            "source", "target", pl.col("probability").alias("score"), pl.lit("contextual").alias("placement")
        ),
        candidates,
    ).filter(pl.col("mention_text").is_not_null())
    return pl.concat(
        [
            near.filter(~into_broad),
            near.filter(into_broad).join(named.select("source", "target"), on=["source", "target"]),
        ]
    )
