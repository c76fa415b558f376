"""Dagster's SQLite storages keep one engine per file (interlink_pipeline/defs/sqlite_engines.py): a run's
events cost a few connections, another process reads every one of them, and a replaced file is read anew."""

import json
import sqlite3
import subprocess
import sys

import dagster as dg
from sqlalchemy import event, text
from sqlalchemy.engine import Engine

import interlink_pipeline.definitions  # noqa: F401 (what every process that runs steps loads)
from interlink_pipeline.defs.sqlite_engines import engine_for

# A process without the patch reads the instance: Dagster's own storages, an engine per statement.
READ_RUN = """
import json, sys
import dagster as dg
with dg.DagsterInstance.from_config(sys.argv[1]) as instance:
    run = instance.get_run_by_id(sys.argv[2])
    events = instance.all_logs(sys.argv[2])
    print(json.dumps([run.status.value, len(events), len(instance.get_asset_keys())]))
"""


@dg.asset
def one_table() -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"rows": 1})


@dg.asset(deps=[one_table])
def another_table() -> dg.MaterializeResult:
    return dg.MaterializeResult(metadata={"rows": 2})


def test_a_runs_events_cost_a_few_connections_and_another_process_reads_them_all(tmp_path):
    connections: list[object] = []

    def opened_one(dbapi_connection, record) -> None:
        connections.append(dbapi_connection)

    event.listen(Engine, "connect", opened_one)
    try:
        with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
            before = len(connections)
            result = dg.materialize([one_table, another_table], instance=instance)
            opened = len(connections) - before
            events = len(instance.all_logs(result.run_id))
    finally:
        event.remove(Engine, "connect", opened_one)
    assert result.success and events > 10
    # the run's shard, the index shard, runs.db and schedules.db, each opened once (Dagster's own
    # storages opened one connection per statement: several per event)
    assert opened <= 4, f"{opened} SQLite connections for {events} events"
    read = subprocess.run(
        [sys.executable, "-c", READ_RUN, str(tmp_path), result.run_id], capture_output=True, text=True
    )
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout) == ["SUCCESS", events, 2]


def test_a_deleted_and_remade_file_gets_a_new_engine(tmp_path):
    path = tmp_path / "runs.db"
    conn_string = f"sqlite:///{path}"
    first = engine_for(conn_string)
    with first.connect() as conn:
        conn.execute(text("CREATE TABLE old_table (x INTEGER)"))
        conn.commit()
    assert engine_for(conn_string) is first  # kept while the file stands
    path.unlink()
    with sqlite3.connect(path) as remade:
        remade.execute("CREATE TABLE new_table (x INTEGER)")
    second = engine_for(conn_string)
    assert second is not first
    with second.connect() as conn:
        tables = conn.execute(text("SELECT name FROM sqlite_master")).scalars().all()
    assert tables == ["new_table"]
