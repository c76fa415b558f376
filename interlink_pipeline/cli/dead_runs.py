"""Runs whose process is gone — SIGKILL, the OOM killer, a crash, a reboot, `make dev` killed as a whole —
told from those still working, marked failed, recorded and their writer-pool slots freed, so that no site
stays locked behind a run nobody runs."""

from __future__ import annotations

import os
import socket
import sys

# a CLI run's process (its id, machine and start time), so the next command can tell a run still working
# from one that was killed, even once the id is reused
PID_TAG, HOST_TAG, PROCESS_STARTED_TAG = "interlink/pid", "interlink/host", "interlink/process_started"
IN_PROGRESS = ("STARTING", "STARTED", "CANCELING")  # DagsterRunStatus values of a run not finished


def process_tags() -> dict[str, str]:
    """This process, as a CLI run's tags name it."""
    import psutil

    started = psutil.Process().create_time()
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname(), PROCESS_STARTED_TAG: f"{started:.2f}"}


def process_gone(tags: dict[str, str]) -> bool:
    """Whether the CLI run these tags name ran on this machine and its process is gone: no process of that
    id, or one started at another time (the id was reused). A run of another machine, or not of the CLI, is
    never judged here (the daemon's run monitoring watches those)."""
    import psutil

    if PID_TAG not in tags or tags.get(HOST_TAG) != socket.gethostname():
        return False
    try:
        started = psutil.Process(int(tags[PID_TAG])).create_time()
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:  # another user's process: it is there
        return False
    recorded = tags.get(PROCESS_STARTED_TAG)
    return recorded is not None and abs(started - float(recorded)) > 1


def launched_process_gone(instance, run) -> int | None:
    """The process id of a run the UI or the daemon launched on this machine, when that process is gone
    (`make dev` killed as a whole): read off the run's "Started process for run (pid: N)" event, told from a
    reused id by its start time. Judged only where the Dagster home keeps its history in SQLite, which one
    machine holds; a shared PostgreSQL home's runs may work on other machines (their run monitoring's)."""
    import psutil
    from dagster import DagsterEventType
    from dagster._core.storage.runs import SqliteRunStorage

    if PID_TAG in run.tags or not isinstance(instance.run_storage, SqliteRunStorage):
        return None
    started = instance.all_logs(run.run_id, of_type=DagsterEventType.ENGINE_EVENT)
    launched = [
        (int(pid.value), record.timestamp)
        for record in started
        if (pid := record.dagster_event.engine_event_data.metadata.get("pid")) is not None
    ]
    if not launched:
        return None
    pid, at = launched[-1]
    try:
        alive_since = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return pid
    except psutil.Error:  # another user's process: it is there
        return None
    return pid if alive_since > at + 1 else None  # started after the run said it began: another process


def release_dead_runs(instance, site: str | None = None) -> None:
    """Mark failed the runs (of `site`, or of any) whose process on this machine is gone — SIGKILL, the OOM
    killer, a crash, a reboot, `make dev` killed with a run in flight —, record each in ops.run_failures
    and free the writer-pool slots they held; free those of finished runs too. Whatever the Dagster home
    holds: a pool or none, SQLite or PostgreSQL. A slot a live run holds is named, so a waiting user knows
    what the wait is for."""
    from dagster import DagsterRunStatus, RunsFilter

    from interlink_pipeline.defs.publish.alerts import failure_payload
    from interlink_pipeline.defs.tables import WRITER_POOL

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
        pid = int(run.tags[PID_TAG]) if process_gone(run.tags) else launched_process_gone(instance, run)
        if pid is not None:
            message = f"its process (pid {pid}) is gone: it was killed or crashed before finishing"
            instance.report_run_failed(run, message)
            recorded = record_failure(failure_payload(run, [], message))
            storage.free_concurrency_slots_for_run(run.run_id)
            print(
                f"run {run.run_id} had stopped: {message}; marked failed, its slots freed; {recorded}",
                file=sys.stderr,
            )
        elif run.run_id in holding:
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
