"""The commands that only read — `interlink status`, `status --site`, `sites`, a one-line `sql` — timed
through the real CLI on a materialised sample, quiet and while another site's run holds the writer, against
two floors measured in the same run: the CLI's own start (`interlink --version`) and what any command that
reads through Dagster pays before it reads anything (importing Dagster, opening the home's instance).

    python -m benchmarks.bench_read_commands [--repeats 3] [--pages 3000]

The sample is registered and materialised once (benchmarks/.data/replan/sample, bench_replan's); each
benchmark run works on a copy, with a generated site of `--pages` pages registered beside it, whose run
holds the writer while the commands are timed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_replan import _cli, _env, _prepared
from benchmarks.harness import ROOT, print_table, save

OTHER_SITE = "www.other.example"
DAGSTER_OPENED = "from dagster import DagsterInstance; DagsterInstance.get()"


def _commands(site: str) -> dict[str, list[str]]:
    return {
        "status --site": ["status", "--site", site],
        "status": ["status"],
        "sites": ["sites"],
        "sql (one line)": ["sql", "--csv", "SELECT count(*) FROM graph.link_plan"],
    }


def _timed(env: dict, argv: list[str]) -> float:
    started = time.monotonic()
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return time.monotonic() - started


def _writer_held(home: Path) -> bool:
    """Whether a run holds the writer pool's slot now (the home's own record of it)."""
    import sqlite3
    from contextlib import closing

    index = f"{(home / 'history/runs/index.db').as_uri()}?mode=ro"
    with closing(sqlite3.connect(index, uri=True, timeout=5)) as con:
        claimed = "SELECT count(*) FROM concurrency_slots WHERE run_id IS NOT NULL AND NOT deleted"
        return con.execute(claimed).fetchone()[0] > 0


def _round(env: dict, site: str, repeats: int, home: Path, running: subprocess.Popen | None) -> dict:
    """Each command and floor `repeats` times; with a run going, whether it held the writer at each."""
    cli = [sys.executable, "-m", "interlink_pipeline.cli"]
    argvs = {name: [*cli, *args] for name, args in _commands(site).items()}
    argvs["floor: interlink --version"] = [*cli, "--version"]
    argvs["floor: Dagster imported, home opened"] = [sys.executable, "-c", DAGSTER_OPENED]
    seconds: dict[str, list[float]] = {name: [] for name in argvs}
    held = 0
    for _ in range(repeats):
        for name, argv in argvs.items():
            if running is not None:
                if running.poll() is not None:
                    raise SystemExit(
                        f"the other site's run ended before the timings did (exit {running.poll()})"
                    )
                held += _writer_held(home)
            seconds[name].append(_timed(env, argv))
    return {"seconds": seconds, "writer_held": held, "timed": repeats * len(argvs)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pages", type=int, default=3000)
    args = parser.parse_args()
    site, prepared = _prepared("sample")
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "site"
        shutil.copytree(prepared, folder, symlinks=True)
        env, home = _env(folder), folder / "home"
        other = Path(work) / "other"
        _cli(env, "generate-site", "--pages", str(args.pages), "--host", OTHER_SITE, "--out", str(other))
        _cli(env, "register", str(other / "internal_all.csv"), "--links", str(other / "all_inlinks.csv"))
        quiet = _round(env, site, args.repeats, home, None)
        log = open(Path(work) / "other.log", "w")  # noqa: SIM115 (the run's output, kept while it runs)
        running = subprocess.Popen(
            [sys.executable, "-m", "interlink_pipeline.cli", "materialize", "--site", OTHER_SITE],
            env={**env, "PYTHONUNBUFFERED": "1"}, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 600
            while not _writer_held(home):
                if running.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit((Path(work) / "other.log").read_text()[-3000:])
                time.sleep(0.1)
            busy = _round(env, site, args.repeats, home, running)
        finally:
            running.terminate()
            running.wait()
            log.close()
    rows = [
        [
            name,
            f"{statistics.median(quiet['seconds'][name]):.2f} s",
            f"{statistics.median(busy['seconds'][name]):.2f} s",
            f"{max(busy['seconds'][name]):.2f} s",
        ]
        for name in quiet["seconds"]
    ]
    header = ["command", "quiet (median)", "another site's run writing (median)", "… slowest"]
    title = (
        f"Reading commands, median of {args.repeats} (the other site's run held the writer at "
        f"{busy['writer_held']} of {busy['timed']} starts)"
    )
    print_table(title, rows, header)
    save("read_commands", {"quiet": quiet, "busy": busy, "cpus": os.cpu_count(), "pages": args.pages})


if __name__ == "__main__":
    main()
