"""Keeping a DuckLake small: every run replaces its site's rows with new Parquet files and the replaced files
stay for time travel, so without maintenance the lake only grows. Maintenance merges each table's small
files, expires the snapshots older than the time-travel window and deletes the files only they used."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from interlink_pipeline.core.settings import setting
from interlink_pipeline.core.warehouse import lake
from interlink_pipeline.core.warehouse.database import connect


@dataclass(frozen=True)
class MaintenanceOptions:
    """How long replaced rows stay readable, and how long a file nothing reads is kept."""

    keep_snapshots_days: float = setting(
        7.0,
        "Time travel reaches this many days back: older snapshots are expired, and the files only they used "
        "are deleted.",
        ge=0,
    )
    file_grace_hours: float = setting(
        1.0,
        "A file is deleted this many hours after the last snapshot that read it expired or was compacted "
        "away, so a query still scanning it (an analyst's, a run's) finishes first.",
        ge=0,
    )


@dataclass(frozen=True)
class LakeFiles:
    snapshots: int
    live_files: int
    live_bytes: int


@dataclass(frozen=True)
class MaintenanceReport:
    before: LakeFiles
    after: LakeFiles
    files_deleted: int
    seconds: float


def lake_files(location: str | Path) -> LakeFiles:
    """The lake's snapshots and the Parquet files its current snapshot reads."""
    with connect(location, read_only=True) as con:
        snapshots = con.execute(f"SELECT count(*) FROM {lake.ALIAS}.snapshots()").fetchone()[0]
        files, size = con.execute(
            f"SELECT count(*), coalesce(sum(file_size_bytes), 0) FROM __ducklake_metadata_{lake.ALIAS}"
            ".ducklake_data_file WHERE end_snapshot IS NULL"
        ).fetchone()
    return LakeFiles(snapshots, files, int(size))


def maintain(location: str | Path, options: MaintenanceOptions = MaintenanceOptions()) -> MaintenanceReport:
    """Merge each table's adjacent small files under that table's write lock (a run writing the table waits
    the seconds it takes instead of conflicting), expire old snapshots, delete the files nothing reads any
    more. Runs may write meanwhile: the figures before and after are the lake's at the start and the end."""
    before = lake_files(location)
    started = time.perf_counter()
    with connect(location) as con:
        listed = f"SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = '{lake.ALIAS}'"
        for schema, name in con.execute(listed).fetchall():
            lock = lake.MARTS_LOCK if schema == "marts" else f"{schema}.{name}"  # dbt's marts share one
            merge = f"CALL ducklake_merge_adjacent_files('{lake.ALIAS}', '{name}', schema => '{schema}')"
            with lake.table_locks(location, [lock]):
                lake.committed(lambda merge=merge: con.execute(merge))
        kept = f"now() - INTERVAL '{options.keep_snapshots_days * 86400:.0f} seconds'"
        expire = f"CALL ducklake_expire_snapshots('{lake.ALIAS}', older_than => {kept})"
        lake.committed(lambda: con.execute(expire))
        grace = f"now() - INTERVAL '{options.file_grace_hours * 3600:.0f} seconds'"
        cleanup = f"CALL ducklake_cleanup_old_files('{lake.ALIAS}', older_than => {grace})"
        deleted = con.execute(cleanup).fetchall()
    return MaintenanceReport(before, lake_files(location), len(deleted), time.perf_counter() - started)
