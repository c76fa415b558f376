"""The registered sites and their runs as the Dagster home records them, for the CLI (its run lock,
`interlink status`, `sites`) and the freshness sensor, without loading the definitions.

The commands that only read answer from a local home's SQLite files as they lie (`SqliteHome`): importing
Dagster and opening its instance take 2–3 s, longer than the whole answer should. A home kept elsewhere
(PostgreSQL, another storage in its dagster.yaml) is read through the instance (`InstanceHome`). Both give
the same `RunRow`s, so what the commands say of a run is written once.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

SITE_PARTITIONS = "sites"  # the dynamic partitions a site is one of (defs.partitions)
PARTITION_TAG = "dagster/partition"
TRIGGER_TAG = "interlink/trigger"  # who started a run: cli, inbox, schedule, freshness (none: the UI)
# the tag of a check's own run: not a run of the site's pipeline (interlink status, the CLI's run lock)
FRESHNESS_TAG = {TRIGGER_TAG: "freshness"}
STEP_EVENTS = ("STEP_START", "STEP_SUCCESS", "STEP_FAILURE")
# dagster.yaml keys that keep the home's records somewhere else than its own SQLite files
STORAGE_KEYS = ("storage", "run_storage", "event_log_storage", "schedule_storage")
BUSY_TIMEOUT_S = 5.0  # a read waits this long for a run's write to the same file to commit


@dataclass(frozen=True)
class RunRow:
    """A run as the commands tell of it."""

    run_id: str
    status: str  # a DagsterRunStatus value: QUEUED, STARTED, SUCCESS, ...
    tags: dict[str, str]
    created: float  # epoch seconds
    started: float | None
    ended: float | None


class SqliteHome:
    """A local Dagster home's records, read from its SQLite files (read-only, never locking them): the
    runs in history/runs.db, the sites in history/runs/index.db, a run's steps in its own event file."""

    def __init__(self, root: Path):
        self.root = root

    def sites(self) -> list[str]:
        sql = "SELECT partition FROM dynamic_partitions WHERE partitions_def_name = ? ORDER BY id"
        return [row[0] for row in self._rows("history/runs/index.db", sql, [SITE_PARTITIONS])]

    def runs(self, site: str, statuses: tuple[str, ...] | None = None, limit: int = 20) -> list[RunRow]:
        tagged = "SELECT run_id FROM run_tags WHERE key = ? AND value = ?"
        sql = (
            "SELECT run_id, status, create_timestamp, start_time, end_time FROM runs "
            f"WHERE run_id IN ({tagged}) AND run_id NOT IN ({tagged})"
        )
        params: list[object] = [PARTITION_TAG, site, *next(iter(FRESHNESS_TAG.items()))]
        if statuses is not None:
            sql += f" AND status IN ({', '.join('?' * len(statuses))})"
            params += statuses
        runs = self._rows("history/runs.db", sql + " ORDER BY id DESC LIMIT ?", [*params, limit])
        tags: dict[str, dict[str, str]] = {run[0]: {} for run in runs}
        of_runs = f"SELECT run_id, key, value FROM run_tags WHERE run_id IN ({', '.join('?' * len(tags))})"
        of_runs += " AND key NOT LIKE '.%'"  # Dagster's own index tags (a pool's), not the run's
        for run_id, key, value in self._rows("history/runs.db", of_runs, list(tags)) if tags else []:
            tags[run_id][key] = value
        return [
            RunRow(run_id, status, tags[run_id], _epoch(created), started, ended)
            for run_id, status, created, started, ended in runs
        ]

    def step_events(self, run_id: str) -> list[tuple[str, str]]:
        """The run's step starts and ends in order, as (event type, step)."""
        sql = (
            "SELECT dagster_event_type, step_key FROM event_logs "
            f"WHERE dagster_event_type IN ({', '.join('?' * len(STEP_EVENTS))}) ORDER BY id"
        )
        return self._rows(f"history/runs/{run_id}.db", sql, list(STEP_EVENTS))

    def beat_within(self, daemon: str, seconds: float) -> bool:
        """Whether the daemon (SENSOR, MONITORING, ...) of a `make dev` beat in the last `seconds`."""
        sql = "SELECT timestamp FROM daemon_heartbeats WHERE daemon_type = ?"
        beats = self._rows("history/runs.db", sql, [daemon])
        if not beats:
            return False
        return datetime.now(UTC).timestamp() - _epoch(beats[0][0]) < seconds

    def _rows(self, name: str, sql: str, params: list[object]) -> list[tuple]:
        """The query's rows from one of the home's files; none where the file or its table is not made
        yet (a home no run has used)."""
        path = self.root / name
        if not path.exists():
            return []
        uri = f"{path.absolute().as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)) as con:
            try:
                return con.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return []
                raise


class InstanceHome:
    """The same records read through a Dagster instance (any storage)."""

    def __init__(self, instance):
        self.instance = instance

    def sites(self) -> list[str]:
        return list(self.instance.get_dynamic_partitions(SITE_PARTITIONS))

    def runs(self, site: str, statuses: tuple[str, ...] | None = None, limit: int = 20) -> list[RunRow]:
        from dagster import DagsterRunStatus

        wanted = [DagsterRunStatus(status) for status in statuses] if statuses is not None else None
        return [
            RunRow(
                record.dagster_run.run_id,
                record.dagster_run.status.value,
                dict(record.dagster_run.tags),
                record.create_timestamp.timestamp(),
                record.start_time,
                record.end_time,
            )
            for record in site_runs(self.instance, site, wanted, limit)
        ]

    def step_events(self, run_id: str) -> list[tuple[str, str]]:
        from dagster import DagsterEventType

        events = self.instance.all_logs(run_id, of_type={DagsterEventType(kind) for kind in STEP_EVENTS})
        return [(event.dagster_event.event_type_value, event.step_key) for event in events]

    def beat_within(self, daemon: str, seconds: float) -> bool:
        beat = self.instance.get_daemon_heartbeats().get(daemon)
        return beat is not None and datetime.now(UTC).timestamp() - beat.timestamp < seconds


def _epoch(stamp: str) -> float:
    """Epoch seconds of a time SQLite keeps as UTC text ("2026-12-06 18:26:08.799530")."""
    return datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()


def local_home(root: Path) -> SqliteHome | None:
    """The home's records as SQLite files, where its dagster.yaml keeps them there (names no other
    storage); None otherwise."""
    import yaml

    config = root / "dagster.yaml"
    settings = yaml.safe_load(config.read_text()) if config.exists() else None
    if isinstance(settings, dict) and any(key in settings for key in STORAGE_KEYS):
        return None
    return SqliteHome(root)


def site_runs(instance, site: str, statuses: list | None = None, limit: int = 20) -> list:
    """The site's runs (Dagster's records, newest first) in `statuses`, but the freshness check's own: a
    check, not a run of the site (the CLI's run lock, the freshness sensor)."""
    from dagster import RunsFilter

    records = instance.get_run_records(RunsFilter(tags={PARTITION_TAG: site}, statuses=statuses), limit=limit)
    return [r for r in records if not FRESHNESS_TAG.items() <= r.dagster_run.tags.items()]
