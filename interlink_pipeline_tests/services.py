"""Long-running processes for the tests that run Dagster as a user would: free loopback ports, waiting with
the service's log in the failure, a stop that works like Ctrl-C before it kills, and a loopback webhook."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
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


def postgres_bin() -> Path:
    found = shutil.which("initdb") or next(
        iter(sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))), None
    )
    if not found:
        pytest.skip("PostgreSQL is not installed (make test installs Debian's package where it runs as root)")
    return Path(found).resolve().parent


@contextmanager
def postgres_server() -> Iterator[int]:
    """A throwaway PostgreSQL server on a free loopback port (as the `postgres` user when we are root: the
    server refuses to run as root); yields its port. User `postgres`, no password."""
    bin_dir = postgres_bin()
    as_user = {"user": "postgres"} if os.geteuid() == 0 else {}
    folder = Path(tempfile.mkdtemp(prefix="interlink-pg-"))
    folder.chmod(0o755)
    if as_user:
        shutil.chown(folder, "postgres", "postgres")
    data, port = folder / "data", free_port()

    def pg(*args):
        done = subprocess.run([str(bin_dir / args[0]), *args[1:]], capture_output=True, text=True, **as_user)
        if done.returncode != 0:
            log = folder / "server.log"
            server = log.read_text()[-3000:] if log.exists() else ""
            pytest.fail(f"{args[0]} failed ({done.returncode}):\n{done.stdout}{done.stderr}\n{server}")

    try:
        pg("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "--no-sync")
        options = f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off -c max_connections=200"
        pg("pg_ctl", "-D", str(data), "-o", options, "-l", str(folder / "server.log"), "-w", "start")
        try:
            yield port
        finally:
            pg("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def create_database(port: int, name: str) -> None:
    import psycopg2

    con = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
    try:
        con.autocommit = True  # CREATE DATABASE runs outside a transaction
        with con.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{name}"')
    finally:
        con.close()


def step_spans(instance, run_id: str) -> list[tuple[float, float]]:
    """(start, end) of every step of a run, from its event log."""
    import dagster as dg

    started: dict[str, float] = {}
    spans = []
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event and event.event_type == dg.DagsterEventType.STEP_START:
            started[event.step_key] = entry.timestamp
        elif event and event.event_type in (
            dg.DagsterEventType.STEP_SUCCESS,
            dg.DagsterEventType.STEP_FAILURE,
        ):
            spans.append((started.pop(event.step_key), entry.timestamp))
    return spans


@contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway Redis server on a free loopback port, nothing kept on disk; yields its URL. Debian's
    `redis-server` (make test installs it where it runs as root); the test skips, saying why, elsewhere."""
    binary = shutil.which("redis-server")
    if not binary:
        pytest.skip("Redis is not installed (make test installs Debian's redis-server where it runs as root)")
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="interlink-redis-"))
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    try:
        with service([*command, "--dir", str(folder)], folder / "server.log"):
            wait_for(lambda: _redis_answers(port), 30, "Redis to answer", folder / "server.log")
            yield f"redis://127.0.0.1:{port}/0"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _redis_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def s3_server(bucket: str) -> Iterator[tuple[str, object]]:
    """A local S3 (moto's server, in memory) on a free loopback port with `bucket` made; yields its URL and
    a boto3 client of it (key id and secret `test`, region us-east-1)."""
    import boto3

    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="interlink-s3-"))
    binary = Path(sys.executable).with_name("moto_server")
    try:
        with service([str(binary), "-H", "127.0.0.1", "-p", str(port)], folder / "server.log"):
            url = f"http://127.0.0.1:{port}"
            wait_for(lambda: http_ok(f"{url}/moto-api/"), 60, "the local S3", folder / "server.log")
            client = boto3.client(
                "s3",
                endpoint_url=url,
                aws_access_key_id="test",
                aws_secret_access_key="test",
                region_name="us-east-1",
            )
            client.create_bucket(Bucket=bucket)
            yield url, client
    finally:
        shutil.rmtree(folder, ignore_errors=True)
