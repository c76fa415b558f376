"""Long-running processes for the tests that run Dagster as a user would: free loopback ports, waiting with
the service's log in the failure, a stop that works like Ctrl-C before it kills, and a loopback webhook."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


class Webhook:
    """A loopback endpoint that records what it is sent and answers with `status`."""

    def __init__(self, status: int = 200):
        self.status, self.received = status, []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                hook.received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(hook.status)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
