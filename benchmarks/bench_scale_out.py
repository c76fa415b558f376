"""Many sites at once: N generated sites, each `interlink materialize` its own process, all started together,
first on one DuckDB file (the writer pool of 1 lets one step write at a time: the baseline) and then on a
DuckLake (catalog in a throwaway PostgreSQL, Parquet in a folder; the pool admits one step per site). Wall
time is from the first start to the last end. "Overlap" is the longest time during which writing steps of
different sites ran at once, from the Dagster event log. Every site's row counts must match between the two.

    python -m benchmarks.bench_scale_out [--sites 4] [--pages 10000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import DATA, ROOT, print_table, save


def sites(count: int, pages: int) -> list[tuple[str, Path]]:
    """`count` generated sites of about `pages` pages, each its own host and seed (made once, reused)."""
    from interlink_pipeline.sample import generate_site, write_site

    made = []
    for n in range(count):
        host = f"www.shop{n}.example"
        folder = DATA / f"scale-out-{pages}-{n}"
        if not (folder / "internal_all.csv").exists():
            print(f"generating {host} ({pages:,} pages) in {folder} …", flush=True)
            write_site(generate_site(pages, seed=n, with_links=True, host=host), folder)
        made.append((host, folder))
    return made


def run_all(env: dict[str, str], hosts: list[str], logs: Path) -> float:
    """`interlink materialize` for every host at once; the wall seconds until the last one ends."""
    started = time.monotonic()
    children = []
    for host in hosts:
        with (logs / f"{host}.log").open("w") as log:
            command = [sys.executable, "-m", "interlink_pipeline.cli", "materialize", "--site", host]
            children.append(
                subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
            )
    failed = [host for host, child in zip(hosts, children, strict=True) if child.wait() != 0]
    if failed:
        tails = "\n".join((logs / f"{host}.log").read_text()[-3000:] for host in failed)
        raise RuntimeError(f"runs failed: {failed}\n{tails}")
    return time.monotonic() - started


def step_spans(home: Path) -> dict[str, list[tuple[float, float, str]]]:
    """Each site's steps as (start, end, step) from the Dagster home's event log."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        spans: dict[str, list[tuple[float, float, str]]] = {}
        for run in instance.get_runs():
            stats = instance.get_run_step_stats(run.run_id)
            spans[run.tags["dagster/partition"]] = [(s.start_time, s.end_time, s.step_key) for s in stats]
    return spans


def overlap(spans: dict[str, list[tuple[float, float, str]]]) -> tuple[float, int]:
    """(seconds during which steps of two or more sites ran at once, the most sites' steps at once)."""
    edges = sorted(
        (t, +1 if i == 0 else -1) for steps in spans.values() for s in steps for i, t in enumerate(s[:2])
    )
    together, most, running, last = 0.0, 0, 0, None
    for moment, change in edges:
        if running >= 2 and last is not None:
            together += moment - last
        running += change
        most = max(most, running)
        last = moment
    return together, most


def row_counts(env: dict[str, str]) -> dict[str, int]:
    """site/table -> rows, read through the pipeline's own warehouse module."""
    script = (
        "import json; from interlink_pipeline.core.warehouse.database import connect, default_warehouse\n"
        "from interlink_pipeline.core.warehouse.schemas import TABLES\n"
        "from interlink_pipeline.core.warehouse.contract import table_columns\n"
        "out = {}\n"
        "with connect(default_warehouse(), read_only=True) as con:\n"
        "    for t in TABLES:\n"
        "        if 'site' in table_columns(t):\n"
        "            counted = con.execute(f'SELECT site, count(*) FROM {t} GROUP BY site').fetchall()\n"
        "            out |= {f'{site}/{t}': n for site, n in counted}\n"
        "print(json.dumps(out))"
    )
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    import json

    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(mode: str, made: list[tuple[str, Path]], work: Path, lake: str | None) -> dict:
    import dagster as dg

    from interlink_pipeline.defs.tables import WRITER_POOL

    folder = work / mode
    home, inbox, logs = folder / "home", folder / "inbox", folder / "logs"
    for path in (home, inbox, logs):
        path.mkdir(parents=True)
    shutil.copyfile(ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home), "INTERLINK_INBOX": str(inbox)}
    if lake:
        env |= {
            "INTERLINK_WAREHOUSE": lake,
            "INTERLINK_LAKE_DATA_PATH": str(folder / "lake-data"),
            "INTERLINK_LAKE_FILES": str(folder / "files"),
        }
        with dg.DagsterInstance.from_config(str(home)) as instance:  # one writing step per site at once
            instance.event_log_storage.set_concurrency_slots(WRITER_POOL, len(made))
    else:
        env["INTERLINK_WAREHOUSE"] = str(folder / "interlink.duckdb")
    for host, site in made:
        register = ["register", str(site / "internal_all.csv"), "--links", str(site / "all_inlinks.csv")]
        subprocess.run(
            [sys.executable, "-m", "interlink_pipeline.cli", *register, "--site", host],
            env=env,
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
    print(f"{mode}: {len(made)} sites at once …", flush=True)
    seconds = run_all(env, [host for host, _ in made], logs)
    spans = step_spans(home)
    together, most = overlap(spans)
    busy = sum(end - start for steps in spans.values() for start, end, _ in steps)
    print(f"  {mode}: {seconds:.0f}s wall, steps of ≥2 sites at once for {together:.0f}s", flush=True)
    return {
        "seconds": seconds,
        "step_seconds": busy,
        "overlap_seconds": together,
        "most_sites_at_once": most,
        "rows": row_counts(env),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sites", type=int, default=4)
    parser.add_argument("--pages", type=int, default=10_000)
    args = parser.parse_args(argv)
    from interlink_pipeline_tests.services import create_database, postgres_server

    made = sites(args.sites, args.pages)
    work = Path(tempfile.mkdtemp(prefix="interlink-scale-out-"))
    try:
        results = {"file": measure("file", made, work, None)}
        with postgres_server() as port:
            create_database(port, "lake")
            lake = f"ducklake:postgres:dbname=lake host=127.0.0.1 port={port} user=postgres"
            results["lake"] = measure("lake", made, work, lake)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    same = results["file"]["rows"] == results["lake"]["rows"]
    baseline = results["file"]["seconds"]
    print_table(
        f"{args.sites} sites × {args.pages:,} pages, every run started at once ({os.cpu_count()} cores)",
        [
            [
                mode,
                f"{r['seconds']:.0f}",
                f"{baseline / r['seconds']:.2f}×",
                f"{r['step_seconds']:.0f}",
                f"{r['overlap_seconds']:.0f}",
                str(r["most_sites_at_once"]),
                "yes" if same else "NO",
            ]
            for mode, r in results.items()
        ],
        [
            "warehouse",
            "wall s",
            "speed-up",
            "step s (sum)",
            "≥2 sites at once s",
            "most at once",
            "same rows",
        ],
    )
    save(
        "scale_out",
        {
            f"{args.sites}x{args.pages}": {
                m: {k: v for k, v in r.items() if k != "rows"} for m, r in results.items()
            }
        },
    )
    if not same:
        raise SystemExit("the lake's row counts differ from the file's")


if __name__ == "__main__":
    main()
