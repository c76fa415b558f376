"""The Search Console asset: raw_search_console (optional, one partition per site)."""

import polars as pl
from dagster import AssetExecutionContext
from pydantic import Field

from interlink_pipeline.core.ingest.search_console import crawled_rows, read_search_console
from interlink_pipeline.core.urls import url_parts
from interlink_pipeline.defs.groups import INGEST
from interlink_pipeline.defs.ingest.crawl import OptionalExportConfig, persist_optional_export
from interlink_pipeline.defs.previews import table_preview
from interlink_pipeline.defs.resources import CrawlInbox, Warehouse
from interlink_pipeline.defs.tables import site_asset


class RawSearchConsoleConfig(OptionalExportConfig):
    search_console_file: str | None = Field(
        default=None,
        description="Search Console export (Performance > Pages: Top pages, Clicks, Impressions, CTR, "
        "Position), relative to the site's drop folder; default: the newest file with 'console' in its name "
        "there. Without one, no page is raised as in striking distance.",
    )


@site_asset("raw.search_console", group=INGEST, deps=["raw.crawl_pages"])
def raw_search_console(
    context: AssetExecutionContext, config: RawSearchConsoleConfig, warehouse: Warehouse, inbox: CrawlInbox
):
    """The site's Search Console export (optional): each crawled page's clicks, impressions, CTR and
    position."""

    def describe(frame: pl.DataFrame) -> dict:
        return {
            "impressions": int(frame["impressions"].sum()),
            "median_position": float(frame["position"].median() or 0),
            "preview": table_preview(frame.select("url", "clicks", "impressions", "ctr", "position")),
        }

    def read(path, site: str):
        export = read_search_console(path, site, column_map=config.column_map, encoding=config.encoding)
        crawled = url_parts(warehouse.read_site("raw.crawl_pages", site, ["url"])["url"])["url_key"]
        return crawled_rows(export, crawled, path)

    yield from persist_optional_export(
        context,
        warehouse,
        "raw.search_console",
        lambda site: inbox.search_console_file(site, config.search_console_file),
        read,
        describe,
        "no Search Console export in the drop folder; no page is raised as in striking distance.",
    )
