"""A site's run from the command line: in process, one run of a site at a time, followed step by step,
and a failed run recorded as one anywhere else."""

from __future__ import annotations

import io
import os
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from typing import TextIO

from interlink_pipeline.cli.dead_runs import (
    announce_process,
    record_failure,
    release_dead_runs,
)
from interlink_pipeline.cli.home import dagster_home
from interlink_pipeline.cli.run_files import KeptText, run_file
from interlink_pipeline.cli.site_locks import site_lock
from interlink_pipeline.cli.where import print_where

PROGRESS_MESSAGE_CHARS = 60  # the running step's latest message, as much as the bar shows of it


_INSTANCES: list[dict] = []  # the Dagster home's instance by home, while a command runs (command_instances)


@contextmanager
def command_instances() -> Iterator[None]:
    """Within one command, the Dagster home's instance opened once (each opening takes 0.6 s), and closed
    when the command ends: the next command (or a test calling main again) opens the home as it is then."""
    _INSTANCES.append({})
    try:
        yield
    finally:
        for instance in _INSTANCES.pop().values():
            instance.dispose()


def dagster_instance():
    home = dagster_home()
    opened = _INSTANCES[-1] if _INSTANCES else {}
    if home in opened:
        return opened[home]
    from dagster import DagsterInstance

    opened[home] = DagsterInstance.get()
    return opened[home]


def home_records():
    """The registered sites and their runs as the home records them: read from its SQLite files where it
    keeps them there (a command that only reads answers without Dagster), else through its instance."""
    from interlink_pipeline.defs.site_runs import InstanceHome, local_home

    return local_home(dagster_home()) or InstanceHome(dagster_instance())


def add_site(site: str) -> None:
    from interlink_pipeline.defs.partitions import site_partitions

    instance = dagster_instance()
    if not instance.has_dynamic_partition(site_partitions.name, site):
        instance.add_dynamic_partitions(site_partitions.name, [site])


def registered(name: str) -> str:
    """The site `name` names, which `register` must have added: a misspelt name is refused with the
    registered ones, never made a new, empty site."""
    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.core.urls import normalize_host

    site = normalize_host(name)
    known = home_records().sites()
    if site not in known:
        listed = ", ".join(sorted(known)) or "none yet"
        raise InputError(
            f"'{site}' is not a registered site (registered: {listed}). Register its crawl first: "
            f"interlink register CRAWL --site {site}"
        )
    return site


def run_site(
    site: str, steps: list[str] | None = None, run_config: dict | None = None, run_key: str | None = None
) -> int:
    """Materialise the site's pipeline (or just `steps`) in process and print what was written; one run
    of a site at a time. `run_key`: the inbox files a run of some steps read (a whole run's is known)."""
    with locked_site(site) as instance:
        return execute(instance, site, steps, run_config, run_key)


@contextmanager
def locked_site(site: str) -> Iterator:
    """The Dagster instance, with `site` held by this process until the block ends (its dead runs marked
    failed first): a command that changes what a run reads (a decisions file) does so under the lock, so a
    refusal leaves nothing behind."""
    instance = dagster_instance()
    release_dead_runs(instance)
    with site_lock(instance, site):
        yield instance


def execute(
    instance,
    site: str,
    steps: list[str] | None = None,
    run_config: dict | None = None,
    run_key: str | None = None,
    tags: dict[str, str] | None = None,
) -> int:
    """A run of the site's pipeline (or `steps`) in process, followed step by step, with `tags` besides
    its own; the caller holds the site (locked_site)."""
    from interlink_pipeline.cli.memory_check import crawl_rows, record_peak, refuse_over_cap
    from interlink_pipeline.core.ingest.inbox import default_inbox
    from interlink_pipeline.definitions import defs
    from interlink_pipeline.defs.ingest.inbox_sensor import RUN_KEY_TAG, inbox_run_key
    from interlink_pipeline.defs.jobs import step_keys

    tags = {"interlink/trigger": "cli", **(tags or {})}
    rows = crawl_rows(site) if steps is None else 0  # the crawl the whole run reads, counted once
    if steps is None:
        refuse_over_cap(instance, site, rows)
    key = inbox_run_key(default_inbox(), site) if steps is None else run_key
    started = time.monotonic()
    job = defs.resolve_job_def("site_pipeline")
    selection = step_keys(defs, steps) if steps else None
    run_id = str(uuid.uuid4())  # known before the run starts, so its events can be followed
    planned = job.get_subset(asset_selection=set(selection)) if selection else job
    # what the steps print (dbt's own console, for one) goes to a file, not between the progress lines
    said = KeptText(run_file(site, run_id, "out"))
    with (
        _screen() as screen,
        _progress(instance, run_id, len(planned.graph.nodes), screen),
        said,
        redirect_stdout(said),
    ):
        result = job.execute_in_process(
            run_id=run_id,
            partition_key=site,
            instance=instance,
            raise_on_error=False,
            # a whole run of the registered exports: the inbox sensor of `make dev` will not run them again
            tags={**tags, RUN_KEY_TAG: key} if key else tags,
            asset_selection=selection,
            # the console gets one line per failure, not Dagster's stack traces: they go to the run's log file
            run_config={**(run_config or {}), "loggers": {"console": {"config": {"log_level": "CRITICAL"}}}},
        )
    seconds = time.monotonic() - started
    if not result.success:
        return _report_failure(instance, result, site, seconds)
    if steps is None:
        record_peak(instance, result.run_id, rows)
    print(f"run {result.run_id} for {site} succeeded in {seconds:.1f}s (its steps' output: {said.where()})")
    published = _published_after(instance, result.run_id)
    if published is not None:
        print(f"the plan was published {published:.1f}s into the run; its backtest and report followed")
    _print_written(result)
    print_where()
    return 0


def _published_after(instance, run_id: str) -> float | None:
    """Seconds from the run's start to its plan's publication (None: the run published none)."""
    from dagster import AssetKey

    event = instance.get_latest_materialization_event(AssetKey("published_files"))
    stats = instance.get_run_stats(run_id)
    if event is None or event.run_id != run_id or stats.start_time is None:
        return None
    return event.timestamp - stats.start_time


def _print_written(result) -> None:
    """What a successful run wrote, table by table, and the warnings its steps gave (to stderr)."""
    for event in result.all_events:
        if event.event_type_value == "ASSET_MATERIALIZATION":
            metadata = event.event_specific_data.materialization.metadata
            if "warning" in metadata:
                print(
                    f"warning ({event.asset_key.to_user_string()}): {metadata['warning'].value}",
                    file=sys.stderr,
                )
            if "dagster/row_count" in metadata:
                detail = f"{metadata['dagster/row_count'].value:>10,} rows"
            elif "path" in metadata or "workbook" in metadata:
                detail = str((metadata.get("path") or metadata["workbook"]).value)
            else:
                detail = "built by dbt" if event.asset_key.path[0] in ("marts", "dbt_staging") else ""
            print(f"  {event.asset_key.to_user_string():<32} {detail}")


@contextmanager
def _screen() -> Iterator[TextIO]:
    """The user's terminal (or log) as it is before the run. While steps run, Dagster's capture of their
    output swaps file descriptor 1 for a pipe (a bar drawn there would stop: no terminal), so the bar and
    the step lines write to a copy of it. Output with no descriptor (captured in process) is used as is."""
    try:
        descriptor = os.dup(sys.stdout.fileno())
    except (AttributeError, OSError, io.UnsupportedOperation):
        descriptor = None
    if descriptor is None:
        yield sys.stdout
        return
    with os.fdopen(descriptor, "w", encoding="utf-8", errors="replace", buffering=1) as screen:
        yield screen


@contextmanager
def _progress(instance, run_id: str, steps: int, screen: TextIO) -> Iterator[None]:
    """How far the run is while it goes: in a terminal, a bar with the step running, the steps done, the
    time spent and the step's latest message (a long step says how far it is: "embedded 20,000 of 81,515
    new texts"); otherwise a line per finished step (logs, CI). Once the run starts, its process is reported
    on it (announce_process)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    terminal = screen.isatty()
    bar = Progress(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[said]}", style="dim"),
        console=Console(file=screen),
        redirect_stdout=False,
        disable=not terminal,
    )
    task = bar.add_task("starting", total=steps, said="")
    began: dict[str, float] = {}

    def seen(entry, _cursor) -> None:
        event = entry.dagster_event
        if event is None:
            if entry.step_key is not None and entry.user_message:
                bar.update(task, said=entry.user_message.splitlines()[0][:PROGRESS_MESSAGE_CHARS])
            return
        if event.event_type_value == "PIPELINE_START":  # DagsterEventType.RUN_START's value
            announce_process(instance, run_id)  # the process, for a later command to tell if it was killed
        if event.step_key is None:
            return
        if event.event_type_value == "STEP_START":
            began[event.step_key] = time.monotonic()
            bar.update(task, description=event.step_key, said="")
        elif event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED"):
            bar.advance(task)
            done = bar.tasks[0].completed
            took = time.monotonic() - began.get(event.step_key, time.monotonic())
            if not terminal:
                outcome = event.event_type_value.removeprefix("STEP_").lower()
                print(
                    f"  [{done:.0f}/{steps}] {event.step_key}: {outcome} in {took:.1f}s",
                    file=screen,
                    flush=True,
                )

    instance.watch_event_logs(run_id, None, seen)
    try:
        with bar:
            yield
    finally:
        instance.end_watch_event_logs(run_id, seen)


def _report_failure(instance, result, site: str, seconds: float) -> int:
    """A failed CLI run, as a run anywhere else fails: recorded in ops.run_failures and posted to the
    webhook; the user gets the step and its message, and the path of the full log."""
    from interlink_pipeline.defs.publish.alerts import failure_payload

    events = result.all_events
    payload = failure_payload(
        instance.get_run_by_id(result.run_id),
        [e for e in events if e.event_type_value == "STEP_FAILURE"],
        None,
    )
    with KeptText(run_file(site, result.run_id, "log")) as log:
        for event in events:
            log.write(f"{event.event_type_value} {event.step_key or ''} {event.message or ''}\n")
            error = getattr(event.event_specific_data, "error", None)
            if error is not None:
                log.write(error.to_string() + "\n")
    recorded = record_failure(payload)
    where = f" at {payload['step']}" if payload["step"] else ""
    print(
        f"error: run {result.run_id} for {site} failed{where} after {seconds:.1f}s: {payload['message']}\n"
        f"full log: {log.where()}\n{recorded}",
        file=sys.stderr,
    )
    return 1


def warehouse_resource():
    from interlink_pipeline.core.warehouse.database import default_warehouse
    from interlink_pipeline.defs.resources import Warehouse

    return Warehouse(path=str(default_warehouse()))
