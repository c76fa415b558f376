"""The DuckDB warehouse: table DDL from the schemas, validated per-site replaces, reads.

A site's write replaces that site's rows in every table it touches in one transaction: a rerun is
idempotent, and a failure (validation, disk, a killed process) leaves the previous rows in place.
DuckDB allows one writing process per file, so connections wait for a lock held elsewhere instead of
failing at once.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import duckdb
import pandera.polars as pa
import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.files import replaced_atomically
from interlink_pipeline.core.warehouse.schemas import TABLES

T = TypeVar("T")

DUCKDB_PATH_ENV = "INTERLINK_DUCKDB_PATH"
DEFAULT_DUCKDB_PATH = "data/interlink.duckdb"
# DuckDB may otherwise take 80% of RAM beside the model and polars; past the limit it spills to disk
# (measured on 1M page vectors: 5.5 GB peak without a limit, 1.9 GB with 1GB, and faster).
MEMORY_LIMIT_ENV = "INTERLINK_DUCKDB_MEMORY_LIMIT"
DEFAULT_MEMORY_LIMIT = "1GB"
LOCK_RETRY_S = 0.2
# Runs take turns on the file (the writer pool) and hold it for seconds at most between them; a lock held
# longer is someone else's session, which the user should hear about in seconds, not minutes.
LOCK_TIMEOUT_S = 10.0
NO_FAILURES = pl.DataFrame(schema={"column": pl.String, "check": pl.String, "failure_case": pl.String})


def default_duckdb_path() -> str:
    """The warehouse file: $INTERLINK_DUCKDB_PATH, else data/interlink.duckdb (relative to the cwd)."""
    return os.environ.get(DUCKDB_PATH_ENV) or DEFAULT_DUCKDB_PATH


class ContractError(RuntimeError):
    """A frame about to be written breaks its table's schema; nothing was written."""

    def __init__(self, reports: dict[str, ValidationReport]):
        super().__init__("\n".join(r.summary() for r in reports.values() if not r.passed))
        self.reports = reports


@dataclass(frozen=True)
class ValidationReport:
    table: str
    rows: int  # rows checked
    failures: pl.DataFrame  # pandera failure cases (empty when valid)
    stored_rows: int | None = None  # the site's rows in the table after the write, when not all were checked

    @property
    def passed(self) -> bool:
        return self.failures.is_empty()

    def summary(self, examples: int = 3) -> str:
        if self.passed:
            return f"{self.table}: {self.rows} rows match the schema."
        grouped = (
            self.failures.group_by("column", "check")
            .agg(pl.len().alias("n"), _shortened(pl.col("failure_case")).head(examples).alias("examples"))
            .sort("n", descending=True)
        )
        lines = [
            f"  - {row['column']}: {row['check']} failed for {row['n']} value(s), e.g. {row['examples']}"
            for row in grouped.iter_rows(named=True)
        ]
        return f"{self.table} breaks its schema ({self.rows} rows):\n" + "\n".join(lines)


def _shortened(cases: pl.Expr, limit: int = 100) -> pl.Expr:
    return pl.when(cases.str.len_chars() > limit).then(cases.str.slice(0, limit) + "…").otherwise(cases)


def validate(table: str, frame: pl.DataFrame) -> ValidationReport:
    model = _model(table)
    try:
        model.validate(frame, lazy=True)
    except pa.errors.SchemaErrors as exc:
        failures = exc.failure_cases.select(
            pl.col("column").cast(pl.String),
            pl.col("check").cast(pl.String),
            pl.col("failure_case").cast(pl.String),
        )
        return ValidationReport(table, frame.height, failures)
    return ValidationReport(table, frame.height, NO_FAILURES)


def duckdb_type(dtype: pl.DataType) -> str:
    if isinstance(dtype, pl.List):
        return f"{duckdb_type(dtype.inner)}[]"
    names = {
        pl.String: "VARCHAR",
        pl.Int32: "INTEGER",
        pl.Int64: "BIGINT",
        pl.UInt32: "UINTEGER",
        pl.UInt64: "UBIGINT",
        pl.Float32: "FLOAT",
        pl.Float64: "DOUBLE",
        pl.Boolean: "BOOLEAN",
        pl.Date: "DATE",
        pl.Datetime: "TIMESTAMP",
    }
    for polars_type, sql in names.items():
        if dtype == polars_type or isinstance(dtype, polars_type):
            return sql
    raise TypeError(f"no DuckDB type for {dtype}")


def table_columns(table: str) -> dict[str, tuple[pl.DataType, str]]:
    """Column name -> (polars dtype, description) for a warehouse table."""
    schema = _model(table).to_schema()
    return {name: (col.dtype.type, col.description or "") for name, col in schema.columns.items()}


def empty_frame(table: str) -> pl.DataFrame:
    """A frame with the table's columns and no rows."""
    return pl.DataFrame(schema={name: dtype for name, (dtype, _) in table_columns(table).items()})


def table_description(table: str) -> str:
    return (_model(table).__doc__ or "").strip()


@contextmanager
def connect(
    path: str | Path, *, read_only: bool = False, lock_timeout_s: float = LOCK_TIMEOUT_S
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection, waiting up to `lock_timeout_s` while another process holds the file's lock."""
    path = Path(path)
    if not read_only:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the warehouse folder {path.parent}: {exc.strerror}.") from None
    elif not path.exists():
        raise InputError(f"{path}: no warehouse file yet; materialise a site first.")
    # Frames are always registered by name; never let a query resolve a missing table to a Python
    # variable of the same name (DuckDB's replacement scans).
    config = {
        "python_enable_replacements": False,
        "memory_limit": os.environ.get(MEMORY_LIMIT_ENV) or DEFAULT_MEMORY_LIMIT,
    }
    con = _waiting_for_lock(
        lambda: duckdb.connect(str(path), read_only=read_only, config=config), path, lock_timeout_s
    )
    try:
        yield con
    except duckdb.Error as exc:
        problem = storage_problem(str(exc))
        if problem is None:
            raise
        raise InputError(
            f"cannot write the warehouse {path}: {problem}. Nothing was written (the transaction was rolled "
            f"back; the previous rows are kept). Free space or fix the permissions, or set {DUCKDB_PATH_ENV} "
            "to another place."
        ) from None
    finally:
        con.close()


def storage_problem(message: str) -> str | None:
    """The storage fault behind a DuckDB error (disk full, read-only), or None for any other error."""
    lowered = message.lower()
    if "no space left" in lowered or "disk quota" in lowered:
        return "the disk is full (No space left on device)"
    if "read-only file system" in lowered or "permission denied" in lowered:
        return "the file or its folder is read-only"
    return None


# DuckDB (1.5) raises IOException both for a file another process holds and for a damaged one; the lock
# conflict is told by its own message, never by "lock" anywhere (a damaged "block" is not a lock).
_LOCK_CONFLICT = re.compile(r"Could not set lock on file|Conflicting lock is held")
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")
_DAMAGED = re.compile(r"Corrupt database file|not a valid DuckDB database file|checksum", re.IGNORECASE)


def lock_conflict(exc: duckdb.Error) -> bool:
    """Whether `exc` says another process holds the file's lock."""
    return isinstance(exc, duckdb.IOException) and bool(_LOCK_CONFLICT.search(str(exc)))


def _waiting_for_lock(open_file: Callable[[], T], path: Path, lock_timeout_s: float) -> T:
    """open_file(), retried while another process holds the file's lock, for up to lock_timeout_s."""
    deadline = time.monotonic() + lock_timeout_s
    while True:
        try:
            return open_file()
        except duckdb.IOException as exc:
            message = str(exc)
            if lock_conflict(exc) and time.monotonic() < deadline:
                time.sleep(LOCK_RETRY_S)
                continue
            first = message.splitlines()[0]
            if _DAMAGED.search(message):
                raise InputError(
                    f"cannot open the warehouse {path}: the file is damaged ({first}). Nothing was changed. "
                    f"Move it aside (mv {path} {path}.damaged) and run again: every site is rebuilt from its "
                    "drop folder; or copy the analysts' snapshot over it to keep the last published tables."
                ) from None
            if lock_conflict(exc):
                holder = _LOCK_HOLDER.search(message)
                who = f"process {holder['pid']} ({holder['program']})" if holder else "another process"
                raise InputError(
                    f"cannot open the warehouse {path}: {who} has held it for {lock_timeout_s:g}s and still "
                    "does (an analyst's write session, another program). Nothing was written. Close that "
                    "session and run again; analysts query the read-only snapshot instead (it never blocks "
                    "a run). To wait longer, raise the warehouse resource's lock_timeout_s."
                ) from None
            problem = storage_problem(message)
            reason = f"{problem} ({first})" if problem else first
            raise InputError(f"cannot open the warehouse {path}: {reason}") from None


def ensure_tables(con: duckdb.DuckDBPyConnection, tables: list[str] | None = None) -> None:
    """Create missing schemas, tables and columns (never drops anything)."""
    for table in tables or list(TABLES):
        schema_name, _ = table.split(".")
        con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema_name}"')
        columns = table_columns(table)
        existing = {
            row[0]
            for row in con.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = ? AND table_name = ?",
                table.split("."),
            ).fetchall()
        }
        if not existing:
            ddl = ", ".join(f'"{name}" {duckdb_type(dtype)}' for name, (dtype, _) in columns.items())
            con.execute(f"CREATE TABLE IF NOT EXISTS {_quoted(table)} ({ddl})")
            con.execute(f"COMMENT ON TABLE {_quoted(table)} IS {_literal(table_description(table))}")
            for name, (_, description) in columns.items():
                con.execute(f'COMMENT ON COLUMN {_quoted(table)}."{name}" IS {_literal(description)}')
        for name, (dtype, description) in columns.items():
            if existing and name not in existing:
                con.execute(f'ALTER TABLE {_quoted(table)} ADD COLUMN "{name}" {duckdb_type(dtype)}')
                con.execute(f'COMMENT ON COLUMN {_quoted(table)}."{name}" IS {_literal(description)}')


@dataclass(frozen=True)
class RowChanges:
    """A patch to one site's rows of a large table: the `upserted` rows replace the stored rows with the
    same key (or are added), and the stored rows whose key is in `deleted` go. A re-crawl that changes
    a few thousand of a million rows writes those, not the million."""

    key: tuple[str, ...]  # the table's key within a site
    upserted: pl.DataFrame  # whole rows
    deleted: pl.DataFrame  # the key columns of the rows to remove

    @property
    def height(self) -> int:
        return self.upserted.height


def replace_site_rows(
    path: str | Path,
    site: str,
    frames: Mapping[str, pl.DataFrame | RowChanges],
    *,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> dict[str, ValidationReport]:
    """Validate every frame, then replace `site`'s rows in all their tables in one transaction (a
    RowChanges patches the site's rows instead: see there).

    Raises ContractError (nothing written) when a frame breaks its schema or holds another site's rows.
    """
    written = {t: f.upserted if isinstance(f, RowChanges) else f for t, f in frames.items()}
    reports = {table: validate(table, frame) for table, frame in written.items()}
    for table, frame in written.items():
        if frame.height and not (frame["site"] == site).all():
            raise ValueError(f"{table}: frame holds rows of sites other than '{site}'")
    if not all(report.passed for report in reports.values()):
        raise ContractError(reports)
    with connect(path, lock_timeout_s=lock_timeout_s) as con, _transaction(con):
        ensure_tables(con, list(frames))
        for table, frame in frames.items():
            if isinstance(frame, RowChanges):
                _delete_keys(con, table, site, frame)
            else:
                con.execute(f"DELETE FROM {_quoted(table)} WHERE site = ?", [site])
            _insert(con, table, written[table])
            if isinstance(frame, RowChanges):  # only the patch was checked: say how many rows there are
                stored = con.execute(f"SELECT count(*) FROM {_quoted(table)} WHERE site = ?", [site])
                reports[table] = dataclasses.replace(reports[table], stored_rows=stored.fetchone()[0])
    return reports


def _delete_keys(con: duckdb.DuckDBPyConnection, table: str, site: str, changes: RowChanges) -> None:
    """Delete the site's rows whose key is deleted or upserted by `changes`."""
    keys = pl.concat([changes.deleted.select(changes.key), changes.upserted.select(changes.key)])
    if keys.is_empty():
        return
    con.register("changed_keys", keys.to_arrow())
    match = " AND ".join(f'stored."{k}" = changed_keys."{k}"' for k in changes.key)
    con.execute(
        f"DELETE FROM {_quoted(table)} stored USING changed_keys WHERE stored.site = ? AND {match}", [site]
    )
    con.unregister("changed_keys")


def update_site_rows(
    path: str | Path,
    site: str,
    table: str,
    statements: Sequence[tuple[str, Sequence[object]]],
    *,
    changed_rows: str | None = None,
    expected_rows: int | None = None,
    chunk_rows: int = 50_000,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> ValidationReport:
    """Change `site`'s rows of `table` by SQL run inside DuckDB, then check them, all in one transaction.

    For tables too large to pass through Python (vectors). `statements` (SQL, parameters) run in order.
    The rows they wrote — `changed_rows`, a condition on the table's columns, or all the site's rows —
    are validated in chunks; key uniqueness and the site's row count (`expected_rows`) are checked in
    SQL. Any failure rolls everything back, leaving the previous rows. The report counts the rows checked.
    """
    with connect(path, lock_timeout_s=lock_timeout_s) as con:
        ensure_tables(con, [table])
        with _transaction(con):
            for sql, params in statements:
                con.execute(sql, list(params))
            report = _validate_stored(con, table, site, chunk_rows, expected_rows, changed_rows)
            if not report.passed:
                raise ContractError({table: report})
    return report


def merge_rows(
    path: str | Path,
    table: str,
    frame: pl.DataFrame,
    key: Sequence[str],
    *,
    replace: bool = False,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> int:
    """Write `frame` into a table shared by all sites, keyed by `key`, in one transaction.

    Rows whose key is already stored are skipped, or with `replace` overwrite the stored ones (cache
    entries refreshed after their TTL). Returns the number of rows written.
    """
    report = validate(table, frame)
    if not report.passed:
        raise ContractError({table: report})
    match = " AND ".join(f'existing."{k}" = incoming_rows."{k}"' for k in key)
    exists = f"EXISTS (SELECT 1 FROM incoming_rows WHERE {match})"
    with connect(path, lock_timeout_s=lock_timeout_s) as con, _transaction(con):
        ensure_tables(con, [table])
        con.register("incoming_rows", _arrow(table, frame))
        if replace:
            con.execute(f"DELETE FROM {_quoted(table)} existing WHERE {exists}")
        before = con.execute(f"SELECT count(*) FROM {_quoted(table)}").fetchone()[0]
        con.execute(
            f"INSERT INTO {_quoted(table)} BY NAME SELECT * FROM incoming_rows "
            f"WHERE NOT EXISTS (SELECT 1 FROM {_quoted(table)} existing WHERE {match})"
        )
        con.unregister("incoming_rows")
        return con.execute(f"SELECT count(*) FROM {_quoted(table)}").fetchone()[0] - before


def query(
    path: str | Path,
    sql: str,
    params: Sequence[object] = (),
    frames: Mapping[str, pl.DataFrame] | None = None,
    *,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> pl.DataFrame:
    """A read query over the warehouse, with `frames` registered as tables under their keys."""
    with connect(path, lock_timeout_s=lock_timeout_s) as con:
        ensure_tables(con)
        for name, frame in (frames or {}).items():
            con.register(name, frame.to_arrow(compat_level=pl.CompatLevel.newest()))
        return con.execute(sql, list(params)).pl()


@contextmanager
def _transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _arrow(table: str, frame: pl.DataFrame):
    # Arrow string views: DuckDB reads polars' buffers without a copy of every string.
    return frame.select(list(table_columns(table))).to_arrow(compat_level=pl.CompatLevel.newest())


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    if frame.height:
        con.register("incoming_rows", _arrow(table, frame))
        con.execute(f"INSERT INTO {_quoted(table)} BY NAME SELECT * FROM incoming_rows")
        con.unregister("incoming_rows")


def _validate_stored(
    con: duckdb.DuckDBPyConnection,
    table: str,
    site: str,
    chunk_rows: int,
    expected_rows: int | None,
    changed_rows: str | None = None,
) -> ValidationReport:
    """Validate a site's stored rows (or those matching `changed_rows`) chunk by chunk; key uniqueness and
    the site's row count are checked in SQL over all its rows."""
    columns = list(table_columns(table))
    select = ", ".join(f'"{c}"' for c in columns)
    where = f"site = ? AND ({changed_rows})" if changed_rows else "site = ?"
    reader = con.execute(f"SELECT {select} FROM {_quoted(table)} WHERE {where}", [site]).to_arrow_reader(
        chunk_rows
    )
    rows = 0
    failures: list[pl.DataFrame] = []
    for batch in reader:
        chunk = pl.from_arrow(batch).cast({c: t for c, t in empty_frame(table).schema.items()})
        rows += chunk.height
        report = validate(table, chunk)
        if not report.passed:
            failures.append(report.failures)
    unique = _model(table).to_schema().unique or []
    if unique:
        keys = ", ".join(f'"{c}"' for c in unique)
        duplicated = con.execute(
            f"SELECT count(*) FROM (SELECT {keys} FROM {_quoted(table)} WHERE site = ? GROUP BY {keys} "
            "HAVING count(*) > 1)",
            [site],
        ).fetchone()[0]
        if duplicated:
            failures.append(_failure(", ".join(unique), "unique", f"{duplicated} duplicated keys"))
    stored = con.execute(f"SELECT count(*) FROM {_quoted(table)} WHERE site = ?", [site]).fetchone()[0]
    if expected_rows is not None and stored != expected_rows:
        failures.append(_failure("*", "row_count", f"{stored} rows, expected {expected_rows}"))
    return ValidationReport(table, rows, pl.concat(failures) if failures else NO_FAILURES, stored)


def read_site(
    path: str | Path,
    table: str,
    site: str,
    columns: list[str] | None = None,
    *,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> pl.DataFrame:
    """A site's rows of a table (an empty frame of the right schema when there are none)."""
    wanted = columns or list(table_columns(table))
    unknown = set(wanted) - set(table_columns(table))
    if unknown:
        raise ValueError(f"{table} has no column(s) {sorted(unknown)}")
    with connect(path, lock_timeout_s=lock_timeout_s) as con:
        ensure_tables(con, [table])
        select = ", ".join(f'"{c}"' for c in wanted)
        result = con.execute(f"SELECT {select} FROM {_quoted(table)} WHERE site = ?", [site]).pl()
    return result.cast({c: dtype for c, dtype in empty_frame(table).select(wanted).schema.items()})


def _failure(column: str, check: str, case: str) -> pl.DataFrame:
    return pl.DataFrame({"column": [column], "check": [check], "failure_case": [case]})


def _model(table: str) -> type[pa.DataFrameModel]:
    try:
        return TABLES[table]
    except KeyError:
        raise ValueError(f"unknown warehouse table {table!r}; known: {', '.join(TABLES)}") from None


def _quoted(table: str) -> str:
    _model(table)  # only registered tables ever reach SQL text
    schema_name, name = table.split(".")
    return f'"{schema_name}"."{name}"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


SNAPSHOT_PATH_ENV = "INTERLINK_SNAPSHOT_PATH"


def snapshot_path(warehouse_path: str | Path, configured: str = "") -> Path:
    """Where analysts read: as configured, else $INTERLINK_SNAPSHOT_PATH, else snapshots/<file> beside the
    warehouse (data/snapshots/interlink.duckdb by default)."""
    chosen = configured or os.environ.get(SNAPSHOT_PATH_ENV)
    if chosen:
        return Path(chosen)
    warehouse_path = Path(warehouse_path)
    return warehouse_path.parent / "snapshots" / warehouse_path.name


# Tables left out of the analyst snapshot: vectors, request caches and search state, large and of no use to
# a query.
SNAPSHOT_SKIPS = frozenset(
    {"ml.embedding_cache", "ml.page_embeddings", "ml.page_neighbours", "ml.candidate_pages", "serp.cache"}
)


def publish_snapshot(
    path: str | Path, snapshot: str | Path, lock_timeout_s: float = LOCK_TIMEOUT_S
) -> dict[str, int]:
    """Copy every table (vectors and caches left out), with its table and column comments, into a new file
    beside `snapshot`, then rename it into place. Analysts query the snapshot: a reader never blocks a run,
    and a reader with the old file open keeps reading it while the next one appears. Returns the rows copied
    per table."""
    if not Path(path).exists():
        raise InputError(f"{path}: no warehouse file yet; materialise a site first.")
    copied: dict[str, int] = {}
    with replaced_atomically(Path(snapshot)) as partial:
        partial.unlink()  # DuckDB creates the file itself
        with connect(partial) as con:
            target = _identifier(con.execute("SELECT current_database()").fetchone()[0])
            source_db = "interlink_warehouse"
            _waiting_for_lock(
                lambda: con.execute(f"ATTACH {_literal(str(path))} AS {_identifier(source_db)} (READ_ONLY)"),
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
                if f"{schema}.{name}" in SNAPSHOT_SKIPS:
                    continue
                source = f"{_identifier(schema)}.{_identifier(name)}"
                con.execute(f"CREATE SCHEMA IF NOT EXISTS {target}.{_identifier(schema)}")
                con.execute(f"CREATE TABLE {target}.{source} AS SELECT * FROM {source}")
                if comment:
                    con.execute(f"COMMENT ON TABLE {target}.{source} IS {_literal(comment)}")
                for column, text in con.execute(
                    "SELECT column_name, comment FROM duckdb_columns() WHERE database_name = ? AND "
                    "schema_name = ? AND table_name = ? AND comment IS NOT NULL",
                    [source_db, schema, name],
                ).fetchall():
                    column = f"{target}.{source}.{_identifier(column)}"
                    con.execute(f"COMMENT ON COLUMN {column} IS {_literal(text)}")
                copied[f"{schema}.{name}"] = con.execute(
                    f"SELECT count(*) FROM {target}.{source}"
                ).fetchone()[0]
    return copied


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
