"""Resources: the DuckDB warehouse and the crawl drop folder."""

from pathlib import Path

import polars as pl
from dagster import ConfigurableResource
from pydantic import Field

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest import inbox
from interlink_pipeline.core.warehouse import snapshot
from interlink_pipeline.core.warehouse import store as warehouse
from interlink_pipeline.core.warehouse.contract import ValidationReport
from interlink_pipeline.core.warehouse.database import LOCK_TIMEOUT_S, files_folder


class Warehouse(ConfigurableResource):
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

    def kept_state(self, site: str) -> Path:
        """Where a site's steps keep what their next run starts from (models, indexes, neighbour lists):
        models/<site>/ in the warehouse's files folder (database.files_folder)."""
        return files_folder(self.path) / "models" / site

    def analyst_snapshot(self) -> Path:
        return snapshot.snapshot_path(self.path, self.snapshot_path)

    def replace_site_rows(
        self, site: str, frames: dict[str, pl.DataFrame | warehouse.RowChanges]
    ) -> dict[str, ValidationReport]:
        return warehouse.replace_site_rows(self.path, site, frames, lock_timeout_s=self.lock_timeout_s)

    def read_site(self, table: str, site: str, columns: list[str] | None = None) -> pl.DataFrame:
        return warehouse.read_site(self.path, table, site, columns, lock_timeout_s=self.lock_timeout_s)

    def read_site_required(
        self, table: str, site: str, step: str, columns: list[str] | None = None
    ) -> pl.DataFrame:
        """A site's rows of a table the calling step cannot run without: none is an InputError that names
        the `step` that writes them."""
        rows = self.read_site(table, site, columns)
        if rows.is_empty():
            raise InputError(f"{table} has no rows for {site}: materialise {step} for it first.")
        return rows

    def tables(self) -> set[str]:
        """The tables the file holds now (schema.table)."""
        found = self.query("SELECT schema_name || '.' || table_name AS t FROM duckdb_tables()")
        return set(found["t"].to_list())

    def query(self, sql: str, params: list[object] | None = None) -> pl.DataFrame:
        return warehouse.query(self.path, sql, params or [], lock_timeout_s=self.lock_timeout_s)


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

    def queries_file(self, site: str, name: str | None) -> Path | None:
        """The queries file named in config, else the newest '*quer*'/'*keyword*' file there (optional)."""
        if name:
            return inbox.resolve_export(self.root, site, name)
        return inbox.latest_exports(inbox.site_folder(self.root, site)).get("queries")
