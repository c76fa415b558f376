"""Cleaning a raw crawl into the pages worth linking (`staging.pages`) and the rest with a reason.

Every raw row ends in exactly one of the two tables; the reasons, in the order they are tried, are in
exclusions.py.
"""

from __future__ import annotations

import polars as pl

from interlink_pipeline.core.ingest.branding import debranded_titles
from interlink_pipeline.core.ingest.cleaning_options import CleanedPages, CleaningOptions
from interlink_pipeline.core.ingest.duplicates import one_per_url_key, with_duplicate_key
from interlink_pipeline.core.ingest.exclusions import EXCLUDED_COLUMNS, with_reasons
from interlink_pipeline.core.ingest.page_text import with_text
from interlink_pipeline.core.urls import stable_ids, url_parts

# The raw columns cleaning reads (raw.crawl_pages also keeps h2, extra, load metadata, …).
CLEANING_INPUTS = [
    "site",
    "crawl_id",
    "row_number",
    "url",
    "content_type",
    "status_code",
    "status",
    "indexability",
    "indexability_status",
    "title",
    "meta_description",
    "h1",
    "canonical_url",
    "meta_robots",
    "x_robots_tag",
    "rel_prev",
    "redirect_url",
    "crawl_depth",
    "inlinks",
    "unique_inlinks",
    "word_count",
    "main_query",
    "custom_text",
    "content_hash",
]
# The columns of staging.pages, in order.
PAGE_COLUMNS = [
    "site",
    "page_id",
    "url",
    "url_key",
    "crawled_url",
    "is_home",
    "path",
    "section",
    "title",
    "title_raw",
    "h1",
    "meta_description",
    "body_text",
    "duplicate_key",
    "text",
    "text_source",
    "text_hash",
    "crawl_depth",
    "crawl_inlinks",
    "word_count",
    "main_query",
    "crawl_id",
    "row_number",
]


def clean_pages(
    raw: pl.DataFrame,
    site: str,
    options: CleaningOptions | None = None,
    page_text: pl.DataFrame | None = None,
) -> CleanedPages:
    """Split `raw` (a `raw.crawl_pages` frame for one site) into kept pages and excluded rows.

    `page_text` (url, text: a `raw.page_text` frame) gives the pages' body text, matched by URL key; a
    mapped custom_text column fills it for pages it does not cover."""
    options = options or CleaningOptions()
    status_known = raw["status_code"].is_not_null().any()
    frame = with_reasons(_with_url_parts(raw), site, status_known, options)
    dropped = frame.filter(pl.col("reason").is_not_null()).select(EXCLUDED_COLUMNS)
    keepers, duplicates = one_per_url_key(frame)
    del frame
    keepers, branding, titles_debranded = debranded_titles(keepers, options)
    keepers = with_duplicate_key(with_text(keepers, options.text_source, page_text))
    no_text = keepers.filter(pl.col("text").is_null()).with_columns(
        pl.lit("no_text").alias("reason"), pl.lit("no title, H1 or meta description").alias("detail")
    )
    pages = _page_rows(keepers.filter(pl.col("text").is_not_null()))
    excluded = pl.concat([dropped, duplicates, no_text.select(EXCLUDED_COLUMNS)]).sort("row_number")
    home = pages.filter(pl.col("is_home"))["url"]
    return CleanedPages(pages, excluded, branding, titles_debranded, home[0] if home.len() else None)


def _with_url_parts(raw: pl.DataFrame) -> pl.DataFrame:
    """The cleaning inputs (the URL as crawled_url) with the URL's parts and the canonical URL's key."""
    canonical = url_parts(raw["canonical_url"])
    return pl.concat(
        [raw.select(CLEANING_INPUTS).rename({"url": "crawled_url"}), url_parts(raw["url"])], how="horizontal"
    ).with_columns(
        pl.when(canonical["url_valid"]).then(canonical["url_key"]).otherwise(None).alias("canonical_key")
    )


def _page_rows(pages: pl.DataFrame) -> pl.DataFrame:
    """The `staging.pages` rows: the home page flagged, ids, text hash and section added."""
    pages = _with_home(pages)
    return pages.with_columns(
        stable_ids(pages["url_key"]).alias("page_id"),
        stable_ids(pages["text"], 32).alias("text_hash"),
        pl.col("path").str.extract(r"^/([^/?#]+)", 1).fill_null("").alias("section"),
        pl.coalesce("unique_inlinks", "inlinks").alias("crawl_inlinks"),
    ).select(PAGE_COLUMNS)


def _with_home(pages: pl.DataFrame) -> pl.DataFrame:
    """Flag one home page: the root URL, else the shallowest page, else the shortest URL."""
    if pages.is_empty():
        return pages.with_columns(pl.lit(False).alias("is_home"))
    home_row = (
        pages.select(
            pl.col("row_number"),
            (pl.col("path") != "/").alias("not_root"),
            pl.col("crawl_depth").fill_null(1 << 30).alias("depth"),
            pl.col("url").str.len_chars().alias("length"),
        )
        .sort(["not_root", "depth", "length", "row_number"])
        .item(0, "row_number")
    )
    return pages.with_columns((pl.col("row_number") == home_row).alias("is_home"))
