"""The DuckDB warehouse: table DDL from the schemas, validated per-site replaces, reads.

A site's write replaces that site's rows in every table it touches in one transaction: a rerun is
idempotent, and a failure (validation, disk, a killed process) leaves the previous rows in place.
DuckDB allows one writing process per file, so connections wait for a lock held elsewhere instead of
failing at once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandera.polars as pa
import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.schemas import TABLES

DUCKDB_PATH_ENV = "INTERLINK_DUCKDB_PATH"
DEFAULT_DUCKDB_PATH = "data/interlink.duckdb"
LOCK_RETRY_S = 0.2


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
    rows: int
    failures: pl.DataFrame  # pandera failure cases (empty when valid)

    @property
    def passed(self) -> bool:
        return self.failures.is_empty()

    def summary(self, examples: int = 3) -> str:
        if self.passed:
            return f"{self.table}: {self.rows} rows match the schema."
        grouped = (
            self.failures.group_by("column", "check")
            .agg(pl.len().alias("n"), pl.col("failure_case").head(examples).alias("examples"))
            .sort("n", descending=True)
        )
        lines = [
            f"  - {row['column']}: {row['check']} failed for {row['n']} value(s), e.g. {row['examples']}"
            for row in grouped.iter_rows(named=True)
        ]
        return f"{self.table} breaks its schema ({self.rows} rows):\n" + "\n".join(lines)


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
    empty = pl.DataFrame(schema={"column": pl.String, "check": pl.String, "failure_case": pl.String})
    return ValidationReport(table, frame.height, empty)


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
    path: str | Path, *, read_only: bool = False, lock_timeout_s: float = 120.0
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
    deadline = time.monotonic() + lock_timeout_s
    while True:
        try:
            # Frames are always registered by name; never let a query resolve a missing table to a Python
            # variable of the same name (DuckDB's replacement scans).
            con = duckdb.connect(str(path), read_only=read_only, config={"python_enable_replacements": False})
            break
        except duckdb.IOException as exc:
            message = str(exc)
            if "lock" in message.lower() and time.monotonic() < deadline:
                time.sleep(LOCK_RETRY_S)
                continue
            raise InputError(f"cannot open the warehouse {path}: {message.splitlines()[0]}") from None
    try:
        yield con
    finally:
        con.close()


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


def replace_site_rows(
    path: str | Path,
    site: str,
    frames: Mapping[str, pl.DataFrame],
    *,
    lock_timeout_s: float = 120.0,
) -> dict[str, ValidationReport]:
    """Validate every frame, then replace `site`'s rows in all their tables in one transaction.

    Raises ContractError (nothing written) when a frame breaks its schema or holds another site's rows.
    """
    reports = {table: validate(table, frame) for table, frame in frames.items()}
    for table, frame in frames.items():
        if frame.height and not (frame["site"] == site).all():
            raise ValueError(f"{table}: frame holds rows of sites other than '{site}'")
    if not all(report.passed for report in reports.values()):
        raise ContractError(reports)
    with connect(path, lock_timeout_s=lock_timeout_s) as con:
        ensure_tables(con, list(frames))
        con.execute("BEGIN TRANSACTION")
        try:
            for table, frame in frames.items():
                con.execute(f"DELETE FROM {_quoted(table)} WHERE site = ?", [site])
                if frame.height:
                    # Arrow string views: DuckDB reads polars' buffers without a copy of every string.
                    rows = frame.select(list(table_columns(table))).to_arrow(
                        compat_level=pl.CompatLevel.newest()
                    )
                    con.register("incoming_rows", rows)
                    con.execute(f"INSERT INTO {_quoted(table)} BY NAME SELECT * FROM incoming_rows")
                    con.unregister("incoming_rows")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return reports


def read_site(
    path: str | Path,
    table: str,
    site: str,
    columns: list[str] | None = None,
    *,
    lock_timeout_s: float = 120.0,
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
