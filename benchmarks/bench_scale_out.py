"""Many sites at once: N generated sites, each `interlink materialize` its own process, all started together,
first on one DuckDB file (the writer pool of 1 lets one step write at a time: the baseline) and then on a
DuckLake (catalog in a throwaway PostgreSQL, Parquet in a folder; a lake's steps join no pool, so every site
writes at once). Wall time is from the first start to the last end. "Overlap" is the time during which steps
of two or more sites ran at once, from the Dagster event log. "CPU busy" is the share of the machine's core
time in use during the runs (/proc/stat): what running sites at once can add is the idle rest. Every site's
row counts must match between the two.

    python -m benchmarks.bench_scale_out [--sites 4] [--pages 10000] [--parts file lake catalog]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
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


def cpu_jiffies() -> tuple[int, int]:
    """(busy, total) CPU time of the whole machine since boot, all cores (Linux /proc/stat)."""
    user, nice, system, idle, iowait, irq, softirq, steal = map(
        int, Path("/proc/stat").read_text().split()[1:9]
    )
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait


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
    return json.loads(done.stdout.strip().splitlines()[-1])


# What one site's run leaves in the lake, and what its writes cost: each table's live Parquet files and bytes
# for the site, the time to replace the site's rows of the table again (what a write holds the table's lock
# for), then the lake's files before and after the lake_maintenance job's work with nothing kept.
_FOOTPRINT = """
import dataclasses, json, sys, time
from pathlib import Path
from interlink_pipeline.core.warehouse.database import connect, default_warehouse
from interlink_pipeline.core.warehouse.lake import data_path
from interlink_pipeline.core.warehouse.lake_maintenance import MaintenanceOptions, maintain
from interlink_pipeline.core.warehouse.schemas import TABLES
from interlink_pipeline.core.warehouse.contract import table_columns
from interlink_pipeline.core.warehouse.store import read_site, replace_site_rows

lake, site = default_warehouse(), sys.argv[1]
def on_disk():
    files = list(Path(data_path()).rglob("*.parquet"))
    return [len(files), sum(p.stat().st_size for p in files)]
tables = {}
for table in TABLES:
    if "site" not in table_columns(table):
        continue
    rows = read_site(lake, table, site)
    schema, name = table.split(".")
    with connect(lake, read_only=True) as con:
        files = con.execute(
            "SELECT count(*), coalesce(sum(data_file_size_bytes), 0) FROM ducklake_list_files('lake', ?, "
            "schema => ?) WHERE data_file LIKE ?", [name, schema, f"%site={site}/%"]
        ).fetchone()
    began = time.perf_counter()
    replace_site_rows(lake, site, {table: rows})
    tables[table] = {"rows": rows.height, "files": files[0], "bytes": files[1],
                     "rewrite_s": time.perf_counter() - began}
disk = on_disk()
report = maintain(lake, MaintenanceOptions(keep_snapshots_days=0, file_grace_hours=0))
print(json.dumps({"tables": tables, "maintenance": dataclasses.asdict(report), "disk_before": disk,
                  "disk_after": on_disk()}))
"""


def footprint(env: dict[str, str], site: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _FOOTPRINT, site], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(mode: str, made: list[tuple[str, Path]], work: Path, lake: str | None) -> dict:
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
    before = cpu_jiffies()
    seconds = run_all(env, [host for host, _ in made], logs)
    after = cpu_jiffies()
    spans = step_spans(home)
    together, most = overlap(spans)
    busy = sum(end - start for steps in spans.values() for start, end, _ in steps)
    print(f"  {mode}: {seconds:.0f}s wall, steps of ≥2 sites at once for {together:.0f}s", flush=True)
    measured = {
        "seconds": seconds,
        "step_seconds": busy,
        "overlap_seconds": together,
        "most_sites_at_once": most,
        "cpu_busy": (after[0] - before[0]) / max(1, after[1] - before[1]),
        "steps": {site: {step: end - start for start, end, step in steps} for site, steps in spans.items()},
        "rows": row_counts(env),
    }
    if lake:
        measured["footprint"] = footprint(env, made[0][0])
    return measured


# One process's small commits for `seconds`: its site's rows of one table (5 rows) replaced again and again.
_COMMITTER = """
import sys, time
import polars as pl
from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
from interlink_pipeline.core.ingest.pages import clean_pages
from interlink_pipeline.core.warehouse.store import replace_site_rows
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import SAMPLE_DIR

site, table, lake = sys.argv[1], sys.argv[2], sys.argv[5]
seconds, start = float(sys.argv[3]), float(sys.argv[4])
raw = read_crawl_export(SAMPLE_DIR / "internal_all.csv", SAMPLE_HOST).frame
frames = {"raw.crawl_pages": raw, "staging.excluded_pages": clean_pages(raw, SAMPLE_HOST).excluded}
rows = frames[table].head(5).with_columns(pl.lit(site).alias("site"))
replace_site_rows(lake, site, {table: rows})
time.sleep(max(0.0, start - time.time()))
took = []
while time.time() < start + seconds:
    began = time.perf_counter()
    replace_site_rows(lake, site, {table: rows})
    took.append(time.perf_counter() - began)
print(len(took), sorted(took)[len(took) // 2])
"""


def commits(lake: str, tables: list[str], data: Path, seconds: float = 20.0) -> dict:
    """Commits per second through the catalog: one writer per entry of `tables`, all at once."""
    start = time.time() + 10  # every writer has imported and made its first write by then
    env = {**os.environ, "INTERLINK_LAKE_DATA_PATH": str(data)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _COMMITTER, f"c{n}.example", table, str(seconds), str(start), lake],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n, table in enumerate(tables)
    ]
    counts, medians = [], []
    for child in children:
        out, err = child.communicate()
        if child.returncode:
            raise RuntimeError(err[-3000:])
        count, median = out.split()
        counts.append(int(count))
        medians.append(float(median))
    return {
        "writers": len(tables),
        "commits_per_s": sum(counts) / seconds,
        "median_ms": 1000 * sorted(medians)[len(medians) // 2],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sites", type=int, default=4)
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=["file", "lake", "catalog"],
        default=["file", "lake", "catalog"],
        help="the runs on a file; on a lake (and one site's footprint there); the catalog's commit rates",
    )
    args = parser.parse_args(argv)
    from interlink_pipeline_tests.services import create_database, postgres_server

    work = Path(tempfile.mkdtemp(prefix="interlink-scale-out-"))
    results: dict[str, dict] = {}
    catalog = []
    try:
        made = sites(args.sites, args.pages) if {"file", "lake"} & set(args.parts) else []
        if "file" in args.parts:
            results["file"] = measure("file", made, work, None)
        with postgres_server() as port:
            create_database(port, "lake")
            lake = f"ducklake:postgres:dbname=lake host=127.0.0.1 port={port} user=postgres"
            if "lake" in args.parts:
                results["lake"] = measure("lake", made, work, lake)
            if "catalog" in args.parts:
                data = work / "lake" / "lake-data"  # where measure() put the lake's data, if it ran
                catalog = [
                    commits(lake, ["staging.excluded_pages"], data),
                    commits(lake, ["staging.excluded_pages"] * 4, data),
                    commits(lake, ["staging.excluded_pages", "raw.crawl_pages"] * 2, data),
                ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if results:
        report_runs(args, results)
    if catalog:
        print_table(
            "Small commits through the lake's catalog (each replaces a site's 5 rows; 20 s)",
            [
                [str(c["writers"]), label, f"{c['commits_per_s']:.1f}", f"{c['median_ms']:.0f}"]
                for c, label in zip(catalog, ["one", "one", "two"], strict=True)
            ],
            ["writers", "tables written", "commits/s (all writers)", "median ms per commit"],
        )
        save("scale_out", {"catalog": {"commits": catalog}})


def report_runs(args: argparse.Namespace, results: dict[str, dict]) -> None:
    same = len(results) < 2 or results["file"]["rows"] == results["lake"]["rows"]
    baseline = results.get("file", {}).get("seconds")
    print_table(
        f"{args.sites} sites × {args.pages:,} pages, every run started at once ({os.cpu_count()} cores)",
        [
            [
                mode,
                f"{r['seconds']:.0f}",
                f"{baseline / r['seconds']:.2f}×" if baseline else "–",
                f"{r['step_seconds']:.0f}",
                f"{r['overlap_seconds']:.0f}",
                str(r["most_sites_at_once"]),
                f"{r['cpu_busy']:.0%}",
                "yes" if same and len(results) == 2 else ("–" if same else "NO"),
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
            "CPU busy",
            "same rows",
        ],
    )
    steps = list(next(iter(next(iter(results.values()))["steps"].values())))
    print_table(
        "Each step, median over the sites (s): one at a time on the file, all sites at once on the lake",
        [[step, *(f"{_median_step(r, step):.1f}" for r in results.values())] for step in steps],
        ["step", *results],
    )
    if "lake" in results:
        report_footprint(results["lake"]["footprint"])
    runs = {mode: {k: v for k, v in r.items() if k != "rows"} for mode, r in results.items()}
    save("scale_out", {f"{args.sites}x{args.pages}": runs})
    if not same:
        raise SystemExit("the lake's row counts differ from the file's")


def _median_step(result: dict, step: str) -> float:
    return statistics.median(steps.get(step, 0.0) for steps in result["steps"].values())


def report_footprint(found: dict) -> None:
    tables = sorted(found["tables"].items(), key=lambda item: -item[1]["rewrite_s"])
    print_table(
        "One site's tables in the lake: live Parquet files, size, and the time to replace its rows again",
        [
            [table, f"{t['rows']:,}", str(t["files"]), f"{t['bytes'] / 1e6:.1f}", f"{t['rewrite_s']:.2f}"]
            for table, t in tables
        ],
        ["table", "rows", "files", "MB", "rewrite s"],
    )
    done = found["maintenance"]
    print_table(
        f"The whole lake before and after lake_maintenance with nothing kept ({done['seconds']:.1f} s)",
        [
            [
                when,
                str(files["snapshots"]),
                f"{files['live_files']:,}",
                f"{files['live_bytes'] / 1e6:.0f}",
                f"{disk[0]:,}",
                f"{disk[1] / 1e6:.0f}",
            ]
            for when, files, disk in (
                ("before", done["before"], found["disk_before"]),
                ("after", done["after"], found["disk_after"]),
            )
        ],
        ["", "snapshots", "live files", "live MB", "files on disk", "MB on disk"],
    )


if __name__ == "__main__":
    main()
