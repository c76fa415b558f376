"""A run waiting for the writer pool sleeps (interlink_pipeline/defs/pool_wait.py): two real processes, one
holding the pool's only slot, the other waiting for it."""

import subprocess
import sys
import time

import pytest

from interlink_pipeline.defs.tables import WRITER_POOL
from interlink_pipeline_tests.helpers import PROJECT_ROOT

# One run of a one-step job in the writer pool. The holder sets the pool's limit to 1, touches the marker
# once it holds the slot and keeps it until 6 s after the waiter has started its run (however long the
# waiter took to start: a loaded machine); the waiter prints its wall and CPU seconds for its run.
RUN = """
import sys, time
from pathlib import Path
import dagster as dg
import interlink_pipeline.definitions  # noqa: F401 (what every process that runs steps loads)

role, marker = sys.argv[1], Path(sys.argv[2])
waiting = marker.with_name("waiting")

@dg.op(pool={pool!r})
def write():
    if role == "holder":
        marker.touch()
        while not waiting.exists():
            time.sleep(0.05)
        time.sleep(6)

@dg.job(executor_def=dg.in_process_executor)
def one():
    write()

with dg.DagsterInstance.get() as instance:
    if role == "holder":
        instance.event_log_storage.set_concurrency_slots({pool!r}, 1)
    wall, cpu = time.monotonic(), time.process_time()
    if role == "waiter":
        waiting.touch()
    assert one.execute_in_process(instance=instance).success
    print(time.monotonic() - wall, time.process_time() - cpu)
"""


@pytest.mark.e2e
def test_a_run_waiting_for_the_writer_pool_sleeps_instead_of_spinning(tmp_path):
    """Dagster's executor loops without sleeping while a step waits for a slot: three waiting runs once
    took 40% of a core each from the one step that could run."""
    env = {"DAGSTER_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    (tmp_path / "home").mkdir()
    marker = tmp_path / "holding"

    def run(role: str) -> subprocess.Popen:
        command = [sys.executable, "-c", RUN.format(pool=WRITER_POOL), role, str(marker)]
        return subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE, text=True)

    holder = run("holder")
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert holder.poll() is None and time.monotonic() < deadline, "the holder never took the slot"
        time.sleep(0.1)
    waiter = run("waiter")
    wall, cpu = map(float, waiter.communicate(timeout=120)[0].split())
    assert holder.wait(timeout=60) == 0 and waiter.returncode == 0
    assert wall > 3, f"the waiter did not wait for the slot ({wall:.1f} s)"
    assert cpu < 0.25 * wall, f"the waiter used {cpu:.1f} s of CPU while it waited {wall:.1f} s"
