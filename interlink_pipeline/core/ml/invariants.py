"""The similarity and cluster invariants: what the similarity_pairs and topic_clusters steps check on the
rows they are about to write (a failure writes nothing)."""

from __future__ import annotations

import polars as pl

from interlink_pipeline.core.invariants import Invariant
from interlink_pipeline.core.ml.similarity import SimilarityOptions


def similarity_pairs_k_respected(pairs: pl.DataFrame, options: SimilarityOptions, pages: int) -> Invariant:
    """No page has more than k similar targets, and no target more than max_per_target sources."""
    similar = pairs.filter(pl.col("relation") == "similar")
    per_source = similar.group_by("source_page_id").len()["len"].max() or 0
    per_target = similar.group_by("target_page_id").len()["len"].max() or 0
    cap = options.max_per_target or pages
    return Invariant(
        "similarity_pairs_k_respected",
        per_source <= options.k and per_target <= cap,
        {
            "max_targets_per_page": per_source,
            "k": options.k,
            "max_sources_per_target": per_target,
            "max_per_target": cap,
        },
    )


def every_page_in_one_cluster(page_rows: pl.DataFrame, cluster_rows: pl.DataFrame, pages: int) -> Invariant:
    """Each of the site's `pages` is in exactly one cluster, and cluster sizes add up."""
    size_total = int(cluster_rows["size"].sum())
    return Invariant(
        "every_page_in_one_cluster",
        page_rows.height == pages and page_rows["page_id"].is_unique().all() and size_total == pages,
        {"pages": pages, "clustered": page_rows.height, "size_total": size_total},
    )
