"""Duplicates: one row per URL key, and the key that tells near-duplicate content apart."""

from __future__ import annotations

import polars as pl

from interlink_pipeline.core.ingest.exclusions import EXCLUDED_COLUMNS
from interlink_pipeline.core.urls import stable_ids


def one_per_url_key(frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the rows without a reason, one per URL key; the others as duplicate_url exclusions).

    The URL without tracking parameters wins, then the shallowest, then the first crawled. Ranking a
    narrow key frame avoids copying every column twice."""
    keys = frame.filter(pl.col("reason").is_null()).select(
        "row_number", "url_key", "crawled_url", "had_tracking_params", "crawl_depth"
    )
    winners = keys.sort(
        ["had_tracking_params", pl.col("crawl_depth").fill_null(1 << 30), "row_number"]
    ).unique("url_key", keep="first", maintain_order=True)
    duplicates = (
        keys.join(winners.select("row_number"), on="row_number", how="anti")
        .join(winners.select("url_key", pl.col("crawled_url").alias("kept_url")), on="url_key")
        .join(
            frame.select(EXCLUDED_COLUMNS).drop("reason", "detail"),
            on=["row_number", "url_key", "crawled_url"],
        )
        .with_columns(
            pl.lit("duplicate_url").alias("reason"),
            (pl.lit("same page as ") + pl.col("kept_url")).alias("detail"),
        )
    )
    kept = frame.filter(pl.col("row_number").is_in(winners["row_number"].implode()))
    return kept, duplicates.select(EXCLUDED_COLUMNS)


def with_duplicate_key(pages: pl.DataFrame) -> pl.DataFrame:
    """`pages` with duplicate_key: near-duplicates only on strong evidence, the crawler's content hash or
    the same H1 and body text."""
    same_content = pl.when(pl.col("body_text").is_not_null()).then(
        pl.concat_str([pl.col("h1").fill_null(""), pl.col("body_text")], separator="\n")
    )
    content = pages.select(same_content.alias("content"))["content"]
    return pages.with_columns(
        pl.coalesce(
            pl.col("content_hash").str.strip_chars().replace("", None),
            pl.lit(stable_ids(content, 32)).alias("x"),
        ).alias("duplicate_key")
    )
