"""The warehouse: where it is, opening it, write transactions, and the DDL that gives it every table of
the contract. It is a DuckDB file by default, or a DuckLake (lake.py) when its location says so; both are
reached through `connect` and written through `write`.

DuckDB allows one writing process per file, so connections wait for a lock held elsewhere instead of
failing at once (damaged files and storage faults are told apart). A lake has many writers.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import duckdb
import polars as pl
import tenacity

from interlink_pipeline.core.environment import WAREHOUSE_ENV, Environment, environment
from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.files import file_format
from interlink_pipeline.core.retries import retrying
from interlink_pipeline.core.warehouse import lake

T = TypeVar("T")

DEFAULT_WAREHOUSE = "data/interlink.duckdb"
# DuckDB may otherwise take 80% of RAM beside the model and polars; past the limit it spills to disk
# (measured on 1M page vectors: 5.5 GB peak without a limit, 1.9 GB with 1GB, and faster).
DEFAULT_MEMORY_LIMIT = "1GB"
LOCK_RETRY_S = 0.2
# Runs take turns on the file (the writer pool) and hold it for seconds at most between them; a lock held
# longer is someone else's session, which the user should hear about in seconds, not minutes.
LOCK_TIMEOUT_S = 10.0


def default_warehouse(env: Environment | None = None) -> str:
    """The warehouse: $INTERLINK_WAREHOUSE (a DuckDB file, or `ducklake:postgres:...`), else
    data/interlink.duckdb (relative to the cwd)."""
    return (env or environment()).warehouse or DEFAULT_WAREHOUSE


def files_folder(path: str | Path) -> Path:
    """Where the files that go with the warehouse's tables are kept (each site's models and indexes,
    exports, run logs): beside a file warehouse; for a lake, $INTERLINK_LAKE_FILES."""
    return lake.files_folder() if lake.is_lake(path) else Path(path).resolve().parent


def exists(path: str | Path) -> bool:
    """Whether there is a warehouse to read yet (a lake is there once its catalog can be reached)."""
    return lake.is_lake(path) or Path(path).exists()


def describe(path: str | Path) -> str:
    """The warehouse for a person to read: the file's full path, or the lake's catalog (no password)."""
    return lake.describe(path) if lake.is_lake(path) else str(Path(path).resolve())


def memory_limit() -> str:
    """DuckDB's memory limit for the warehouse's connections (the user's, else DEFAULT_MEMORY_LIMIT)."""
    return environment().memory_limit or DEFAULT_MEMORY_LIMIT


@contextmanager
def connect(
    path: str | Path, *, read_only: bool = False, lock_timeout_s: float = LOCK_TIMEOUT_S
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to the warehouse `path`: a DuckDB file, waiting up to `lock_timeout_s` while another
    process holds its lock; or a lake location, whose tables are made on its first write connection."""
    # Frames are always registered by name; never let a query resolve a missing table to a Python
    # variable of the same name (DuckDB's replacement scans).
    config = {
        "python_enable_replacements": False,
        "memory_limit": memory_limit(),
        # nothing is ever downloaded at run time: a file DuckDB takes for another format (a SQLite
        # database) made it fetch `sqlite_scanner` over HTTP; the lake's extensions are bundled (lake.py)
        "autoinstall_known_extensions": False,
    }
    if lake.is_lake(path):
        con = _lake_database(str(path), read_only, config).cursor()
        con.execute(f"USE {lake.ALIAS}")
    else:
        path = Path(path)
        if not read_only:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(
                    f"cannot create the warehouse folder {path.parent}: {exc.strerror}."
                ) from None
        elif not path.exists():
            raise InputError(f"{path}: no warehouse file yet; materialise a site first.")
        if not read_only:
            _remove_empty(path)
        _check_format(path)
        try:
            con = waiting_for_lock(
                lambda: duckdb.connect(str(path), read_only=read_only, config=config), path, lock_timeout_s
            )
        except InputError:
            if not read_only:
                _remove_empty(path)  # a file DuckDB made and could not write (a full disk)
            raise
    try:
        yield con
    except duckdb.Error as exc:
        problem = storage_problem(str(exc))
        if problem is None:
            raise
        raise InputError(
            f"cannot write the warehouse {path}: {problem}. Nothing was written (the transaction was rolled "
            f"back; the previous rows are kept). Free space or fix the permissions, or set {WAREHOUSE_ENV} "
            "to another place."
        ) from None
    finally:
        con.close()


def _remove_empty(path: Path) -> None:
    """An empty warehouse file that no process holds is no warehouse: what a first write left when it
    could not write the file's header (a full disk). Removed, so the next run makes the warehouse anew
    rather than call it damaged."""
    import fcntl

    try:
        with path.open("rb") as f:
            if os.fstat(f.fileno()).st_size:
                return
            fcntl.lockf(f, fcntl.LOCK_SH | fcntl.LOCK_NB)  # DuckDB holds its file's lock while it writes it
            path.unlink()
    except OSError:  # not there, held by a process, or not ours to remove: DuckDB says what it is
        return


def _check_format(path: Path) -> None:
    """Refuse a warehouse file that is not a DuckDB database."""
    kind = file_format(path)
    if kind is not None:
        raise InputError(
            f"{path} is not a DuckDB warehouse ({kind}); nothing was changed. Set {WAREHOUSE_ENV} to a "
            "DuckDB file (a new name makes a new warehouse) or to a lake (ducklake:...)."
        )


def storage_problem(message: str) -> str | None:
    """The storage fault behind a DuckDB error (disk full, read-only), or None for any other error."""
    lowered = message.lower()
    if "no space left" in lowered or "disk quota" in lowered:
        return "the disk is full (No space left on device)"
    if "read-only file system" in lowered or "permission denied" in lowered:
        return "the file or its folder is read-only"
    if "operation not permitted" in lowered:  # chattr +i: even root may not write it
        return "the file is immutable or append-only (lsattr shows i or a; chattr -i undoes it)"
    return None


# DuckDB (1.5) raises IOException both for a file another process holds and for a damaged one; the lock
# conflict is told by its own message, never by "lock" anywhere (a damaged "block" is not a lock).
_LOCK_CONFLICT = re.compile(r"Could not set lock on file|Conflicting lock is held")
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")
_DAMAGED = re.compile(r"Corrupt database file|not a valid DuckDB database file|checksum", re.IGNORECASE)


def lock_conflict(exc: duckdb.Error) -> bool:
    """Whether `exc` says another process holds the file's lock."""
    return isinstance(exc, duckdb.IOException) and bool(_LOCK_CONFLICT.search(str(exc)))


class WarehouseHeld(InputError):
    """Another process holds the warehouse file's lock (a run writing, an analyst's write session)."""

    def __init__(self, message: str, holder: str):
        super().__init__(message)
        self.holder = holder  # "process N (program)", or "another process"


def waiting_for_lock(open_file: Callable[[], T], path: Path, lock_timeout_s: float) -> T:
    """open_file(), retried while another process holds the file's lock, for up to lock_timeout_s."""
    stop = tenacity.stop_after_delay(lock_timeout_s)
    try:
        return retrying(lock_conflict, stop=stop, wait=tenacity.wait_fixed(LOCK_RETRY_S))(open_file)
    except duckdb.IOException as exc:
        message = str(exc)
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
            raise WarehouseHeld(
                f"cannot open the warehouse {path}: {who} has held it for {lock_timeout_s:g}s and still "
                "does (an analyst's write session, another program). Nothing was written. Close that "
                "session and run again; analysts query the read-only snapshot instead (it never blocks "
                "a run). To wait longer, raise the warehouse resource's lock_timeout_s.",
                who,
            ) from None
        problem = storage_problem(message)
        reason = f"{problem} ({first})" if problem else first
        raise InputError(f"cannot open the warehouse {path}: {reason}") from None


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def write(
    path: str | Path, tables: list[str], body: Callable[[duckdb.DuckDBPyConnection], T], lock_timeout_s: float
) -> T:
    """body(con), which writes `tables`, in one transaction once they exist: all of it is committed or none.

    On a lake, writes to one table take turns (lake.table_locks) and a commit that still conflicts is run
    again from the start (lake.committed); a file has one writer at a time anyway."""

    def attempt() -> T:
        with connect(path, lock_timeout_s=lock_timeout_s) as con, transaction(con):
            ensure_tables(con, tables)
            return body(con)

    if not lake.is_lake(path):
        return attempt()
    with lake.table_locks(path, tables):
        return lake.committed(attempt)


_LAKE_DATABASES: dict[tuple[int, str, bool], duckdb.DuckDBPyConnection] = {}


def _lake_database(location: str, read_only: bool, config: dict) -> duckdb.DuckDBPyConnection:
    """One in-memory DuckDB per process with the lake attached (loading its extensions takes 0.3 s), of which
    each `connect` takes a cursor: a connection of its own, with its own transactions. On the first write
    connection, every table of the contract is made (writers of a new lake take turns)."""
    key = (os.getpid(), location, read_only)  # a forked child opens its own
    if key not in _LAKE_DATABASES:
        # An in-memory database spills to `.tmp` in the working directory, under file names that are not
        # unique to a process: runs started from one folder overwrote each other's spilled data (found with
        # four sites at once, "Could not read enough bytes from file .tmp/duckdb_temp_storage_…"). Each
        # process spills to a folder of its own.
        spill = tempfile.mkdtemp(prefix=f"interlink-duckdb-{os.getpid()}-")
        atexit.register(shutil.rmtree, spill, ignore_errors=True)
        con = duckdb.connect(config={**config, "temp_directory": spill})
        try:
            lake.attach(con, location, read_only=read_only)
            if not read_only:

                def create() -> None:
                    with transaction(con):
                        ensure_tables(con)

                with lake.table_locks(location, ["schema"]):
                    lake.committed(create)
        except BaseException:
            con.close()
            raise
        _LAKE_DATABASES[key] = con
    return _LAKE_DATABASES[key]


def ensure_tables(con: duckdb.DuckDBPyConnection, tables: list[str] | None = None) -> None:
    """Create missing schemas, tables and columns (never drops anything). In a lake, a site's tables are
    partitioned by site: each site's rows are files of their own."""
    # the contract (pandera's models) is loaded where tables are made, not by every reader: a read-only
    # command answers without it
    from interlink_pipeline.core.warehouse.contract import duckdb_type, table_columns, table_description
    from interlink_pipeline.core.warehouse.schemas import TABLES

    in_lake = con.execute("SELECT current_database()").fetchone()[0] == lake.ALIAS
    # the catalog read once for every table asked for (DuckDB's own catalog function, twice as quick as
    # information_schema): a query per table cost 4 s of a small site's run, whose hundred connections ask
    existing: dict[str, set[str]] = {}
    for schema_name, table_name, column in con.execute(
        "SELECT schema_name, table_name, column_name FROM duckdb_columns() "
        "WHERE database_name = current_database()"
    ).fetchall():
        existing.setdefault(f"{schema_name}.{table_name}", set()).add(column)
    schemas = {table.split(".")[0] for table in existing}
    for table in tables or list(TABLES):
        schema_name, _ = table.split(".")
        if schema_name not in schemas:  # (a schema with no table yet is asked for again: IF NOT EXISTS)
            con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema_name}"')
            schemas.add(schema_name)
        columns = table_columns(table)
        present = existing.get(table, set())
        if not present:
            ddl = ", ".join(f'"{name}" {duckdb_type(dtype)}' for name, (dtype, _) in columns.items())
            con.execute(f"CREATE TABLE IF NOT EXISTS {quoted_table(table)} ({ddl})")
            if in_lake and "site" in columns:
                con.execute(f"ALTER TABLE {quoted_table(table)} SET PARTITIONED BY (site)")
            con.execute(f"COMMENT ON TABLE {quoted_table(table)} IS {sql_literal(table_description(table))}")
            for name, (_, description) in columns.items():
                con.execute(f'COMMENT ON COLUMN {quoted_table(table)}."{name}" IS {sql_literal(description)}')
            continue
        for name, (dtype, description) in columns.items():
            if name not in present:
                con.execute(f'ALTER TABLE {quoted_table(table)} ADD COLUMN "{name}" {duckdb_type(dtype)}')
                con.execute(f'COMMENT ON COLUMN {quoted_table(table)}."{name}" IS {sql_literal(description)}')


def quoted_table(table: str) -> str:
    from interlink_pipeline.core.warehouse.contract import table_model  # as in ensure_tables

    table_model(table)  # only registered tables ever reach SQL text
    schema_name, name = table.split(".")
    return f'"{schema_name}"."{name}"'


def sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def query(
    path: str | Path,
    sql: str,
    params: Sequence[object] = (),
    frames: Mapping[str, pl.DataFrame] | None = None,
    *,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
    read_only: bool = False,
) -> pl.DataFrame:
    """A read query over the warehouse, with `frames` registered as tables under their keys; `read_only`
    opens the file without its write lock (a table not made yet is then a CatalogException)."""
    with connect(path, lock_timeout_s=lock_timeout_s, read_only=read_only) as con:
        if not read_only:
            ensure_tables(con)
        for name, frame in (frames or {}).items():
            con.register(name, frame.to_arrow(compat_level=pl.CompatLevel.newest()))
        return con.execute(sql, list(params)).pl()
