"""Hybrid link candidates: SERP targets and semantically similar pages, merged per source page.

A target proposed by both gets both scores; the combined score is the weighted mean of the cosine
similarity (clipped at 0) and the SERP score, (depth - rank + 1) / depth, each 0 when absent. A page is
never its own candidate, and near-duplicates (duplicate content) are not link candidates.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from interlink_pipeline.core.errors import InputError


@dataclass(frozen=True)
class CandidateOptions:
    """Every field is a `link_candidates` config setting of the same name."""

    semantic_weight: float = 0.6
    serp_weight: float = 0.4
    serp_depth: int = 10  # SERP positions that count as evidence
    max_candidates: int = 20  # kept per source page


def merge_candidates(
    pairs: pl.DataFrame, serp: pl.DataFrame, options: CandidateOptions | None = None
) -> pl.DataFrame:
    """source_page_id, target_page_id, score, rank, provenance, semantic_score, serp_rank."""
    options = options or CandidateOptions()
    if (
        options.semantic_weight < 0
        or options.serp_weight < 0
        or options.semantic_weight + options.serp_weight == 0
    ):
        raise InputError("semantic_weight and serp_weight must be >= 0 and not both 0.")
    semantic = pairs.filter(pl.col("relation") == "similar").select(
        "source_page_id", "target_page_id", pl.col("score").cast(pl.Float32).alias("semantic_score")
    )
    duplicates = pairs.filter(pl.col("relation") == "near_duplicate").select(
        "source_page_id", "target_page_id"
    )
    searched = (
        serp.filter(
            pl.col("matched_page_id").is_not_null()
            & (pl.col("matched_page_id") != pl.col("page_id"))
            & (pl.col("rank") <= options.serp_depth)
        )
        .group_by(
            pl.col("page_id").alias("source_page_id"), pl.col("matched_page_id").alias("target_page_id")
        )
        .agg(pl.col("rank").min().cast(pl.Int32).alias("serp_rank"))
        .join(duplicates, on=["source_page_id", "target_page_id"], how="anti")
    )
    # sorted, so that the ordinal rank breaks score ties the same way every run
    merged = semantic.join(searched, on=["source_page_id", "target_page_id"], how="full", coalesce=True).sort(
        "source_page_id", "target_page_id"
    )
    serp_score = (options.serp_depth - pl.col("serp_rank") + 1) / options.serp_depth
    combined = (
        options.semantic_weight * pl.col("semantic_score").clip(lower_bound=0).fill_null(0)
        + options.serp_weight * serp_score.fill_null(0)
    ) / (options.semantic_weight + options.serp_weight)
    return (
        merged.with_columns(
            combined.cast(pl.Float32).alias("score"),
            pl.when(pl.col("semantic_score").is_not_null() & pl.col("serp_rank").is_not_null())
            .then(pl.lit("both"))
            .when(pl.col("semantic_score").is_not_null())
            .then(pl.lit("semantic"))
            .otherwise(pl.lit("serp"))
            .alias("provenance"),
        )
        .with_columns(
            pl.col("score")
            .rank("ordinal", descending=True)
            .over("source_page_id")
            .cast(pl.Int32)
            .alias("rank")
        )
        .filter(pl.col("rank") <= options.max_candidates)
        .sort(["source_page_id", "rank"])
        .select(
            "source_page_id", "target_page_id", "score", "rank", "provenance", "semantic_score", "serp_rank"
        )
    )
