"""What a site's runs are doing now, for the commands that say it or wait on it: the run in progress and
the steps it is at (`status`), waiting for it to end (`materialize --wait`), and the run the inbox sensor
of `make dev` starts after a registration (`register`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from interlink_pipeline.cli.dead_runs import IN_PROGRESS
from interlink_pipeline.defs.site_runs import TRIGGER_TAG, InstanceHome

# a run not finished: waiting in make dev's queue, or at work
NOT_FINISHED = ("NOT_STARTED", "QUEUED", *IN_PROGRESS)
POLL_S = 1.0  # how often a waiting command looks again
DAEMON_BEAT_S = 60  # a Dagster daemon (make dev) that beat this recently is running
SENSOR_GRACE_S = 15  # past the sensor's scan interval: its tick, the settling of the files, the launch
TRIGGERS = {  # the interlink/trigger tag -> who started the run
    "cli": "an interlink command",
    "inbox": "the inbox sensor",
    "inbox-decisions": "the inbox sensor (decisions)",
    "schedule": "a schedule",
}


@dataclass(frozen=True)
class ActiveRun:
    """A run of the site not finished yet."""

    run_id: str
    started_by: str
    steps: tuple[str, ...]  # the steps started and not finished (none yet: it is starting)
    since: float  # when it started, or was queued (epoch seconds)
    queued: bool = False  # waiting in the run queue (make dev runs one run per site at a time)

    def said(self) -> str:
        at = "queued" if self.queued else f"at step {', '.join(self.steps)}" if self.steps else "starting"
        return f"run {self.run_id} (started by {self.started_by}) is {at}, {time.time() - self.since:.0f}s in"


def active_run(home, site: str) -> ActiveRun | None:
    """The site's run not finished yet — queued or at work — (the newest, if several), with the steps it
    is at; `home`: the home's records (site_runs.SqliteHome or InstanceHome)."""
    runs = home.runs(site, statuses=NOT_FINISHED, limit=1)
    if not runs:
        return None
    run = runs[0]
    running: dict[str, None] = {}
    for kind, step in home.step_events(run.run_id):
        if kind == "STEP_START":
            running[step] = None
        else:
            running.pop(step, None)
    trigger = run.tags.get(TRIGGER_TAG)
    started_by = TRIGGERS.get(trigger, f"'{trigger}'") if trigger else "the UI"
    queued = run.status in ("NOT_STARTED", "QUEUED")
    return ActiveRun(run.run_id, started_by, tuple(running), run.started or run.created, queued)


def wait_for_site(instance, site: str, held: Callable[[], bool], say: Callable[[str], None]) -> str | None:
    """Wait until the site has no run in progress and `held()` (its CLI lock taken) is false, saying each
    run waited for once; the id of the last run waited for (None: there was none)."""
    from interlink_pipeline.cli.dead_runs import release_dead_runs

    waited, told, home = None, set(), InstanceHome(instance)
    while True:
        release_dead_runs(instance, site)  # a killed run is not waited for
        run = active_run(home, site)
        if run is None and not held():
            return waited
        if run is not None and run.run_id not in told:
            told.add(run.run_id)
            waited = run.run_id
            say(f"waiting for {run.said()}")
        time.sleep(POLL_S)


def sensor_run(instance, site: str, key: str, after: float, seconds: float) -> ActiveRun | None:
    """The run the inbox sensor starts for the exports just registered (its run key `key`, created after
    `after`), waited for up to `seconds` while a sensor daemon beats (`make dev`); None when no daemon runs
    the sensor, or it started no run in time."""
    from dagster import RunsFilter

    from interlink_pipeline.defs.ingest.inbox_sensor import RUN_KEY_TAG

    home = InstanceHome(instance)
    if not home.beat_within("SENSOR", DAEMON_BEAT_S):
        return None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        records = instance.get_run_records(RunsFilter(tags={RUN_KEY_TAG: key}), limit=1)
        if records and records[0].create_timestamp.timestamp() >= after:
            started = ActiveRun(records[0].dagster_run.run_id, TRIGGERS["inbox"], (), time.time())
            return active_run(home, site) or started
        time.sleep(POLL_S)
    return None
