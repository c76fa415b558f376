"""raw.* and staging.*: the crawl exports as read, and the pages kept (or excluded) from them."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from interlink_pipeline.core.warehouse.schemas.bases import (
    MD5_LENGTH,
    PAGE_ID,
    PAGE_ID_LENGTH,
    FileRows,
    SiteTable,
)
from interlink_pipeline.core.warehouse.vocabularies import EXCLUSION_REASONS


class RawCrawlPage(FileRows):
    """raw.crawl_pages: the crawl export as read, one row per exported URL, canonical columns."""

    url: str = pa.Field(description="Address as exported.")
    content_type: str = pa.Field(nullable=True, description="Content Type (old exports: Content).")
    status_code: pl.Int32 = pa.Field(nullable=True, description="HTTP status code; 0 or null = no response.")
    status: str = pa.Field(nullable=True, description="HTTP status text.")
    indexability: str = pa.Field(nullable=True, description="Indexable / Non-Indexable.")
    indexability_status: str = pa.Field(nullable=True, description="Why a URL is non-indexable.")
    title: str = pa.Field(nullable=True, description="Title 1 as exported (branding included).")
    meta_description: str = pa.Field(nullable=True, description="Meta Description 1.")
    h1: str = pa.Field(nullable=True, description="H1-1.")
    h2: str = pa.Field(nullable=True, description="H2-1.")
    canonical_url: str = pa.Field(nullable=True, description="Canonical Link Element 1.")
    meta_robots: str = pa.Field(nullable=True, description="Meta Robots 1.")
    x_robots_tag: str = pa.Field(nullable=True, description="X-Robots-Tag 1.")
    rel_next: str = pa.Field(nullable=True, description='rel="next" 1.')
    rel_prev: str = pa.Field(nullable=True, description='rel="prev" 1 (set on page 2+ of a series).')
    redirect_url: str = pa.Field(nullable=True, description="Redirect URL.")
    crawl_depth: pl.Int32 = pa.Field(
        nullable=True, ge=0, description="Crawl Depth (clicks from the start URL)."
    )
    word_count: pl.Int32 = pa.Field(nullable=True, ge=0, description="Word Count.")
    inlinks: pl.Int32 = pa.Field(nullable=True, ge=0, description="Inlinks (every link, repeats counted).")
    unique_inlinks: pl.Int32 = pa.Field(
        nullable=True, ge=0, description="Unique Inlinks (pages linking to it, once each)."
    )
    main_query: str = pa.Field(nullable=True, description="The page's main search query, when mapped.")
    custom_text: str = pa.Field(nullable=True, description="A user-mapped text column (e.g. an extraction).")
    content_hash: str = pa.Field(
        nullable=True, description="The crawler's hash of the page's content (Hash)."
    )
    extra: str = pa.Field(nullable=True, description="JSON object of the extra_columns kept from the export.")


class RawCrawlLink(FileRows):
    """raw.crawl_links: the All Inlinks export as read: the site's existing links."""

    link_type: str = pa.Field(nullable=True, description="Type: Hyperlink, Canonical, Image, JavaScript, …")
    source_url: str = pa.Field(description="Source: the page holding the link.")
    target_url: str = pa.Field(description="Destination: the page linked to.")
    anchor: str = pa.Field(nullable=True, description="Anchor text.")
    alt_text: str = pa.Field(nullable=True, description="Alt text (image links).")
    status_code: pl.Int32 = pa.Field(nullable=True, description="Status code of the destination.")
    follow: bool = pa.Field(description="Whether the link is followed (missing Follow column: true).")
    rel: str = pa.Field(nullable=True, description="rel attribute.")
    link_position: str = pa.Field(
        nullable=True, description="Header, Navigation, Content, Sidebar, Footer, Head."
    )
    link_path: str = pa.Field(nullable=True, description="XPath of the link element.")
    link_origin: str = pa.Field(nullable=True, description="HTML or Rendered HTML.")


class RawPageText(FileRows):
    """raw.page_text: the page-text file as read (optional): each page's body text, by URL."""

    url: str = pa.Field(description="Address as given.")
    text: str = pa.Field(nullable=True, description="The page's body text.")


class RawSearchConsole(FileRows):
    """raw.search_console: the Search Console export as read (optional): the Performance report's Pages
    table, each page's clicks, impressions, CTR and average position (a page listed twice: its row with the
    most impressions)."""

    url: str = pa.Field(description="The page, as Search Console gives it.")
    clicks: pl.Int64 = pa.Field(nullable=True, ge=0, description="Clicks from Google Search.")
    impressions: pl.Int64 = pa.Field(ge=0, description="Impressions in Google Search.")
    ctr: pl.Float64 = pa.Field(nullable=True, ge=0, le=1, description="Click-through rate, as a share (0–1).")
    position: pl.Float64 = pa.Field(ge=0, description="Average position in Google Search.")


class Page(SiteTable, unique=("site", "page_id")):
    """staging.pages: the pages worth linking: indexable HTML 200, de-duplicated, titles de-branded."""

    page_id: str = pa.Field(str_length=PAGE_ID_LENGTH, description=PAGE_ID)
    url: str = pa.Field(description="URL a link should point to (fragment and tracking parameters removed).")
    url_key: str = pa.Field(description="Identity key: host + path without trailing slash + sorted query.")
    crawled_url: str = pa.Field(description="Address as crawled.")
    is_home: bool = pa.Field(description="The site's home page (exactly one per site).")
    path: str = pa.Field(description="URL path.")
    section: str = pa.Field(description="First path segment ('' for the home page).")
    title: str = pa.Field(nullable=True, description="Title with the site's branding removed.")
    title_raw: str = pa.Field(nullable=True, description="Title as crawled.")
    h1: str = pa.Field(nullable=True, description="First H1.")
    meta_description: str = pa.Field(nullable=True, description="Meta description.")
    body_text: str = pa.Field(
        nullable=True,
        description="Body text, from the page-text file or a mapped custom_text column (first "
        "20,000 characters); null when the site supplies none.",
    )
    duplicate_key: str = pa.Field(
        nullable=True,
        description="Pages sharing it are near-duplicates: the crawler's content hash, else a hash of H1 + "
        "body text when there is body text; null when there is no strong evidence.",
    )
    text: str = pa.Field(str_length={"min_value": 1}, description="Text that represents the page (embedded).")
    text_source: str = pa.Field(description="Which field `text` came from (after fallbacks).")
    text_hash: str = pa.Field(str_length=MD5_LENGTH, description="MD5 of `text`.")
    crawl_depth: pl.Int32 = pa.Field(nullable=True, ge=0, description="Crawl depth in the crawl.")
    crawl_inlinks: pl.Int32 = pa.Field(
        nullable=True,
        ge=0,
        description="In-links the crawl counted (Unique Inlinks, else Inlinks); null when it has neither. "
        "Without an All Inlinks export the plan knows the existing links by these counts only.",
    )
    word_count: pl.Int32 = pa.Field(nullable=True, ge=0, description="Word count.")
    main_query: str = pa.Field(nullable=True, description="Main query, when supplied.")
    crawl_id: str = pa.Field(description="The crawl these pages came from.")
    row_number: pl.Int64 = pa.Field(ge=1, description="Row in the crawl export.")

    @pa.dataframe_check(description="exactly one home page per site")
    def one_home_page(cls, data) -> pl.LazyFrame:
        return data.lazyframe.group_by("site").agg(pl.col("is_home").sum() == 1).select(pl.col("is_home"))

    @pa.dataframe_check(description="URL keys are unique per site")
    def unique_url_key(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(~pl.struct("site", "url_key").is_duplicated())


class ExcludedPage(SiteTable, unique=("site", "row_number")):
    """staging.excluded_pages: every crawled row not kept as a page, with the reason."""

    crawled_url: str = pa.Field(description="Address as crawled.")
    url_key: str = pa.Field(nullable=True, description="Identity key (null for invalid URLs).")
    reason: str = pa.Field(isin=list(EXCLUSION_REASONS), description="Why the row is not a page.")
    detail: str = pa.Field(nullable=True, description="Specifics: status, redirect or canonical target, …")
    status_code: pl.Int32 = pa.Field(nullable=True, description="HTTP status code.")
    crawl_id: str = pa.Field(description="The crawl the row came from.")
    row_number: pl.Int64 = pa.Field(ge=1, description="Row in the crawl export.")
