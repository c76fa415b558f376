"""The warehouse's reads and validated writes: per-site replaces and patches, merges into shared tables.

A site's write replaces that site's rows in every table it touches in one transaction: a rerun is
idempotent, and a failure (validation, disk, a killed process) leaves the previous rows in place. `path`
is the warehouse: a DuckDB file or a lake location (database.connect).
"""

from __future__ import annotations

import dataclasses
import glob
import os
import shutil
import socket
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from interlink_pipeline.core.faults import fault_point
from interlink_pipeline.core.warehouse.contract import (
    NO_FAILURES,
    ContractError,
    ValidationReport,
    empty_frame,
    table_columns,
    table_model,
    validate,
)
from interlink_pipeline.core.warehouse.database import (
    LOCK_TIMEOUT_S,
    connect,
    ensure_tables,
    quoted_table,
    sql_literal,
    write,
)


class SpilledRows:
    """All of a site's rows of one table, too many to hold at once: each chunk added gets the site, is
    validated, and is spilled to a Parquet file in a folder of its own under `parent`; replace_site_rows
    inserts them all in its one transaction. Use it as a context manager: the folder goes at the end.
    Only for tables whose checks hold row by row (and the key, checked once stored): a check over all
    of a site's rows, such as one home page, would see a chunk."""

    def __init__(self, table: str, site: str, parent: str | Path):
        self.table, self.site = table, site
        Path(parent).mkdir(parents=True, exist_ok=True)
        _remove_abandoned_spills(Path(parent))
        owner = f"{socket.gethostname()}-{os.getpid()}-"
        self.folder = Path(tempfile.mkdtemp(prefix=f"{owner}{table}-", dir=parent))
        self.files: list[Path] = []
        self.height = 0
        self._failures: list[pl.DataFrame] = []

    def __enter__(self) -> SpilledRows:
        return self

    def __exit__(self, *_exc: object) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def add(self, rows: pl.DataFrame) -> None:
        """Spill `rows` (the table's columns but the site) once they match the table's schema."""
        rows = rows.select(pl.lit(self.site).alias("site"), pl.all())
        report = validate(self.table, rows)
        self.height += rows.height
        if not report.passed:
            self._failures.append(report.failures)
        elif rows.height:
            self.files.append(self.folder / f"{len(self.files):05d}.parquet")
            rows.select(list(table_columns(self.table))).write_parquet(self.files[-1], compression="lz4")

    def report(self) -> ValidationReport:
        """Every chunk's checks together (a key repeated across chunks is found once they are stored)."""
        failures = pl.concat(self._failures) if self._failures else NO_FAILURES
        return ValidationReport(self.table, self.height, failures)

    def parquet_scan(self) -> str:
        """SQL that reads the spilled rows (there are files: rows were added)."""
        return f"read_parquet([{', '.join(sql_literal(str(file)) for file in self.files)}])"


@dataclass(frozen=True)
class RowChanges:
    """A patch to one site's rows of a large table: the `upserted` rows replace the stored rows with the
    same key (or are added), and the stored rows whose key is in `deleted` go. A re-crawl that changes
    a few thousand of a million rows writes those, not the million; the upserted rows are spilled as
    they are found, so even a patch of every row holds a chunk at a time."""

    key: tuple[str, ...]  # the table's key within a site
    upserted: SpilledRows  # whole rows
    deleted: pl.DataFrame  # the key columns of the rows to remove

    @property
    def height(self) -> int:
        return self.upserted.height


def _remove_abandoned_spills(parent: Path) -> None:
    """Remove the spill folders this host's killed processes left (named host-pid-…: a process that
    ended did not take its folder with it)."""
    host = socket.gethostname()
    for folder in parent.glob(f"{glob.escape(host)}-*-*"):
        pid = folder.name[len(host) + 1 :].split("-", 1)[0]
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def replace_site_rows(
    path: str | Path,
    site: str,
    frames: Mapping[str, pl.DataFrame | RowChanges | SpilledRows],
    *,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> dict[str, ValidationReport]:
    """Validate every frame, then replace `site`'s rows in all their tables in one transaction (a
    RowChanges patches the site's rows instead: see there; SpilledRows were validated chunk by chunk,
    and their key is checked across chunks once inserted).

    Raises ContractError (nothing written) when a frame breaks its schema or holds another site's rows.
    """
    written = {t: f.upserted if isinstance(f, RowChanges) else f for t, f in frames.items()}
    for table, frame in written.items():
        if isinstance(frame, SpilledRows) and (frame.table, frame.site) != (table, site):
            raise ValueError(f"{table}: spilled rows of {frame.table} for '{frame.site}', not for '{site}'")
    reports = {
        table: frame.report() if isinstance(frame, SpilledRows) else validate(table, frame)
        for table, frame in written.items()
    }
    for table, frame in written.items():
        if isinstance(frame, pl.DataFrame) and frame.height and not (frame["site"] == site).all():
            raise ValueError(f"{table}: frame holds rows of sites other than '{site}'")
    if not all(report.passed for report in reports.values()):
        raise ContractError(reports)

    def replace(con: duckdb.DuckDBPyConnection) -> None:
        for table, frame in frames.items():
            if isinstance(frame, RowChanges):
                _delete_keys(con, table, site, frame)
            else:
                con.execute(f"DELETE FROM {quoted_table(table)} WHERE site = ?", [site])
            if isinstance(written[table], SpilledRows):
                _insert_spilled(con, written[table])
            else:
                insert_rows(con, table, written[table])
            if isinstance(frame, RowChanges):  # only the patch was checked: say how many rows there are
                stored = con.execute(f"SELECT count(*) FROM {quoted_table(table)} WHERE site = ?", [site])
                reports[table] = dataclasses.replace(reports[table], stored_rows=stored.fetchone()[0])

    write(path, list(frames), replace, lock_timeout_s)
    return reports


def _insert_spilled(con: duckdb.DuckDBPyConnection, rows: SpilledRows) -> None:
    """Insert spilled rows in one statement; a key they repeat across chunks fails the write (ContractError,
    rolled back with the transaction)."""
    if rows.files:
        con.execute(f"INSERT INTO {quoted_table(rows.table)} BY NAME SELECT * FROM {rows.parquet_scan()}")
    fault_point(f"after-insert:{rows.table}")
    duplicated = _duplicated_keys(con, rows.table, rows.site)
    if duplicated:
        failure = _failure(", ".join(table_model(rows.table).to_schema().unique), "unique", duplicated)
        raise ContractError({rows.table: ValidationReport(rows.table, rows.height, failure)})


def _delete_keys(con: duckdb.DuckDBPyConnection, table: str, site: str, changes: RowChanges) -> None:
    """Delete the site's rows whose key is deleted or upserted by `changes`."""
    columns = ", ".join(f'"{k}"' for k in changes.key)
    keys = [f"SELECT {columns} FROM deleted_keys"]
    if changes.upserted.files:
        keys.append(f"SELECT {columns} FROM {changes.upserted.parquet_scan()}")
    con.register("deleted_keys", changes.deleted.select(changes.key).to_arrow())
    match = " AND ".join(f'stored."{k}" = changed_keys."{k}"' for k in changes.key)
    con.execute(
        f"DELETE FROM {quoted_table(table)} stored USING ({' UNION ALL '.join(keys)}) changed_keys "
        f"WHERE stored.site = ? AND {match}",
        [site],
    )
    con.unregister("deleted_keys")


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

    def update(con: duckdb.DuckDBPyConnection) -> ValidationReport:
        for sql, params in statements:
            con.execute(sql, list(params))
        report = _validate_stored(con, table, site, chunk_rows, expected_rows, changed_rows)
        if not report.passed:
            raise ContractError({table: report})
        return report

    return write(path, [table], update, lock_timeout_s)


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

    def merge(con: duckdb.DuckDBPyConnection) -> int:
        con.register("incoming_rows", _arrow(table, frame))
        if replace:
            con.execute(f"DELETE FROM {quoted_table(table)} existing WHERE {exists}")
        before = con.execute(f"SELECT count(*) FROM {quoted_table(table)}").fetchone()[0]
        con.execute(
            f"INSERT INTO {quoted_table(table)} BY NAME SELECT * FROM incoming_rows "
            f"WHERE NOT EXISTS (SELECT 1 FROM {quoted_table(table)} existing WHERE {match})"
        )
        con.unregister("incoming_rows")
        return con.execute(f"SELECT count(*) FROM {quoted_table(table)}").fetchone()[0] - before

    return write(path, [table], merge, lock_timeout_s)


def read_site(
    path: str | Path,
    table: str,
    site: str,
    columns: list[str] | None = None,
    *,
    matching: pl.DataFrame | None = None,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> pl.DataFrame:
    """A site's rows of a table (an empty frame of the right schema when there are none); with `matching`,
    only the rows equal to one of its rows in its columns (a few pages' rows of a large table)."""
    wanted = columns or list(table_columns(table))
    named = set(wanted) | set(matching.columns if matching is not None else ())
    unknown = named - set(table_columns(table))
    if unknown:
        raise ValueError(f"{table} has no column(s) {sorted(unknown)}")
    with connect(path, lock_timeout_s=lock_timeout_s) as con:
        ensure_tables(con, [table])
        select = ", ".join(f'stored."{c}"' for c in wanted)
        sql = f"SELECT {select} FROM {quoted_table(table)} stored"
        if matching is not None:
            con.register("matching", matching.to_arrow())
            on = " AND ".join(f'stored."{c}" = matching."{c}"' for c in matching.columns)
            sql += f" SEMI JOIN matching ON {on}"
        result = con.execute(f"{sql} WHERE stored.site = ?", [site]).pl()
    return result.cast({c: dtype for c, dtype in empty_frame(table).select(wanted).schema.items()})


def _arrow(table: str, frame: pl.DataFrame):
    # Arrow string views: DuckDB reads polars' buffers without a copy of every string.
    return frame.select(list(table_columns(table))).to_arrow(compat_level=pl.CompatLevel.newest())


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    """Append `frame` to `table` inside the caller's transaction: every replace writes its rows here."""
    if frame.height:
        con.register("incoming_rows", _arrow(table, frame))
        con.execute(f"INSERT INTO {quoted_table(table)} BY NAME SELECT * FROM incoming_rows")
        con.unregister("incoming_rows")
    fault_point(f"after-insert:{table}")


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
    reader = con.execute(f"SELECT {select} FROM {quoted_table(table)} WHERE {where}", [site]).to_arrow_reader(
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
    duplicated = _duplicated_keys(con, table, site)
    if duplicated:
        failures.append(_failure(", ".join(table_model(table).to_schema().unique), "unique", duplicated))
    stored = con.execute(f"SELECT count(*) FROM {quoted_table(table)} WHERE site = ?", [site]).fetchone()[0]
    if expected_rows is not None and stored != expected_rows:
        failures.append(_failure("*", "row_count", f"{stored} rows, expected {expected_rows}"))
    return ValidationReport(table, rows, pl.concat(failures) if failures else NO_FAILURES, stored)


def _duplicated_keys(con: duckdb.DuckDBPyConnection, table: str, site: str) -> str | None:
    """How many keys of the table's unique columns the site's stored rows repeat, said for a failure
    case; None when none does (or the table declares no key)."""
    unique = table_model(table).to_schema().unique or []
    if not unique:
        return None
    keys = ", ".join(f'"{c}"' for c in unique)
    duplicated = con.execute(
        f"SELECT count(*) FROM (SELECT {keys} FROM {quoted_table(table)} WHERE site = ? GROUP BY {keys} "
        "HAVING count(*) > 1)",
        [site],
    ).fetchone()[0]
    return f"{duplicated} duplicated keys" if duplicated else None


def _failure(column: str, check: str, case: str) -> pl.DataFrame:
    return pl.DataFrame({"column": [column], "check": [check], "failure_case": [case]})
