"""A site's tables in one warehouse, as the core's steps read and write them: the shell's Warehouse
resource is one (it adds the settings' descriptions), so a core entry point takes the resource as it is."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.warehouse import snapshot, store
from interlink_pipeline.core.warehouse.contract import ValidationReport
from interlink_pipeline.core.warehouse.database import files_folder, query


class SiteTables:
    """The warehouse at `path` (a DuckDB file or a DuckLake), opened with `lock_timeout_s`."""

    path: str
    lock_timeout_s: float
    snapshot_path: str

    def kept_state(self, site: str) -> Path:
        """Where a site's steps keep what their next run starts from (models, indexes, neighbour lists):
        models/<site>/ in the warehouse's files folder (database.files_folder)."""
        return files_folder(self.path) / "models" / site

    def analyst_snapshot(self) -> Path:
        return snapshot.snapshot_path(self.path, self.snapshot_path)

    def replace_site_rows(
        self, site: str, frames: dict[str, pl.DataFrame | store.RowChanges | store.SpilledRows]
    ) -> dict[str, ValidationReport]:
        return store.replace_site_rows(self.path, site, frames, lock_timeout_s=self.lock_timeout_s)

    def read_site(
        self,
        table: str,
        site: str,
        columns: list[str] | None = None,
        *,
        matching: pl.DataFrame | None = None,
    ) -> pl.DataFrame:
        return store.read_site(
            self.path, table, site, columns, matching=matching, lock_timeout_s=self.lock_timeout_s
        )

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
        return query(self.path, sql, params or [], lock_timeout_s=self.lock_timeout_s)


def standing_decisions(decisions: pl.DataFrame) -> pl.DataFrame:
    """Each link's newest decision in a decisions file's current version (graph.link_decisions rows): the
    one that stands."""
    current = decisions.filter(pl.col("superseded_at").is_null())
    return current.sort("decided_at", "source_file").unique(["site", "link_id"], keep="last")
