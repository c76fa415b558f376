"""The DuckLake backend: a catalog in PostgreSQL, the tables' data as Parquet files in a folder or on S3,
partitioned by site. Many processes on many machines write it at once; each commit is a snapshot, so a
reader sees whole runs and an earlier snapshot stays readable (time travel).

A warehouse location `ducklake:postgres:<libpq settings>` selects it; where its Parquet files go is
$INTERLINK_LAKE_DATA_PATH (a folder every worker sees, or s3://bucket/prefix/).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import duckdb
import tenacity

from interlink_pipeline.core.environment import LAKE_DATA_PATH_ENV, environment
from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.retries import backoff, retrying

T = TypeVar("T")

LAKE_PREFIX = "ducklake:postgres:"
# What a lake warehouse keeps beside its tables (each site's models and indexes, exports, run logs): a folder
# every worker sees. A file warehouse keeps them beside its file.
DEFAULT_LAKE_FILES = "data"
# The name the lake is attached under: queries name tables schema.table, as in the file.
ALIAS = "lake"
EXTENSIONS = ("ducklake", "postgres", "httpfs")
# A writer waits this long for another run's write to the same table to commit (a large table's write takes
# tens of seconds), then fails and says so.
TABLE_LOCK_TIMEOUT_S = 900.0
# The lock dbt's builds take in turn: the marts of all sites are written by one build at a time.
MARTS_LOCK = "marts"
# Commits that still conflict (another program's write, two first runs creating the tables) are retried.
COMMIT_ATTEMPTS = 8
RETRY_WAIT_S = 0.2
# S3 access (a bucket or an S3-compatible store such as MinIO) from the usual AWS variables.
S3_KEYS = ("s3_access_key_id", "s3_secret_access_key", "s3_region")


def is_lake(location: str | Path) -> bool:
    return str(location).startswith("ducklake:")


def catalog_dsn(location: str | Path) -> str:
    """The PostgreSQL connection settings of a lake location (libpq's `key=value ...`)."""
    location = str(location)
    if not location.startswith(LAKE_PREFIX) or not location[len(LAKE_PREFIX) :].strip():
        raise InputError(
            f"{location!r}: a lake warehouse is `{LAKE_PREFIX}dbname=... host=... port=... user=...` "
            "(DuckLake with its catalog in PostgreSQL)."
        )
    return location[len(LAKE_PREFIX) :].strip()


def data_path() -> str:
    """Where the lake's Parquet files go: $INTERLINK_LAKE_DATA_PATH, a folder (made absolute) or s3://..."""
    chosen = (environment().lake_data_path or "").strip()
    if not chosen:
        raise InputError(
            f"{LAKE_DATA_PATH_ENV} is not set: a lake warehouse needs a folder every worker sees, or "
            "s3://bucket/prefix/, for its Parquet files."
        )
    if "://" in chosen:
        return chosen.rstrip("/") + "/"
    return str(Path(chosen).resolve()) + "/"


def files_folder() -> Path:
    return Path(environment().lake_files or DEFAULT_LAKE_FILES).resolve()


def s3_settings() -> dict[str, str | bool]:
    """DuckDB's S3 settings from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION and AWS_ENDPOINT_URL
    (an S3-compatible store: path-style URLs, TLS as its scheme says)."""
    env = environment()
    settings: dict[str, str | bool] = {name: getattr(env, name) for name in S3_KEYS if getattr(env, name)}
    endpoint = env.s3_endpoint or ""
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        settings |= {
            "s3_endpoint": parts.netloc,
            "s3_url_style": "path",
            "s3_use_ssl": parts.scheme == "https",
        }
    return settings


def install_extensions(con: duckdb.DuckDBPyConnection | None = None) -> None:
    """Install DuckLake's extensions from their Python packages (nothing is downloaded) into DuckDB's
    extension folder, where dbt and the duckdb shell find them too."""
    from duckdb_extensions import import_extension

    with duckdb.connect() if con is None else nullcontext(con) as installing:
        for name in EXTENSIONS:
            import_extension(name, con=installing)


def attach(con: duckdb.DuckDBPyConnection, location: str | Path, *, read_only: bool) -> None:
    """Load the extensions and attach the lake as the connection's default database."""
    install_extensions(con)
    for name in EXTENSIONS:
        con.execute(f"LOAD {name}")
    for name, value in s3_settings().items():
        con.execute(f"SET GLOBAL {name} = ?", [value])
    dsn = catalog_dsn(location)
    options = (
        ["READ_ONLY"] if read_only else [f"DATA_PATH {_literal(data_path())}", "DATA_INLINING_ROW_LIMIT 0"]
    )
    try:
        con.execute(f"ATTACH {_literal('ducklake:postgres:' + dsn)} AS {ALIAS} ({', '.join(options)})")
    except duckdb.Error as exc:
        first = _PASSWORD.sub("password=***", str(exc).splitlines()[0])  # DuckDB's message quotes it
        raise InputError(
            f"cannot open the lake warehouse ({_without_password(dsn)}): {first}. Check that PostgreSQL is "
            "up and the database exists (createdb), and the settings in INTERLINK_WAREHOUSE."
        ) from None
    con.execute(f"USE {ALIAS}")


def conflict(exc: BaseException) -> bool:
    """Whether a failed commit lost a race with another writer's commit (run again, it will pass)."""
    return isinstance(exc, duckdb.TransactionException) and (
        "Transaction conflict" in str(exc) or "maximum retry count" in str(exc)
    )


def committed(write: Callable[[], T], attempts: int = COMMIT_ATTEMPTS, wait_s: float = RETRY_WAIT_S) -> T:
    """write() (a whole transaction), run again from the start after a commit conflict, with jittered
    exponential backoff; the last conflict is raised."""
    stop = tenacity.stop_after_attempt(attempts)
    return retrying(conflict, stop=stop, wait=backoff(wait_s, jitter=(0.5, 1.0)))(write)


@contextmanager
def table_locks(
    location: str | Path, tables: list[str], timeout_s: float = TABLE_LOCK_TIMEOUT_S
) -> Iterator[None]:
    """Hold PostgreSQL advisory locks on `tables` (in one order, so two writers never deadlock) while the
    caller writes them. DuckLake checks conflicts per table, not per partition: two sites replacing their
    rows of one table at once would make one commit fail after all its work. With the locks, writes to one
    table take turns and writes to different tables run at once. A killed writer's locks go with its
    connection."""
    import psycopg2

    keys = sorted({zlib.crc32(f"interlink:{table}".encode()) - 2**31 for table in tables})
    con = psycopg2.connect(catalog_dsn(location))
    try:
        con.autocommit = True
        with con.cursor() as cursor:
            cursor.execute("SET lock_timeout = %s", [f"{int(timeout_s * 1000)}ms"])
            for key in keys:
                try:
                    cursor.execute("SELECT pg_advisory_lock(%s)", [key])
                except psycopg2.errors.LockNotAvailable:
                    raise InputError(
                        f"waited {timeout_s:g}s for another run's write to {', '.join(sorted(tables))} "
                        "to commit; nothing was written. Run again."
                    ) from None
        yield
    finally:
        con.close()


def current_snapshot(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute(f"SELECT id FROM {ALIAS}.current_snapshot()").fetchone()[0]


def describe(location: str | Path) -> str:
    return LAKE_PREFIX + _without_password(catalog_dsn(location))


def analyst_commands(location: str | Path) -> str:
    """The duckdb shell's commands that open the lake read-only, run before its safe mode locks it: the
    extensions loaded, file reads allowed in the lake's data folder alone (as its catalog records it), the
    lake attached read-only (every table as of its last commit). A password comes from PGPASSWORD or
    ~/.pgpass, never the command line."""
    with duckdb.connect() as con:
        attach(con, location, read_only=True)
        (recorded,) = con.execute(
            f"SELECT value FROM __ducklake_metadata_{ALIAS}.ducklake_metadata WHERE key = 'data_path'"
        ).fetchone()
    loads = "".join(f"LOAD {name}; " for name in EXTENSIONS)
    return (
        f"{loads}SET allowed_directories = [{_literal(recorded)}]; "
        f"ATTACH {_literal(describe(location))} AS {ALIAS} (READ_ONLY); USE {ALIAS};"
    )


_PASSWORD = re.compile(r"password=\S+?(?=[\s\"']|$)")


def _without_password(dsn: str) -> str:
    return " ".join(part for part in dsn.split() if not part.startswith("password="))


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
