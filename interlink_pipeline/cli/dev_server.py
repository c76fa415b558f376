"""`make dev` and `make stop`: `dg dev` (the UI, the daemon, the code server) under a supervisor that stops it
the way Ctrl-C does on SIGINT, SIGTERM or SIGHUP, whether it runs in a terminal, in the background or under a
service manager. `dg dev` ignores SIGTERM, and a job started in the background ignores SIGINT, so without it
`kill` stopped nothing. The supervisor's process id is kept in the Dagster home (dev.pid) for `make stop`.

    python -m interlink_pipeline.cli.dev_server start -h 127.0.0.1 -p 3000
    python -m interlink_pipeline.cli.dev_server stop
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from interlink_pipeline.core.environment import environment

PID_FILE = "dev.pid"
STOP_GRACE_S = 60  # how long dg dev may take to stop its services before they are killed


def _pid_file() -> Path:
    return Path(environment().dagster_home or "dagster_home") / PID_FILE


def start(host: str, port: int) -> int:
    """Run dg dev in a process group of its own until it ends or a stop signal arrives; its exit code."""
    project = Path(sys.prefix)
    env = {**os.environ, "VIRTUAL_ENV": str(project)}  # dg warns twice when no virtual environment is active
    command = [str(project / "bin" / "dg"), "dev", "-h", host, "-p", str(port)]
    child = subprocess.Popen(command, env=env, process_group=0, preexec_fn=_default_signals)
    pid_file = _pid_file()
    pid_file.parent.mkdir(parents=True, exist_ok=True)
    pid_file.write_text(str(os.getpid()))

    deadline: list[float] = []  # when dg dev, asked to stop, is killed

    def stop(signum: int, _frame) -> None:
        print(
            f"dev: {signal.Signals(signum).name}: stopping the UI, the daemon and the code server", flush=True
        )
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGINT)  # what Ctrl-C sends
        deadline[:] = [time.monotonic() + STOP_GRACE_S]

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    try:
        while True:
            try:
                return child.wait(1)
            except subprocess.TimeoutExpired:
                if deadline and time.monotonic() > deadline[0]:
                    print(f"dev: still running after {STOP_GRACE_S} s: killed", flush=True)
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(child.pid, signal.SIGKILL)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # what of dg dev's group outlived it
        with contextlib.suppress(FileNotFoundError):
            if pid_file.read_text().strip() == str(os.getpid()):
                pid_file.unlink()


def _default_signals() -> None:
    """dg dev takes SIGINT as Ctrl-C even when this supervisor was started in the background."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop() -> int:
    """Stop the `make dev` of this Dagster home, and wait until it has stopped."""
    import psutil

    pid_file = _pid_file()
    try:
        pid = int(pid_file.read_text().strip())
        if "interlink_pipeline.cli.dev_server" not in " ".join(psutil.Process(pid).cmdline()):
            raise ProcessLookupError(pid)  # the id of a supervisor long gone, reused by another process
        os.kill(pid, signal.SIGTERM)
    except (FileNotFoundError, ValueError, ProcessLookupError, psutil.NoSuchProcess):
        print(f"no make dev is running for {pid_file.parent} (no live {PID_FILE} there)")
        with contextlib.suppress(FileNotFoundError):
            pid_file.unlink()
        return 0
    deadline = time.monotonic() + STOP_GRACE_S + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            print("make dev stopped")
            return 0
        time.sleep(0.2)
    print(f"make dev (process {pid}) did not stop within {STOP_GRACE_S + 10} s", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dev_server", description=__doc__.splitlines()[0], add_help=False)
    commands = parser.add_subparsers(dest="command", required=True)
    started = commands.add_parser("start", add_help=False)
    started.add_argument("-h", "--host", default="127.0.0.1")
    started.add_argument("-p", "--port", type=int, default=3000)
    commands.add_parser("stop")
    args = parser.parse_args(argv)
    return start(args.host, args.port) if args.command == "start" else stop()


if __name__ == "__main__":
    sys.exit(main())
