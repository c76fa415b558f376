"""Dagster's SQLite storages reuse one engine per database file in a process, not one per statement.

Dagster 1.13.27's SQLite event log, run and schedule storages build a new SQLAlchemy engine (NullPool: a
new SQLite connection) for every statement they run. Each connection to a WAL database sets up its
shared-memory index and the last one closed checkpoints it: a two-page site's run through the CLI
opened 4,420 connections for its 480 events, and its steps waited on Dagster's bookkeeping more than on
their own work. Here each storage takes its file's engine from a small per-process cache, whose pool
(SQLAlchemy's QueuePool for a SQLite file, its connections usable from any thread) keeps the connection
open between statements. SQLite's locks still order the writers of several processes and each statement
still runs in a transaction of its own; a forked process, or a file deleted or replaced (a wipe), gets a
new engine.

A connection kept open changes two things Dagster relied on. What it writes stays in the WAL beside the
file until a checkpoint, where a last close wrote it into the file, whose changes are what watchers of a
run's events see (the UI's live view, the CLI's progress): each write to a run's file sets its time. And
a file opened and closed outside SQLite (`open()`, a copy) drops every lock this process holds on it
(POSIX), so SQLite could take a live WAL for a dead one: code that reads the home's files closes the kept
connections first (`close_kept_connections`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Dagster and SQLAlchemy load with the storages; the CLI's reading commands load neither
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
    from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
    from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
    from sqlalchemy.engine import Connection, Engine

# Engines kept per process: a run writes its own shard, the index shard and runs.db; a test process
# makes many instances one after another, whose files need not stay open.
KEPT_ENGINES = 16

_engines: OrderedDict[tuple[int, str], tuple[Engine, tuple[int, int] | None]] = OrderedDict()
_lock = threading.Lock()


@functools.cache
def _database_path(conn_string: str) -> str:
    from sqlalchemy import make_url

    return make_url(conn_string).database or ""


def _file_identity(conn_string: str) -> tuple[int, int] | None:
    try:
        status = os.stat(_database_path(conn_string))
    except OSError:
        return None
    return status.st_dev, status.st_ino


def engine_for(conn_string: str) -> Engine:
    """This process's engine for the SQLite file `conn_string` names (a new one where the file was
    deleted or replaced since)."""
    from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
    from sqlalchemy import create_engine

    key, identity = (os.getpid(), conn_string), _file_identity(conn_string)
    with _lock:
        kept = _engines.get(key)
        if kept is not None and kept[1] in (identity, None):
            _engines[key] = (kept[0], identity)  # a file the engine made on its first connection
            _engines.move_to_end(key)
            return kept[0]
        if kept is not None:
            _let_go(kept[0], key[0])
        engine = create_engine(conn_string, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
        _engines[key] = (engine, identity)
        while len(_engines) > KEPT_ENGINES:
            (pid, _), (old, _) = _engines.popitem(last=False)
            _let_go(old, pid)
        return engine


def close_kept_connections() -> None:
    """Close this process's kept connections (their engines make new ones when next asked)."""
    with _lock:
        for (pid, _), (engine, _) in _engines.items():
            _let_go(engine, pid)
        _engines.clear()


def _let_go(engine: Engine, pid: int) -> None:
    """Close the engine's connections, or, for an engine a forked process inherited, only forget them: they
    are its parent's to close."""
    engine.dispose(close=pid == os.getpid())


@contextmanager
def _transaction(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as conn, conn.begin():
        yield conn


@contextmanager
def _event_log_connection(self: SqliteEventLogStorage, shard: str) -> Iterator[Connection]:
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME

    with self._db_lock:
        engine = engine_for(self.conn_string_for_shard(shard))
        if shard not in self._initialized_dbs:
            self._initdb(engine)
            self._initialized_dbs.add(shard)
        with engine.connect() as conn:
            changes = conn.connection.dbapi_connection.total_changes
            with conn.begin():
                yield conn
            changes = conn.connection.dbapi_connection.total_changes - changes
        if changes and shard != INDEX_SHARD_NAME:
            _mark_written(self.path_for_shard(shard))


def _mark_written(path: str) -> None:
    """A run's events are watched as changes to its file (the UI's live view, the CLI's progress), which
    a kept connection leaves in the WAL beside it: the file's time is set, as the last close's checkpoint
    wrote it (setting a time opens no file, so no lock is dropped)."""
    with contextlib.suppress(FileNotFoundError):
        os.utime(path)


def _event_log_has_table(self: SqliteEventLogStorage, table_name: str) -> bool:
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME

    engine = engine_for(self.conn_string_for_shard(INDEX_SHARD_NAME))
    with engine.connect() as conn:
        return bool(engine.dialect.has_table(conn, table_name))


@contextmanager
def _storage_connection(self: SqliteRunStorage | SqliteScheduleStorage) -> Iterator[Connection]:
    with _transaction(engine_for(self._conn_string)) as conn:
        yield conn


def reuse_sqlite_engines() -> None:
    """Patch Dagster's SQLite storages in this process (idempotent)."""
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
    from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
    from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage

    SqliteEventLogStorage._connect = _event_log_connection
    SqliteEventLogStorage.has_table = _event_log_has_table
    SqliteRunStorage.connect = _storage_connection
    SqliteScheduleStorage.connect = _storage_connection
