"""The editor's loop: how long `interlink decisions import` of 10 decisions takes to record them and plan
again (the ranker and the backtest kept while the decisions add up to little: refit_above), against the
same import followed by the work every import used to cost (the ranker fitted again, the backtest measured
again). Both through the real CLI, in fresh processes, on copies of one materialised site; and how much of
the plan the 10 decisions changed.

    python -m benchmarks.bench_replan [--sets sample hugodocs] [--repeats 3] [--baseline-repeats 1]

Each set is registered and materialised once, with the CLI, under benchmarks/.data/replan/<set>/.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl

from benchmarks.bench_link_quality import SETS, _folder
from benchmarks.harness import DATA, ROOT, SAMPLE_DIR, print_table, save

DECISIONS = 10
# what an import used to cost: the README's next line, materialize, with the ranker fitted again and the
# backtest measured again (a new decision did both)
PARSE = "dbt_parse"  # dbt's parse, kept beside the warehouse between marts builds (defs/publish/marts.py)
RETRAIN = "ops:\n  link_ranker: {config: {retrain: true}}\n  link_backtest: {config: {remeasure_above: 0}}\n"


def _cli(env: dict, *args: str) -> float:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "interlink_pipeline.cli", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode:
        raise SystemExit(f"interlink {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return time.monotonic() - started


def _env(folder: Path) -> dict:
    return {**os.environ, "DAGSTER_HOME": str(folder / "home"), "INTERLINK_WAREHOUSE": str(folder / "w" /
            "interlink.duckdb"), "INTERLINK_INBOX": str(folder / "inbox")}  # fmt: skip


def _prepared(name: str) -> tuple[str, Path]:
    """The set registered and materialised once by the CLI (kept between runs of the benchmark)."""
    site, crawl, text = SETS[name]
    folder = DATA / "replan" / name
    if (folder / "done").is_file():
        return site, folder
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "home").mkdir(parents=True)
    shutil.copyfile(ROOT / "dagster_home" / "dagster.yaml", folder / "home" / "dagster.yaml")
    source = SAMPLE_DIR if name == "sample" else _folder(name)
    args = ["register", str(source / crawl), "--links", str(source / "all_inlinks.csv")]
    if text and not text.endswith(".gz"):
        args += ["--text", str(source / text)]
    _cli(_env(folder), *args, "--site", site)
    _cli(_env(folder), "materialize", "--site", site)
    (folder / "done").write_text("")
    return site, folder


def _plan(folder: Path) -> pl.DataFrame:
    with duckdb.connect(str(folder / "w" / "interlink.duckdb"), read_only=True) as con:
        return con.execute(
            "SELECT link_id, source_url, target_url, anchor_text, placement FROM graph.link_plan"
        ).pl()


def _one(site: str, prepared: Path, seed: int, baseline: bool, parse: Path) -> dict:
    """A copy of the prepared site, 10 of its planned links decided (a seeded draw), imported: seconds, and
    the plan's links changed beyond the decided ones. The copy stands where every copy of this set stands,
    with dbt's parse of an earlier import there (kept in `parse` by the first), as a user's warehouse stays
    put between imports."""
    folder = DATA / "replan" / f"{prepared.name}-trial"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(prepared, folder, symlinks=True)
    if parse.exists():
        shutil.copytree(parse, folder / "w" / PARSE, dirs_exist_ok=True)
    try:
        before = _plan(folder)
        chosen = before.sample(DECISIONS, seed=seed).with_columns(
            pl.Series("decision", ["accept", "reject"] * (DECISIONS // 2))
        )
        chosen.select("link_id", "source_url", "target_url", "decision").write_csv(folder / "review.csv")
        env = _env(folder)
        if baseline:
            (folder / "retrain.yaml").write_text(RETRAIN)
            seconds = _cli(
                env, "decisions", "import", str(folder / "review.csv"), "--site", site, "--no-plan"
            )
            seconds += _cli(env, "materialize", "--site", site, "--config", str(folder / "retrain.yaml"))
        else:
            seconds = _cli(env, "decisions", "import", str(folder / "review.csv"), "--site", site)
        after = _plan(folder)
        if not parse.exists():  # the first import: its parse is the next ones'
            shutil.copytree(folder / "w" / PARSE, parse)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    undecided = before.join(chosen.select("link_id"), on="link_id", how="anti")
    moved = undecided.join(after, on=list(after.columns), how="anti").height
    added = after.join(before.select("link_id"), on="link_id", how="anti").height
    return {"seconds": seconds, "undecided_changed": moved, "added": added, "links": before.height}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", nargs="+", default=["sample", "hugodocs"], choices=["sample", "hugodocs"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline-repeats", type=int, default=1)
    args = parser.parse_args()
    rows, results = [], {}
    for name in args.sets:
        site, prepared = _prepared(name)
        parse = DATA / "replan" / f"{name}-parse"
        shutil.rmtree(parse, ignore_errors=True)
        _one(site, prepared, args.repeats, False, parse)  # not timed: keeps dbt's parse at the copies' place
        ours = [_one(site, prepared, seed, False, parse) for seed in range(args.repeats)]
        before = [_one(site, prepared, seed, True, parse) for seed in range(args.baseline_repeats)]
        results[name] = {"ours": ours, "refit_and_remeasure": before}
        mine, theirs = (statistics.median(r["seconds"] for r in runs) for runs in (ours, before))
        rows.append([
            name, f"{ours[0]['links']:,}", f"{mine:.1f} s (n={len(ours)})",
            f"{theirs:.1f} s (n={len(before)})",
            f"{theirs / mine:.1f}×", f"{max(r['undecided_changed'] for r in ours)}",
            f"{max(r['added'] for r in ours)}", f"{max(r['undecided_changed'] for r in before)}",
        ])  # fmt: skip
    header = ["set", "plan links", "import + re-plan (median)", "refit + remeasure", "speed-up",
              "undecided links changed (max)", "links added (max)", "undecided changed, refit"]  # fmt: skip
    print_table("10 decisions imported: time to the published plan", rows, header)
    save("replan", results)


if __name__ == "__main__":
    main()
