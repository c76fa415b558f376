"""The analysts' snapshot: a read-only copy of the warehouse that a reader can hold open without ever
blocking a run."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from interlink_pipeline.core.environment import environment
from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.files import replaced_atomically
from interlink_pipeline.core.warehouse.database import (
    LOCK_TIMEOUT_S,
    connect,
    sql_literal,
    waiting_for_lock,
)


def snapshot_path(warehouse_path: str | Path, configured: str = "") -> Path:
    """Where analysts read: as configured, else $INTERLINK_SNAPSHOT_PATH, else snapshots/<file> beside the
    warehouse (data/snapshots/interlink.duckdb by default)."""
    chosen = configured or environment().snapshot_path
    if chosen:
        return Path(chosen)
    warehouse_path = Path(warehouse_path)
    return warehouse_path.parent / "snapshots" / warehouse_path.name


def staged_snapshot(snapshot: Path, run_id: str) -> Path:
    """Where run `run_id` copies the snapshot before its last step publishes it (core/publish/publication)."""
    return snapshot.parent / ".staged" / run_id / snapshot.name


# Tables left out of the analyst snapshot: vectors, request caches and search state, large and of no use to
# a query.
SNAPSHOT_SKIPS = frozenset(
    {"ml.embedding_cache", "ml.page_embeddings", "ml.page_neighbours", "ml.candidate_pages", "serp.cache"}
)


def publish_snapshot(
    path: str | Path,
    snapshot: str | Path,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
    patching: tuple[Path, frozenset[str]] | None = None,
) -> dict[str, int]:
    """Copy every table (vectors and caches left out), with its table and column comments, into a new file
    beside `snapshot`, then rename it into place. Analysts query the snapshot: a reader never blocks a run,
    and a reader with the old file open keeps reading it while the next one appears. With `patching` (an
    earlier snapshot, some tables), the new file starts as a copy of that snapshot and only those tables
    are copied again: a run's measurement changes one table, and a file copy costs a fraction of copying
    them all (a missing earlier snapshot: every table). Returns the rows copied per table."""
    if not Path(path).exists():
        raise InputError(f"{path}: no warehouse file yet; materialise a site first.")
    if Path(snapshot).resolve() == Path(path).resolve():
        raise InputError(
            f"the analysts' snapshot ({snapshot}) is the warehouse itself: publishing would replace the "
            "warehouse with its copy; set INTERLINK_SNAPSHOT_PATH elsewhere (nothing was written)."
        )
    base, changed = patching if patching and patching[0].is_file() else (None, frozenset())
    copied: dict[str, int] = {}
    with replaced_atomically(Path(snapshot)) as partial:
        if base is None:
            partial.unlink()  # DuckDB creates the file itself
        else:
            shutil.copyfile(base, partial)
        with connect(partial) as con:
            target = _identifier(con.execute("SELECT current_database()").fetchone()[0])
            source_db = "interlink_warehouse"
            waiting_for_lock(
                lambda: con.execute(
                    f"ATTACH {sql_literal(str(path))} AS {_identifier(source_db)} (READ_ONLY)"
                ),
                Path(path),
                lock_timeout_s,
            )
            con.execute(f"USE {_identifier(source_db)}")
            relations = con.execute(
                "SELECT schema_name, table_name, comment FROM duckdb_tables() WHERE database_name = ? "
                "ORDER BY ALL",
                [source_db],
            ).fetchall()
            for schema, name, comment in relations:
                key = f"{schema}.{name}"
                if key in SNAPSHOT_SKIPS or (base is not None and key not in changed):
                    continue
                if base is not None:
                    con.execute(f"DROP TABLE IF EXISTS {target}.{_identifier(schema)}.{_identifier(name)}")
                copied[key] = _copy_table(con, source_db, target, schema, name, comment)
    return copied


def _copy_table(
    con: duckdb.DuckDBPyConnection, source_db: str, target: str, schema: str, name: str, comment: str | None
) -> int:
    """Copy one table of the attached warehouse into the snapshot, with its comments; returns its rows."""
    source = f"{_identifier(schema)}.{_identifier(name)}"
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {target}.{_identifier(schema)}")
    con.execute(f"CREATE TABLE {target}.{source} AS SELECT * FROM {source}")
    if comment:
        con.execute(f"COMMENT ON TABLE {target}.{source} IS {sql_literal(comment)}")
    for column, text in con.execute(
        "SELECT column_name, comment FROM duckdb_columns() WHERE database_name = ? AND "
        "schema_name = ? AND table_name = ? AND comment IS NOT NULL",
        [source_db, schema, name],
    ).fetchall():
        column = f"{target}.{source}.{_identifier(column)}"
        con.execute(f"COMMENT ON COLUMN {column} IS {sql_literal(text)}")
    return con.execute(f"SELECT count(*) FROM {target}.{source}").fetchone()[0]


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
