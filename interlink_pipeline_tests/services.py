"""Long-running processes for the tests that run Dagster as a user would: free loopback ports, waiting with
the service's log in the failure, and a stop that works like Ctrl-C before it kills."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition, timeout_s: float, what: str, *logs: Path):
    """`condition()`'s first truthy value; on timeout the test fails with the end of each log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(2)
    tails = "\n".join(f"--- {log.name}:\n{log.read_text()[-6000:]}" for log in logs if log.exists())
    pytest.fail(f"timed out waiting for {what}\n{tails}")


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


@contextmanager
def service(command: list[str], log: Path, **popen):
    """`command` in its own process group, output to `log`; stopped with SIGINT (then SIGKILL) on exit."""
    with log.open("w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **popen
        )
    try:
        yield process
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
