"""Runs whose process is gone — SIGKILL, the OOM killer, a crash, a reboot, `make dev` killed as a whole —
told from those still working, marked failed, recorded and their writer-pool slots freed, so that no site
stays locked behind a run nobody runs."""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass

IN_PROGRESS = ("STARTING", "STARTED", "CANCELING")  # DagsterRunStatus values of a run not finished
# the engine event a CLI run reports when it starts: its process, so the next command can tell a run still
# working from one that was killed, even once the id is reused (in the run's metadata, not its tags)
CLI_PROCESS = "the interlink command runs this run"


@dataclass(frozen=True)
class RunProcess:
    """The process a run works in, as its events name it."""

    pid: int
    host: str  # the machine it runs on
    started: float  # when it started (epoch seconds), or at the latest when it said it worked
    cli: bool  # an `interlink` command's; otherwise a run worker the UI or the daemon launched


def announce_process(instance, run_id: str) -> None:
    """Report, on the run, the CLI process it runs in: its id, machine and start time."""
    import psutil
    from dagster import MetadataValue
    from dagster._core.events import EngineEventData

    pid, host = os.getpid(), socket.gethostname()
    metadata = {
        "pid": MetadataValue.int(pid),
        "host": MetadataValue.text(host),
        "process_started": MetadataValue.timestamp(psutil.Process().create_time()),
    }
    run = instance.get_run_by_id(run_id)
    instance.report_engine_event(f"{CLI_PROCESS}: process {pid} on {host}", run, EngineEventData(metadata))


def run_process(instance, run) -> RunProcess | None:
    """The process of an unfinished run: the one a CLI run announced; otherwise, where the Dagster home
    keeps its history in SQLite (which one machine holds), the process a run worker or the in-process
    executor said it works in ("Started process for run (pid: N)"). A shared PostgreSQL home's other runs
    may work on other machines: they are their run monitoring's."""
    from dagster import DagsterEventType
    from dagster._core.storage.runs import SqliteRunStorage

    said = [
        (record.dagster_event.engine_event_data.metadata, record.timestamp)
        for record in instance.all_logs(run.run_id, of_type=DagsterEventType.ENGINE_EVENT)
    ]
    for metadata, _ in reversed(said):
        if "host" in metadata and "process_started" in metadata:
            pid, host, started = (metadata[k].value for k in ("pid", "host", "process_started"))
            return RunProcess(int(pid), host, started, cli=True)
    launched = [(metadata["pid"].value, at) for metadata, at in said if "pid" in metadata]
    if not launched or not isinstance(instance.run_storage, SqliteRunStorage):
        return None
    pid, at = launched[-1]
    return RunProcess(int(pid), socket.gethostname(), at, cli=False)


def process_gone(process: RunProcess) -> bool:
    """Whether a run's process on this machine is gone: no process of that id, or one that started after
    the run's did (the id was reused). A process of another machine is never judged here."""
    import psutil

    if process.host != socket.gethostname():
        return False
    try:
        started = psutil.Process(process.pid).create_time()
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:  # another user's process: it is there
        return False
    return started > process.started + 1


def release_dead_runs(instance, site: str | None = None) -> None:
    """Mark failed the runs (of `site`, or of any) whose process on this machine is gone — SIGKILL, the OOM
    killer, a crash, a reboot, `make dev` killed with a run in flight —, record each in ops.run_failures
    and free the writer-pool slots they held; free those of finished runs too. Whatever the Dagster home
    holds: a pool or none, SQLite or PostgreSQL. A slot a live run holds is named, so a waiting user knows
    what the wait is for."""
    from dagster import DagsterRunStatus, RunsFilter

    storage = instance.event_log_storage
    holding = set(storage.get_concurrency_run_ids())
    unfinished = RunsFilter(
        tags={"dagster/partition": site} if site else {},
        statuses=[DagsterRunStatus(status) for status in IN_PROGRESS],
    )
    runs = {run.run_id: run for run in instance.get_runs(unfinished)}
    for run_id in sorted(holding - set(runs)):
        run = instance.get_run_by_id(run_id)
        if run is None or run.is_finished:  # a finished (or deleted) run's slots
            storage.free_concurrency_slots_for_run(run_id)
        else:
            runs[run_id] = run
    for run in runs.values():
        process = run_process(instance, run)
        if process is not None and process_gone(process):
            # the definitions' modules only once a run is found dead: status answers without them
            from interlink_pipeline.defs.publish.alerts import failure_payload

            message = f"its process (pid {process.pid}) is gone: it was killed or crashed before finishing"
            instance.report_run_failed(run, message)
            recorded = record_failure(failure_payload(run, [], message))
            storage.free_concurrency_slots_for_run(run.run_id)
            print(
                f"run {run.run_id} had stopped: {message}; marked failed, its slots freed; {recorded}",
                file=sys.stderr,
            )
        elif run.run_id in holding:
            from interlink_pipeline.defs.tables import WRITER_POOL

            where = run.tags.get("dagster/partition", "?")
            print(f"waiting: run {run.run_id} ({where}) holds the {WRITER_POOL} pool", file=sys.stderr)


def record_failure(payload: dict) -> str:
    """Record a failed run in ops.run_failures and post it to the webhook, as the run-failure sensor does;
    what happened, in words (a warehouse that cannot be written cannot keep the record either)."""
    import duckdb

    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.core.publish.alerts import record_failure
    from interlink_pipeline.core.warehouse.database import LOCK_TIMEOUT_S, default_warehouse, storage_problem
    from interlink_pipeline.defs.publish.alerts import FailureAlerts

    alerts = FailureAlerts()
    try:
        _, outcome = record_failure(
            payload, default_warehouse(), alerts.webhook_url, alerts.timeout_s, LOCK_TIMEOUT_S
        )
    except InputError as exc:
        return f"not recorded: {exc}"
    except (OSError, duckdb.Error) as exc:  # a full disk, a warehouse that cannot be written
        problem = storage_problem(str(exc)) or str(exc).splitlines()[0]
        return f"not recorded in ops.run_failures ({default_warehouse()}: {problem})"
    return f"recorded in ops.run_failures (webhook: {outcome})"
