"""serp.*: search API answers (the cache) and each page's results matched to the site's pages."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from interlink_pipeline.core.warehouse.schemas.bases import MD5_LENGTH, SiteTable, Table


class SerpCacheRow(Table, unique=("provider", "request_key")):
    """serp.cache: search API answers, shared by all sites and runs, refreshed after their TTL."""

    provider: str = pa.Field(description="The search API (serper).")
    request_key: str = pa.Field(
        str_length=MD5_LENGTH,
        description="MD5 of the request: query, results per page, result page, country, language.",
    )
    query: str = pa.Field(description="The search string sent, e.g. 'site:www.example.com hiking boots'.")
    result_page: pl.Int32 = pa.Field(ge=1, description="Which page of results (1 = the first).")
    fetched_at: pl.Datetime = pa.Field(description="When the answer arrived (UTC).")
    results: str = pa.Field(description="JSON list of the organic results: position, link, title.")
    result_count: pl.Int32 = pa.Field(ge=0, description="Organic results in the answer.")


class SerpResult(SiteTable, unique=("site", "page_id", "rank")):
    """serp.results: for each page's query, the search results, matched to the site's pages."""

    page_id: str = pa.Field(description="The page whose main query was searched.")
    query: str = pa.Field(description="The search string.")
    provider: str = pa.Field(
        isin=["serper", "local"], description="serper (Google via Serper) or local (BM25)."
    )
    rank: pl.Int32 = pa.Field(ge=1, description="Position in the results (1 = top).")
    result_url: str = pa.Field(description="The result's URL as returned.")
    result_title: str = pa.Field(nullable=True, description="The result's title as returned.")
    matched_page_id: str = pa.Field(
        nullable=True, description="The crawled page the result is (by URL key); null when it is not one."
    )
    fetched_at: pl.Datetime = pa.Field(description="When the results were fetched (UTC).")
