"""Resources: the DuckDB warehouse and the crawl drop folder."""

from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest import inbox
from interlink_pipeline.core.warehouse.database import LOCK_TIMEOUT_S
from interlink_pipeline.core.warehouse.site_tables import SiteTables


class Warehouse(ConfigurableResource, SiteTables):
    """The warehouse every asset writes (and dbt and analysts read): a DuckDB file or a DuckLake."""

    path: str = Field(
        description="A DuckDB file, or a DuckLake `ducklake:postgres:dbname=... host=...`; default "
        "$INTERLINK_WAREHOUSE or data/interlink.duckdb."
    )
    lock_timeout_s: float = Field(
        default=LOCK_TIMEOUT_S,
        description="How long opening the file waits while another process holds its lock.",
    )
    snapshot_path: str = Field(
        default="",
        description="The analysts' read-only copy; default $INTERLINK_SNAPSHOT_PATH, else "
        "snapshots/<file name> beside the warehouse.",
    )


class CrawlInbox(ConfigurableResource):
    """The drop folder: one sub-folder per site (its normalised host) holding the crawl exports."""

    root: str = Field(description="Drop folder; default $INTERLINK_INBOX or data/inbox.")

    def crawl_export(self, site: str, name: str | None) -> Path:
        """The crawl export named in config, else the newest one in the site's folder."""
        if name:
            return inbox.resolve_export(self.root, site, name)
        crawl = inbox.latest_exports(inbox.site_folder(self.root, site)).get("crawl")
        if crawl is None:
            raise InputError(
                f"no crawl export in {inbox.site_folder(self.root, site)}; drop a Screaming Frog "
                "Internal: HTML export there (CSV or XLSX) or register one with `interlink register`."
            )
        return crawl

    def links_export(self, site: str, name: str | None) -> Path | None:
        """The All Inlinks export named in config, else the newest one in the site's folder (optional)."""
        if name:
            return inbox.resolve_export(self.root, site, name)
        return inbox.latest_exports(inbox.site_folder(self.root, site)).get("links")

    def text_file(self, site: str, name: str | None) -> Path | None:
        """The page-text file named in config, else the newest '*text*' file there (optional)."""
        if name:
            return inbox.resolve_export(self.root, site, name)
        return inbox.latest_exports(inbox.site_folder(self.root, site)).get("text")

    def search_console_file(self, site: str, name: str | None) -> Path | None:
        """The Search Console export named in config, else the newest '*console*' file there (optional)."""
        if name:
            return inbox.resolve_export(self.root, site, name)
        return inbox.latest_exports(inbox.site_folder(self.root, site)).get("search_console")

    def queries_file(self, site: str, name: str | None) -> Path | None:
        """The queries file named in config, else the newest '*quer*'/'*keyword*' file there (optional)."""
        if name:
            return inbox.resolve_export(self.root, site, name)
        return inbox.latest_exports(inbox.site_folder(self.root, site)).get("queries")
