"""One run of a site at a time: a lock file per site, released by the kernel when its holder dies, and the
runs the UI, the daemon or make dev's queue hold of the site."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from interlink_pipeline.cli.dead_runs import IN_PROGRESS, run_process
from interlink_pipeline.cli.home import dagster_home


@contextmanager
def site_lock(instance, site: str) -> Iterator[None]:
    """Runs of one site never interleave: a second CLI run of the site (the lock file, released by the
    kernel when its holder dies), a CLI run while the UI or the daemon runs it, or while a run of it waits
    in the queue of a running `make dev` (it would start beside this one) is refused at once."""
    from dagster import DagsterRunStatus
    from filelock import FileLock, Timeout

    from interlink_pipeline.cli.site_activity import DAEMON_BEAT_S
    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.defs.site_runs import InstanceHome, site_runs

    busy = f"a run of {site} is already in progress"
    path = _lock_path(site)
    try:
        held = FileLock(path, blocking=False, on_acquired=_write_pid).acquire()
    except Timeout:
        raise InputError(
            f"{busy} (interlink, process {path.read_text().strip() or '?'}); wait for it to finish, then run "
            "again."
        ) from None
    with held:
        in_progress = [DagsterRunStatus(status) for status in IN_PROGRESS]
        for record in site_runs(instance, site, statuses=in_progress)[:1]:
            run = record.dagster_run
            process = run_process(instance, run)
            where = (
                f"interlink, process {process.pid} on {process.host}"
                if process is not None and process.cli
                else "in the UI or the daemon"
            )
            raise InputError(
                f"{busy} (run {run.run_id}, {where}); wait for it to finish, or cancel it there."
            )
        if InstanceHome(instance).beat_within("QUEUED_RUN_COORDINATOR", DAEMON_BEAT_S):
            for record in site_runs(instance, site, statuses=[DagsterRunStatus.QUEUED])[:1]:
                raise InputError(
                    f"a run of {site} is waiting in make dev's run queue (run {record.dagster_run.run_id}) "
                    f"and starts once the queue lets it; interlink materialize --site {site} --wait waits "
                    "for it, or cancel it in the UI."
                )
        yield


def _lock_path(site: str) -> Path:
    path = dagster_home() / "site_locks" / f"{site}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def site_held(site: str) -> bool:
    """Whether another interlink process holds the site now (its run lock)."""
    from filelock import FileLock, Timeout

    lock = FileLock(_lock_path(site), blocking=False)
    try:
        lock.acquire()
    except Timeout:
        return True
    lock.release()
    return False


def _write_pid(fd: int) -> None:
    """The lock holder's process id in its lock file, for the run it refuses to name."""
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
