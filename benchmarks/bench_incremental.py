"""Incremental re-runs, end to end through the CLI: a cold run of a generated site, then re-crawls with 1%
and then 10% of the titles changed, each `interlink materialize` in its own process (its peak RSS is that
process's). Per-step times come from the run's Dagster events; plan stability is the share of the previous
plan's links (source, target) that the next plan keeps. The baseline is the cold run, in the same session.

    python -m benchmarks.bench_incremental [--sizes 10000 100000] [--changes 0.01 0.1] [--keep FOLDER]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from benchmarks.harness import ROOT, generated_site, print_table, save

SITE = "www.alpinegear.example"


def change_titles(source: Path, target: Path, share: float, round_: int) -> int:
    """The crawl at `source` with every (1/share)-th page's title changed, written to `target`."""
    crawl = pl.read_csv(source, infer_schema=False)
    step = max(1, round(1 / share))
    changed = crawl.with_columns(
        pl.when(pl.int_range(pl.len()) % step == round_ % step)
        .then(pl.col("Title 1") + f" (update {round_})")
        .otherwise(pl.col("Title 1"))
        .alias("Title 1")
    )
    changed.write_csv(target)
    return (changed["Title 1"] != crawl["Title 1"]).sum()


# `interlink ARGS` in a fresh process that reports its own peak RSS and CPU seconds (and its children's:
# dbt) when it ends
_MEASURED_CLI = """
import resource, runpy, sys
sys.argv = ["interlink", *sys.argv[1:]]
try:
    runpy.run_module("interlink_pipeline.cli", run_name="__main__")
finally:
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    cpu = sum(u.ru_utime + u.ru_stime for u in usage)
    print(f"@@PEAK@@{max(u.ru_maxrss for u in usage)} {cpu:.1f}", file=sys.stderr)
"""


@dataclass
class Measured:
    """One `interlink` process: wall seconds, peak RSS (MB, its own or a child's: dbt), CPU seconds, and
    its RSS with its children's sampled every SAMPLE_S (epoch seconds, MB) to tell which step peaked."""

    seconds: float
    peak_mb: float
    cpu_seconds: float
    rss: list[tuple[float, float]]


SAMPLE_S = 0.5


def interlink(env: dict[str, str], *args: str) -> Measured:
    """Run `interlink ARGS` and measure it (Measured)."""
    import psutil

    started, rss = time.monotonic(), []
    with tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            [sys.executable, "-c", _MEASURED_CLI, *args], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
            stderr=err, text=True,
        )  # fmt: skip
        watched = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                tree = [watched, *watched.children(recursive=True)]
                rss.append((time.time(), sum(p.memory_info().rss for p in tree) / 2**20))
            except psutil.Error:  # a child that ended between the listing and the reading
                pass
            time.sleep(SAMPLE_S)
        err.seek(0)
        stderr = err.read()
    seconds = time.monotonic() - started
    if process.returncode != 0:
        raise RuntimeError(f"interlink {' '.join(args)} failed:\n{stderr[-3000:]}")
    peak, cpu = next(line for line in stderr.splitlines() if line.startswith("@@PEAK@@")).split()
    return Measured(seconds, int(peak.removeprefix("@@PEAK@@")) / 1024, float(cpu), rss)


def last_run_steps(env: dict[str, str], rss: list[tuple[float, float]]) -> dict[str, dict[str, float]]:
    """Per step of the newest run in the bench's Dagster home: its seconds, the highest RSS sampled while
    it ran (MB; 0 when it ran between two samples) and how many seconds into the step it was sampled (a
    peak at the end is the step's write)."""
    script = (
        "import json; from dagster import DagsterInstance; i = DagsterInstance.get(); "
        "r = i.get_runs(limit=1)[0]; "
        "print(json.dumps({s.step_key: [s.start_time, s.end_time] for s in i.get_run_step_stats(r.run_id)}))"
    )
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    spans = json.loads(done.stdout.strip().splitlines()[-1])
    steps = {}
    for step, (start, end) in spans.items():
        at, mb = max(
            ((at, mb) for at, mb in rss if start <= at <= end), key=lambda s: s[1], default=(start, 0.0)
        )
        steps[step] = {"seconds": end - start, "peak_rss_mb": mb, "peak_at_s": at - start}
    return steps


def plan_links(warehouse: Path) -> pl.DataFrame:
    import duckdb

    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute(
            "SELECT source_page_id, target_page_id FROM graph.link_plan WHERE site = ?", [SITE]
        ).pl()


def measure_size(pages: int, changes: list[float], keep: Path | None = None) -> list[dict]:
    """The cold run and the re-crawls of a generated site of `pages`; its folder (warehouse, Dagster home,
    models) is moved to `keep`/<pages> when given, to profile a step on the state the last run left."""
    site = generated_site(pages, with_links=True)
    work = Path(tempfile.mkdtemp(prefix="interlink-incremental-"))
    home = work / "home"
    home.mkdir()
    shutil.copyfile(ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "INTERLINK_WAREHOUSE": str(work / "warehouse.duckdb"),
        "INTERLINK_INBOX": str(work / "inbox"),
    }
    crawl = work / "internal_all.csv"
    shutil.copyfile(site / "internal_all.csv", crawl)
    links = site / "all_inlinks.csv"
    interlink(env, "register", str(crawl), "--links", str(links), "--site", SITE)
    rows = []
    previous = None
    for round_, share in enumerate([0.0, *changes]):
        changed = 0
        if share:
            changed = change_titles(site / "internal_all.csv", crawl, share, round_)
            interlink(env, "register", str(crawl), "--links", str(links), "--site", SITE)
        measured = interlink(env, "materialize", "--site", SITE)
        plan = plan_links(work / "warehouse.duckdb")
        kept = (
            plan.join(previous, on=["source_page_id", "target_page_id"], how="semi").height
            if previous is not None
            else None
        )
        row = {
            "pages": pages,
            "run": "cold" if not share else f"{share:.0%} titles changed",
            "titles_changed": int(changed),
            "seconds": measured.seconds,
            "peak_rss_mb": measured.peak_mb,
            "cpu_seconds": measured.cpu_seconds,
            "plan_links": plan.height,
            "plan_stability": kept / previous.height if previous is not None and previous.height else None,
            "steps": last_run_steps(env, measured.rss),
        }
        print(
            f"  {pages:,} pages, {row['run']}: {measured.seconds:.1f}s, {measured.cpu_seconds:.0f} s CPU, "
            f"{measured.peak_mb:,.0f} MB",
            flush=True,
        )
        rows.append(row)
        previous = plan
    if keep is None:
        shutil.rmtree(work, ignore_errors=True)
    else:
        shutil.rmtree(keep / str(pages), ignore_errors=True)
        shutil.move(work, keep / str(pages))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--changes", type=float, nargs="+", default=[0.01, 0.1])
    parser.add_argument("--keep", type=Path, help="keep each size's folder under this one (KEEP/<pages>)")
    args = parser.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    results = [row for pages in args.sizes for row in measure_size(pages, args.changes, args.keep)]
    cold = {row["pages"]: row["seconds"] for row in results if row["run"] == "cold"}
    table = [
        [
            f"{row['pages']:,}",
            row["run"],
            f"{row['seconds']:.0f}",
            f"{row['cpu_seconds']:.0f}",
            "1.0×" if row["run"] == "cold" else f"{cold[row['pages']] / row['seconds']:.1f}×",
            f"{row['peak_rss_mb'] / 1024:.2f}",
            "-" if row["plan_stability"] is None else f"{row['plan_stability']:.1%}",
        ]
        for row in results
    ]
    print_table(
        "End to end through the CLI (one run each; the cold run is the baseline)",
        table,
        ["pages", "run", "seconds", "CPU seconds", "vs cold", "peak RSS GB", "plan kept"],
    )
    steps = sorted(
        {step for row in results for step in row["steps"]},
        key=lambda s: -max(r["steps"].get(s, {}).get("seconds", 0) for r in results),
    )
    print_table(
        "Seconds, peak RSS (GB, sampled every 0.5 s) and when it peaked (@ seconds into the step) per step",
        [
            [
                step,
                *(
                    f"{row['steps'].get(step, {}).get('seconds', 0):.1f} / "
                    f"{row['steps'].get(step, {}).get('peak_rss_mb', 0) / 1024:.2f}"
                    f" @{row['steps'].get(step, {}).get('peak_at_s', 0):.0f}"
                    for row in results
                ),
            ]
            for step in steps
        ],
        ["step", *(f"{row['pages'] // 1000}k {row['run'].split()[0]}" for row in results)],
    )
    save("incremental", {str(row["pages"]) + " " + row["run"]: row for row in results})


if __name__ == "__main__":
    main()
