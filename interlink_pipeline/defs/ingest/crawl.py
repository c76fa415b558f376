"""Ingest assets: raw_crawl, raw_links, raw_page_text and pages (one partition per site)."""

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl
from dagster import AssetExecutionContext, Config, MetadataValue
from pydantic import Field

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.cleaning_options import CleaningOptions
from interlink_pipeline.core.ingest.crawl_exports import (
    LoadedExport,
    read_crawl_export,
    read_links_export,
    read_page_text,
)
from interlink_pipeline.core.ingest.exclusions import rule_warnings
from interlink_pipeline.core.ingest.pages import clean_pages
from interlink_pipeline.core.warehouse.contract import empty_frame
from interlink_pipeline.defs.groups import INGEST
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.previews import counts_preview, table_preview
from interlink_pipeline.defs.resources import CrawlInbox, Warehouse
from interlink_pipeline.defs.settings import options_from, settings_config
from interlink_pipeline.defs.tables import site_asset
from interlink_pipeline.defs.writes import persist, user_errors


class RawCrawlConfig(Config):
    crawl_file: str | None = Field(
        default=None,
        description="Export to load, relative to the site's drop folder; default: the newest crawl "
        "export there.",
    )
    column_map: dict[str, str] = Field(
        default_factory=dict,
        description="Canonical field -> header in your file, for other crawlers or custom columns "
        "(e.g. {'url': 'Page', 'title': 'Page Title', 'main_query': 'Keyword', 'custom_text': 'Body'}).",
    )
    encoding: str | None = Field(
        default=None, description="Force a text encoding (default: detect UTF-8/16)."
    )
    sheet: str | None = Field(default=None, description="XLSX sheet (default: the first with a URL column).")
    extra_columns: list[str] = Field(
        default_factory=list, description="Other headers to keep, as JSON in raw.crawl_pages.extra."
    )


class OptionalExportConfig(Config):
    """How an optional export (links, page text) is read."""

    column_map: dict[str, str] = Field(default_factory=dict, description="Canonical field -> header.")
    encoding: str | None = Field(default=None, description="Force a text encoding.")


class RawLinksConfig(OptionalExportConfig):
    links_file: str | None = Field(
        default=None,
        description="All Inlinks export, relative to the site's drop folder; default: the newest '*inlinks*' "
        "file there. Without one, the site's existing links are unknown (raw.crawl_links stays empty).",
    )


class RawPageTextConfig(OptionalExportConfig):
    text_file: str | None = Field(
        default=None,
        description="Page-text file (Address + Text), relative to the site's drop folder; default: the "
        "newest file with the word 'text' in its name there. Without one, pages have no body text.",
    )


class PagesConfig(settings_config(CleaningOptions)):
    """How the crawl is cleaned: the settings of CleaningOptions (core/ingest/pages.py)."""


@site_asset("raw.crawl_pages", group=INGEST)
def raw_crawl(
    context: AssetExecutionContext, config: RawCrawlConfig, warehouse: Warehouse, inbox: CrawlInbox
):
    """The site's crawl export (Screaming Frog Internal: HTML/All, any language, CSV or XLSX) as read."""
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        path = inbox.crawl_export(site, config.crawl_file)
        loaded = read_crawl_export(
            path,
            site,
            column_map=config.column_map,
            encoding=config.encoding,
            sheet=config.sheet,
            extra_columns=config.extra_columns,
        )
    frame = loaded.frame
    metadata = {
        "crawl_id": loaded.crawl_id,
        "source_file": MetadataValue.path(str(path)),
        "columns_mapped": table_preview(
            pl.DataFrame({"field": list(loaded.mapped), "header": list(loaded.mapped.values())}), 40
        ),
        "columns_ignored": len(loaded.ignored_columns),
        "rows_without_url_skipped": loaded.rows_without_url,
        "status_codes": counts_preview(frame, "status_code"),
        "preview": table_preview(frame.select("url", "status_code", "indexability", "title")),
    }
    yield from persist(context, warehouse, site, {"raw.crawl_pages": frame}, metadata, started)


def persist_optional_export(
    context: AssetExecutionContext,
    warehouse: Warehouse,
    table: str,
    find: Callable[[str], Path | None],
    read: Callable[[Path, str], LoadedExport],
    describe: Callable[[pl.DataFrame], dict],
    missing: str,
) -> Iterator:
    """Read an optional export into `table` (its rows replace the site's), or empty the table, saying
    `missing`, when the drop folder has none."""
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        path = find(site)
        loaded = read(path, site) if path else None
    if loaded is None:
        context.log.info(f"{site}: {missing}")
        metadata = {"source_file": "none (optional file not provided)"}
        yield from persist(context, warehouse, site, {table: empty_frame(table)}, metadata, started)
        return
    metadata = {
        "crawl_id": loaded.crawl_id,
        "source_file": MetadataValue.path(str(path)),
        **describe(loaded.frame),
    }
    if loaded.warning:
        context.log.warning(f"{site}: {loaded.warning}")
        metadata["warning"] = loaded.warning
    yield from persist(context, warehouse, site, {table: loaded.frame}, metadata, started)


@site_asset("raw.crawl_links", group=INGEST, deps=["raw.crawl_pages"])  # a crawl that fails stops its links
def raw_links(
    context: AssetExecutionContext, config: RawLinksConfig, warehouse: Warehouse, inbox: CrawlInbox
):
    """The site's All Inlinks export (optional): the existing link graph, with each link's position."""
    yield from persist_optional_export(
        context,
        warehouse,
        "raw.crawl_links",
        lambda site: inbox.links_export(site, config.links_file),
        lambda path, site: read_links_export(
            path, site, column_map=config.column_map, encoding=config.encoding
        ),
        lambda frame: {
            "link_positions": counts_preview(frame, "link_position", "links"),
            "link_types": counts_preview(frame, "link_type", "links"),
            "nofollow_links": int((~frame["follow"]).sum()),
            "preview": table_preview(frame.select("source_url", "target_url", "anchor", "link_position")),
        },
        "no All Inlinks export in the drop folder; existing links are unknown.",
    )


@site_asset("raw.page_text", group=INGEST, deps=["raw.crawl_pages"])
def raw_page_text(
    context: AssetExecutionContext, config: RawPageTextConfig, warehouse: Warehouse, inbox: CrawlInbox
):
    """The site's page-text file (optional): each page's body text, for text features and anchors."""

    def describe(frame: pl.DataFrame) -> dict:
        lengths = frame["text"].str.len_chars().fill_null(0)
        return {
            "pages_with_text": int((lengths > 0).sum()),
            "median_characters": int(lengths.median() or 0),
            "preview": table_preview(frame.select("url", pl.col("text").str.slice(0, 120).alias("text"))),
        }

    yield from persist_optional_export(
        context,
        warehouse,
        "raw.page_text",
        lambda site: inbox.text_file(site, config.text_file),
        lambda path, site: read_page_text(path, site, column_map=config.column_map, encoding=config.encoding),
        describe,
        "no page-text file in the drop folder; pages have no body text.",
    )


@site_asset(
    "staging.pages", "staging.excluded_pages", group=INGEST, deps=["raw.crawl_pages", "raw.page_text"]
)
def pages(context: AssetExecutionContext, config: PagesConfig, warehouse: Warehouse):
    """Pages worth linking: indexable HTML 200, de-duplicated, titles de-branded; every drop has a reason."""
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        raw = warehouse.read_site_required("raw.crawl_pages", site, "raw_crawl")
        options = options_from(config, CleaningOptions)
        cleaned = clean_pages(raw, site, options, warehouse.read_site("raw.page_text", site, ["url", "text"]))
        kept, excluded = cleaned.pages, cleaned.excluded
        if kept.is_empty():
            reasons = ", ".join(f"{r} {n}" for r, n in excluded["reason"].value_counts(sort=True).rows())
            raise InputError(
                f"no page of {site}'s crawl is worth linking: all {raw.height} rows are excluded "
                f"({reasons}). Crawl the site's indexable HTML pages; raw.crawl_pages holds the rows "
                "as read, and the previous pages are kept."
            )
    warnings = rule_warnings(cleaned)
    for warning in warnings:
        context.log.warning(f"{site}: {warning}")
    metadata = {
        **({"warning": " ".join(warnings)} if warnings else {}),
        "pages_kept": kept.height,
        "rows_excluded": excluded.height,
        "kept_share": MetadataValue.float(kept.height / max(1, raw.height)),
        "excluded_by_reason": counts_preview(excluded, "reason"),
        "branding_removed": cleaned.branding or "none detected",
        "titles_debranded": cleaned.titles_debranded,
        "text_sources": counts_preview(kept, "text_source", "pages"),
        "pages_with_body_text": int(kept["body_text"].is_not_null().sum()),
        "home_page": MetadataValue.url(cleaned.home_url) if cleaned.home_url else "none",
        "sections": counts_preview(kept, "section", "pages"),
        "preview": table_preview(kept.select("url", "title_raw", "text", "text_source")),
        "excluded_preview": table_preview(
            excluded.group_by("reason").head(2).select("crawled_url", "reason", "detail"), 30
        ),
    }
    frames = {"staging.pages": kept, "staging.excluded_pages": excluded}
    yield from persist(context, warehouse, site, frames, metadata, started)
