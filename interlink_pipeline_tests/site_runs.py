"""Sites materialised once for the whole session: a folder holding the warehouse (with the files beside it),
the drop folder and the Dagster instance that ran it, built under a file lock so that pytest-xdist's
workers share one build. A test that only reads uses the folder as it is; a test that writes takes a copy
and runs only the steps it tests."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import dagster as dg
import pytest
from filelock import FileLock


@dataclass(frozen=True)
class SiteFolder:
    """A warehouse and a drop folder under one folder, as a test's run uses them."""

    root: Path

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse" / "interlink.duckdb"

    @property
    def inbox(self) -> Path:
        return self.root / "inbox"

    def copy(self, to: Path) -> SiteFolder:
        """A copy of the warehouse (its exports, snapshot and kept models too) and the drop folder."""
        for part in ("warehouse", "inbox"):
            shutil.copytree(self.root / part, to / part, symlinks=True)
        return SiteFolder(to)


@dataclass(frozen=True)
class RecordedRun:
    """A finished run read back from its instance's event log: what the tests read of a run's result
    (`ExecuteInProcessResult`), available to any process that opens the instance."""

    instance: dg.DagsterInstance
    run_id: str

    @property
    def site(self) -> str:
        return self.instance.get_run_by_id(self.run_id).tags["dagster/partition"]

    @property
    def success(self) -> bool:
        return self.instance.get_run_by_id(self.run_id).status == dg.DagsterRunStatus.SUCCESS

    @property
    def all_events(self) -> list[dg.DagsterEvent]:
        return [entry.dagster_event for entry in self.instance.all_logs(self.run_id) if entry.dagster_event]

    def asset_materializations_for_node(self, step: str) -> list[dg.AssetMaterialization]:
        return [
            event.event_specific_data.materialization
            for event in self.all_events
            if event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION and event.step_key == step
        ]


@dataclass(frozen=True)
class SiteRun:
    """Sites' pipelines run once into one folder, in phases; their runs read back as one result."""

    folder: SiteFolder
    runs: tuple[RecordedRun, ...]
    phases: dict[str, SiteFolder]  # the folder as it stood after each named phase

    @property
    def warehouse(self) -> Path:
        return self.folder.warehouse

    @property
    def inbox(self) -> Path:
        return self.folder.inbox

    @property
    def instance(self) -> dg.DagsterInstance:
        return self.runs[0].instance

    @property
    def success(self) -> bool:
        return all(run.success for run in self.runs)

    @property
    def all_events(self) -> list[dg.DagsterEvent]:
        return [event for run in self.runs for event in run.all_events]

    def asset_materializations_for_node(self, step: str) -> list[dg.AssetMaterialization]:
        return [m for run in self.runs for m in run.asset_materializations_for_node(step)]

    def run_of(self, step: str) -> RecordedRun:
        """The run that materialised `step`."""
        return next(run for run in self.runs if run.asset_materializations_for_node(step))

    def for_site(self, site: str) -> SiteRun:
        """The runs of one of the folder's sites."""
        return replace(self, runs=tuple(run for run in self.runs if run.site == site))


@contextmanager
def instance_at(folder: Path) -> Iterator[dg.DagsterInstance]:
    """A Dagster instance kept in `folder` (SQLite), opened again by whoever reads its runs."""
    folder.mkdir(parents=True, exist_ok=True)
    with dg.instance_for_test(temp_dir=str(folder), set_dagster_home=False) as instance:
        yield instance


def shared_root(factory: pytest.TempPathFactory, worker: str) -> Path:
    """The session's folder that every xdist worker sees (a worker's own base folder's parent)."""
    base = factory.getbasetemp()
    return base.parent if worker != "master" else base


Phase = Callable[[SiteFolder, dg.DagsterInstance], list[str]]


def materialise_once(root: Path, name: str, phases: list[tuple[str | None, Phase]]) -> SiteRun:
    """`root`/`name`, built by the first caller while the others wait: each phase runs (giving its run
    ids) and, if it is named, the folder is copied as it stood after it, to `root`/`name`-`phase`."""
    folder = SiteFolder(root / name)
    done = root / f"{name}.json"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(folder.root, ignore_errors=True)  # what a failed build left
            folder.inbox.mkdir(parents=True)
            run_ids: list[str] = []
            with instance_at(folder.root / "dagster") as instance:
                for phase, build in phases:
                    run_ids += build(folder, instance)
                    if phase:
                        shutil.rmtree(root / f"{name}-{phase}", ignore_errors=True)
                        folder.copy(root / f"{name}-{phase}")
            done.write_text(json.dumps(run_ids))
    instance = dg.DagsterInstance.from_config(str(folder.root / "dagster"))
    return SiteRun(
        folder,
        tuple(RecordedRun(instance, run_id) for run_id in json.loads(done.read_text())),
        {phase: SiteFolder(root / f"{name}-{phase}") for phase, _ in phases if phase},
    )
