"""Link-quality benchmark: how many of the links a site's editors wrote, hidden from the pipeline, its plan
finds again — against a plain "most similar pages by title" list of the same size, computed in the same run.

- hugodocs, cppdocs (and the bundled sample): the `link_backtest` asset, 20% of the in-content link pairs
  hidden, one run per seed: plan precision and recall, candidate precision@10 and recall@10, ours and the
  baseline's (graph.backtest_runs).
- lightchiropractic: its 52 editorial links (`content_links.csv`, not navigational) are removed from the
  All Inlinks export before it is registered, the pipeline runs with defaults, and the plan is searched for
  them; the baseline is as many top-title-cosine links (each page's best first). It runs twice: with the
  ranker the site's own links teach, and with the default weights (which were not fitted on it).

Every set goes through the real assets (register, then materialise) in a warehouse under
benchmarks/.data/quality/<set>/; the shared crawls are read in place (gzipped page text is unpacked into
that folder). Nothing reads the hidden links before the plan is built.

    python -m benchmarks.bench_link_quality [--sets lightchiropractic hugodocs cppdocs sample] [--seeds 0 1 2]

`--ranker-reuse cppdocs` then times `link_ranker` fitted again against its kept model reused (inputs
unchanged), on the warehouse that run left; `--ranker-validation sample hugodocs cppdocs` times it fitted
again with its validation fits on every negative (the baseline) against the default sample of them, and
shows the model each chose and its cross-validated figures.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import time
from pathlib import Path

import dagster as dg
import duckdb
import numpy as np
import polars as pl

from benchmarks.harness import DATA, SAMPLE_DIR, SHARED_CRAWLS, print_table, save

SETS = {
    "lightchiropractic": ("www.lightchiropractic.sg", "internal_all.csv", None),
    "hugodocs": ("gohugo.io", "internal_html.csv", "page_text.csv"),
    "cppdocs": ("learn.microsoft.com", "internal_html.csv", "page_text.csv.gz"),
    "sample": ("www.alpinegear.example", "internal_all.csv", None),
}
THROUGH_PLAN = [
    "raw_crawl", "raw_links", "raw_page_text", "pages", "page_embeddings", "serp_results", "similarity_pairs",
    "topic_clusters", "link_ranker", "link_candidates", "link_plan",
]  # fmt: skip


def _folder(name: str) -> Path:
    return SHARED_CRAWLS / name if name != "sample" else SAMPLE_DIR


def _prepare(name: str) -> tuple[str, Path, Path]:
    """A fresh warehouse and inbox for the set, its exports registered (lightchiropractic without its
    editorial links)."""
    from interlink_pipeline.core.ingest.inbox import register_crawl

    site, crawl, text = SETS[name]
    work = DATA / "quality" / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    source = _folder(name)
    links = source / "all_inlinks.csv"
    if name == "lightchiropractic":
        editorial = _editorial_links()
        kept = pl.read_csv(links, infer_schema=False).join(
            editorial.select(pl.col("source").alias("Source"), pl.col("target").alias("Destination")),
            on=["Source", "Destination"],
            how="anti",
        )
        links = work / "all_inlinks_without_editorial.csv"
        kept.write_csv(links)
    text_file = None
    if text:
        text_file = work / "page_text.csv"
        opener = gzip.open if text.endswith(".gz") else open
        with opener(source / text, "rb") as src, open(text_file, "wb") as dst:
            shutil.copyfileobj(src, dst)
    register_crawl(work / "inbox", site, source / crawl, links, text_src=text_file)
    return site, work / "warehouse.duckdb", work / "inbox"


def _editorial_links() -> pl.DataFrame:
    frame = pl.read_csv(SHARED_CRAWLS / "lightchiropractic" / "content_links.csv", infer_schema=False)
    return frame.filter(pl.col("navigational_or_utility").str.to_lowercase() == "false").select(
        pl.col("Source").alias("source"), pl.col("Destination").alias("target")
    )


def _materialize(warehouse: Path, inbox: Path, site: str, assets: list[str], run_config: dict) -> float:
    from interlink_pipeline.definitions import build_defs
    from interlink_pipeline.defs.jobs import step_keys

    defs = build_defs(str(warehouse), str(inbox))
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("sites", [site])
    started = time.monotonic()
    result = defs.resolve_job_def("site_pipeline").execute_in_process(
        partition_key=site,
        instance=instance,
        asset_selection=step_keys(defs, list(assets)),
        run_config=run_config,
        raise_on_error=False,
    )
    if not result.success:
        failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
        raise RuntimeError(failure.event_specific_data.error.to_string())
    return time.monotonic() - started


def backtests(name: str, seeds: list[int], fraction: float) -> list[dict]:
    site, warehouse, inbox = _prepare(name)
    rows = []
    for i, seed in enumerate(seeds):
        assets = [*THROUGH_PLAN, "link_backtest"] if i == 0 else ["link_backtest"]
        config = {"ops": {"link_backtest": {"config": {"fraction": fraction, "seed": seed}}}}
        seconds = _materialize(warehouse, inbox, site, assets, config)
        with duckdb.connect(str(warehouse), read_only=True) as con:
            row = con.execute(
                "SELECT * FROM graph.backtest_runs WHERE site = ? ORDER BY ran_at DESC LIMIT 1", [site]
            ).pl()
            checks = con.execute(
                "SELECT orphan_pages, unreachable_pages, max_depth FROM graph.site_metrics "
                "WHERE site = ? AND scenario = 'after'",
                [site],
            ).fetchone()
        record = row.row(0, named=True)
        record.update(
            set=name, run_seconds=seconds, orphans_after=checks[0], unreachable_after=checks[1],
            max_depth_after=checks[2],
        )  # fmt: skip
        rows.append(record)
        print(
            f"  {name} seed {seed}: plan precision {record['plan_precision']:.3f} vs "
            f"{record['baseline_precision']:.3f}; P@10 {record['candidate_precision_at_k']:.3f} vs "
            f"{record['baseline_precision_at_k']:.3f} ({seconds:.0f}s)",
            flush=True,
        )
    return rows


# the ranker a site gets when it has too few links of its own: the default weights, checked on a set
# they were not fitted on
DEFAULT_WEIGHTS_CONFIG = {"ops": {"link_ranker": {"config": {"min_positives": 10**9}}}}


def editorial_recovery(run_config: dict) -> dict:
    """lightchiropractic: the plan built without the 52 editorial links, searched for them."""
    from interlink_pipeline.core.ingest.link_graph import page_links
    from interlink_pipeline.core.ml.page_embeddings import read_vectors
    from interlink_pipeline.core.relevance.backtest import baseline_lists, same_budget_baseline
    from interlink_pipeline.core.urls import url_parts
    from interlink_pipeline.core.warehouse.store import read_site

    site, warehouse, inbox = _prepare("lightchiropractic")
    seconds = _materialize(warehouse, inbox, site, THROUGH_PLAN, run_config)
    pages, vectors = read_vectors(warehouse, site, ("page_id", "url", "url_key"))
    index = pages.select("url", pl.int_range(pl.len(), dtype=pl.Int64).alias("row"))
    editorial = _editorial_links()
    keys = pages.select("url_key", pl.int_range(pl.len(), dtype=pl.Int64).alias("row"))
    hidden = (
        pl.DataFrame(
            {
                "sk": url_parts(editorial["source"])["url_key"],
                "tk": url_parts(editorial["target"])["url_key"],
            }
        )
        .join(keys.rename({"url_key": "sk", "row": "source"}), on="sk")
        .join(keys.rename({"url_key": "tk", "row": "target"}), on="tk")
        .select("source", "target")
        .unique()
    )
    plan = (
        read_site(warehouse, "graph.link_plan", site)
        .join(index.rename({"url": "source_url", "row": "source"}), on="source_url")
        .join(index.rename({"url": "target_url", "row": "target"}), on="target_url")
    )
    visible = page_links(read_site(warehouse, "raw.crawl_links", site), pages["url_key"])
    baseline = same_budget_baseline(baseline_lists(vectors, visible, 50), plan.height)
    found_plan = plan.join(hidden, on=["source", "target"])
    found = found_plan.height
    base_found = baseline.join(hidden, on=["source", "target"]).height
    with duckdb.connect(str(warehouse), read_only=True) as con:
        after = con.execute(
            "SELECT orphan_pages, max_depth FROM graph.site_metrics WHERE scenario = 'after'"
        ).fetchone()
        ranker = con.execute("SELECT reason FROM ml.link_ranker_runs ORDER BY trained_at DESC").fetchone()[0]
    return {
        "editorial_links": hidden.height,
        "plan_links": plan.height,
        "found": found,
        "found_by_reason": dict(found_plan.group_by("reason").len().sort("reason").iter_rows()),
        "baseline_found": base_found,
        "orphans_after": after[0],
        "max_depth_after": after[1],
        "ranker": ranker,
        "seconds": seconds,
    }


def _ranker_runs(name: str, config: dict, repeats: int) -> list[float]:
    """Seconds of `repeats` link_ranker runs under `config`, on the warehouse an earlier run of this
    benchmark left for `name`."""
    site, work = SETS[name][0], DATA / "quality" / name
    if not (work / "warehouse.duckdb").is_file():
        raise SystemExit(f"no warehouse for {name} under {work}: run --sets {name} first")
    run_config = {"ops": {"link_ranker": {"config": config}}}
    return [
        _materialize(work / "warehouse.duckdb", work / "inbox", site, ["link_ranker"], run_config)
        for _ in range(repeats)
    ]


def ranker_reuse(name: str, repeats: int) -> dict:
    """link_ranker fitted again (retrain), then with unchanged inputs (the kept model reused)."""
    return {
        "fit": _ranker_runs(name, {"retrain": True}, repeats),
        "reuse": _ranker_runs(name, {"retrain": False}, repeats),
    }


def ranker_validation(name: str, repeats: int) -> dict:
    """link_ranker fitted again with its validation fits on every negative (the baseline), then on the
    default sample of them: the step's seconds, the model chosen and its cross-validated figures."""
    site, work = SETS[name][0], DATA / "quality" / name
    out = {}
    for label, config in (("every negative", {"negatives_per_positive": 10**9}), ("sampled", {})):
        seconds = _ranker_runs(name, {"retrain": True, **config}, repeats)
        with duckdb.connect(str(work / "warehouse.duckdb"), read_only=True) as con:
            model, examples, validation = con.execute(
                "SELECT model, examples, validation FROM ml.link_ranker_runs WHERE site = ? "
                "ORDER BY trained_at DESC LIMIT 1",
                [site],
            ).fetchone()
        figures = json.loads(validation)
        out[label] = {
            "seconds": seconds,
            "examples": examples,
            "model": model,
            "average_precision": figures[f"{model}_average_precision"],
            "precision_at_10": figures[f"{model}_precision_at_10"],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--fraction", type=float, default=0.2)
    parser.add_argument(
        "--ranker-reuse", nargs="+", default=[], choices=list(SETS), metavar="SET",
        help="only time link_ranker fitted vs reused, on the warehouses an earlier run left",
    )  # fmt: skip
    parser.add_argument(
        "--ranker-validation", nargs="+", default=[], choices=list(SETS), metavar="SET",
        help="only time link_ranker validated on every negative vs a sample, on an earlier run's warehouses",
    )  # fmt: skip
    parser.add_argument("--repeats", type=int, default=3, help="runs per timing for --ranker-*")
    args = parser.parse_args()
    if args.ranker_validation:
        validated = {name: ranker_validation(name, args.repeats) for name in args.ranker_validation}
        print_table(
            f"link_ranker fitted again, its validation fits on every negative vs a sample of them (median "
            f"of {args.repeats} runs)",
            [
                [name, f"{v['sampled']['examples']:,}", label, f"{statistics.median(r['seconds']):.1f}",
                 r["model"], f"{r['average_precision']:.3f}", f"{r['precision_at_10']:.3f}"]
                for name, v in validated.items() for label, r in v.items()
            ],
            ["set", "examples", "validated on", "step s", "model", "CV average precision", "CV P@10"],
        )  # fmt: skip
        print(f"results: {save('link_ranker_validation', validated)}")
        return
    if args.ranker_reuse:
        reuse = {name: ranker_reuse(name, args.repeats) for name in args.ranker_reuse}
        print_table(
            f"link_ranker fitted again vs its kept model reused (median of {args.repeats} runs, seconds)",
            [
                [name, f"{statistics.median(t['fit']):.1f}", f"{statistics.median(t['reuse']):.1f}",
                 f"{statistics.median(t['fit']) / statistics.median(t['reuse']):.1f}×"]
                for name, t in reuse.items()
            ],
            ["set", "fitted", "reused", "ratio"],
        )  # fmt: skip
        print(f"results: {save('link_ranker_reuse', reuse)}")
        return
    results: dict = {"backtests": {}, "editorial": []}
    rows = []
    for name in args.sets:
        if name == "lightchiropractic":
            results["editorial"] = [editorial_recovery({}), editorial_recovery(DEFAULT_WEIGHTS_CONFIG)]
            continue
        runs = backtests(name, args.seeds, args.fraction)
        results["backtests"][name] = runs

        def median(key: str, runs: list[dict] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        plan_p, base_p = median("plan_precision"), median("baseline_precision")
        cand_p, base_cand = median("candidate_precision_at_k"), median("baseline_precision_at_k")
        rows.append(
            [
                name, str(runs[0]["hidden_links"]), f"{median('plan_links'):,.0f}",
                f"{plan_p:.3f} / {base_p:.3f}", f"{plan_p / base_p:.1f}×" if base_p else "∞",
                f"{median('plan_recall'):.3f} / {median('baseline_recall'):.3f}",
                f"{cand_p:.3f} / {base_cand:.3f}", f"{cand_p / base_cand:.1f}×" if base_cand else "∞",
                f"{median('candidate_recall_at_k'):.3f} / {median('baseline_recall_at_k'):.3f}",
                f"{median('candidate_coverage'):.2f}",
                f"{max(r['orphans_after'] for r in runs)} / {max(r['max_depth_after'] for r in runs)}",
                f"{median('seconds'):.0f}",
            ]
        )  # fmt: skip
    if rows:
        print_table(
            f"Backtest, {args.fraction:.0%} of in-content link pairs hidden, median of seeds {args.seeds} "
            "(ours / same-budget title-cosine baseline)",
            rows,
            ["set", "hidden", "plan links", "plan precision", "ratio", "plan recall", "P@10", "ratio",
             "R@10", "coverage", "orphans / max depth after", "backtest s"],
        )  # fmt: skip
    if results["editorial"]:
        print_table(
            "lightchiropractic: the plan built without its 52 editorial links (its own ranker, then the "
            "default weights)",
            [[str(e["editorial_links"]), str(e["plan_links"]), str(e["found"]), str(e["baseline_found"]),
              f"{e['orphans_after']} / {e['max_depth_after']}",
              ", ".join(f"{r} {n}" for r, n in e["found_by_reason"].items()), e["ranker"]]
             for e in results["editorial"]],
            ["editorial links", "plan links", "found by the plan", "found by the baseline",
             "orphans / max depth after", "found by reason", "ranker"],
        )  # fmt: skip
    print(f"results: {save('link_quality', results)}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
