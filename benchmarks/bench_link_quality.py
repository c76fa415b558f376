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
from interlink_pipeline.core.graph.plan_options import UTILITY_PAGES
from interlink_pipeline.core.relevance.intervals import interval_text

SETS = {
    "lightchiropractic": ("www.lightchiropractic.sg", "internal_all.csv", None),
    "hugodocs": ("gohugo.io", "internal_html.csv", "page_text.csv"),
    "cppdocs": ("learn.microsoft.com", "internal_html.csv", "page_text.csv.gz"),
    "cpwiki": ("www.chessprogramming.org", "internal_html.csv", "page_text.csv.gz"),
    "sample": ("www.alpinegear.example", "internal_all.csv", None),
    "location-tree": ("www.loneoakhomes.example", "internal_all.csv", None),
    "location-tree-fit": ("www.loneoakhomes.example", "internal_all.csv", None),
}
# the generated template sites: one the default weights are fitted on (fit_default_ranker), another shape
# and seed they are checked on
GENERATED = {
    "location-tree": {},
    "location-tree-fit": {"seed": 5, "states": 3, "areas_per_state": 3, "cities_per_area": 2,
                          "communities_per_city": 4, "plans_per_community": 6},
}  # fmt: skip
THROUGH_PLAN = [
    "raw_crawl", "raw_links", "raw_page_text", "pages", "page_embeddings", "serp_results", "similarity_pairs",
    "topic_clusters", "link_ranker", "link_candidates", "link_plan",
]  # fmt: skip


ORPHAN_FRACTION = 0.05  # link_backtest's default: the no-links rows are scored on the same hidden links
# how a set is registered: as exported, without its page text, or without its All Inlinks export (the
# settings most users have); "hugodocs:no-text" names a set in a variant. "int8" is a lever, not a
# registration: the set as exported, every text embedded by the int8 encoder past its neighbour-recall
# gate, so that the plan's own figures say what int8 costs
VARIANTS = ("no-text", "no-links")
CHOICES = [
    *SETS,
    *(f"{name}:{v}" for name in ("hugodocs", "cppdocs", "cpwiki") for v in VARIANTS),
    "location-tree:no-links",
    *(f"{name}:int8" for name in ("hugodocs", "cppdocs", "cpwiki", "sample")),
]


def _embedder(variant: str | None):
    """The variant's embedder: the default one, or (int8) the int8 encoder with its gate opened."""
    if variant != "int8":
        return None
    from interlink_pipeline.core.ml import int8_check
    from interlink_pipeline.defs.ml.embeddings import Embedder, default_embedder

    int8_check.INT8_MIN_RECALL = 0.0  # the gate reads neighbour recall; this measures the plan instead
    return Embedder(model=default_embedder().model, device="cpu", int8="always")


def _folder(name: str) -> Path:
    """Where a set's exports are: the shared crawls, the bundled sample, or generated (GENERATED)."""
    if name in GENERATED:
        from interlink_pipeline.sample import write_site
        from interlink_pipeline.sample.location_tree import generate_location_site

        folder = DATA / "quality" / f"{name}-exports"
        if not (folder / "ground_truth.csv").is_file():
            write_site(generate_location_site(**GENERATED[name]), folder)
        return folder
    return SHARED_CRAWLS / name if name != "sample" else SAMPLE_DIR


def within_city(warehouse: Path, site: str) -> dict:
    """location-tree: the share of the plan's topical links that stay in the source's city branch (the
    target below the source's city, or one of the source's own ancestors), and the most pages one anchor
    text points at."""
    from interlink_pipeline.core.warehouse.store import read_site

    truth = pl.read_csv(_folder("location-tree") / "ground_truth.csv")
    plan = read_site(warehouse, "graph.link_plan", site)
    branch = truth.select("url", pl.coalesce("city", "area", "state").alias("branch"))
    topical = (
        plan.filter(pl.col("reason") == "topical")
        .join(branch.rename({"url": "source_url", "branch": "source_branch"}), on="source_url", how="left")
        .with_columns(
            pl.col("source_url").str.extract(r"^https?://[^/]+(/.*)$").alias("source_path"),
            pl.col("target_url").str.extract(r"^https?://[^/]+(/.*)$").alias("target_path"),
        )
    )
    inside = topical.filter(
        pl.col("target_path").str.starts_with(pl.col("source_branch").fill_null("/\0"))
        | pl.col("source_path").str.starts_with(pl.col("target_path"))
    )
    return {
        "topical_links": topical.height,
        "within_city": inside.height / topical.height if topical.height else None,
        "most_targets_per_anchor": plan.group_by("anchor_text")
        .agg(pl.col("target_url").n_unique())["target_url"]
        .max(),
    }


def _prepare(name: str, variant: str | None = None) -> tuple[str, Path, Path]:
    """A fresh warehouse and inbox for the set, its exports registered (lightchiropractic without its
    editorial links; a variant without its page text or its links export)."""
    from interlink_pipeline.core.ingest.inbox import register_crawl

    site, crawl, text = SETS[name]
    if variant == "no-text":
        text = None
    work = DATA / "quality" / (name if variant is None else f"{name}-{variant}")
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
    register_crawl(
        work / "inbox", site, source / crawl, links if variant != "no-links" else None, text_src=text_file
    )
    return site, work / "warehouse.duckdb", work / "inbox"


def _editorial_links() -> pl.DataFrame:
    frame = pl.read_csv(SHARED_CRAWLS / "lightchiropractic" / "content_links.csv", infer_schema=False)
    return frame.filter(pl.col("navigational_or_utility").str.to_lowercase() == "false").select(
        pl.col("Source").alias("source"), pl.col("Destination").alias("target")
    )


def _materialize(
    warehouse: Path, inbox: Path, site: str, assets: list[str], run_config: dict, embedder=None
) -> float:
    from interlink_pipeline.definitions import build_defs
    from interlink_pipeline.defs.jobs import step_keys

    defs = build_defs(str(warehouse), str(inbox), embedder)
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


def left_alone(con: duckdb.DuckDBPyConnection, site: str) -> int:
    """The orphans the plan leaves unlinked on purpose: utility pages (left to the site's menus) and those
    that say what a rescued orphan says (graph.page_metrics.near_duplicate_of); the figures count them apart
    from orphans."""
    return con.execute(
        "SELECT count(near_duplicate_of) "
        "+ count(*) FILTER (inlinks_after = 0 AND regexp_matches(url, ?, 'i')) "
        "FROM graph.page_metrics WHERE site = ?",
        [UTILITY_PAGES, site],
    ).fetchone()[0]


def backtests(name: str, seeds: list[int], fraction: float, variant: str | None = None) -> list[dict]:
    """One backtest per seed (the link_backtest asset), with the plan's checks after it."""
    site, warehouse, inbox = _prepare(name, variant)
    rows = []
    for i, seed in enumerate(seeds):
        assets = [*THROUGH_PLAN, "link_backtest"] if i == 0 else ["link_backtest"]
        config = {"ops": {"link_backtest": {"config": {"fraction": fraction, "seed": seed}}}}
        seconds = _materialize(warehouse, inbox, site, assets, config, _embedder(variant))
        with duckdb.connect(str(warehouse), read_only=True) as con:
            row = con.execute(
                "SELECT * FROM graph.backtest_runs WHERE site = ? ORDER BY ran_at DESC LIMIT 1", [site]
            ).pl()
            checks = con.execute(
                "SELECT orphan_pages, unreachable_pages, max_depth FROM graph.site_metrics "
                "WHERE site = ? AND scenario = 'after'",
                [site],
            ).fetchone()
            twins = left_alone(con, site)
        record = row.row(0, named=True)
        record.update(
            set=name, run_seconds=seconds, orphans_after=checks[0] - twins,
            unreachable_after=checks[1] - twins,
            max_depth_after=checks[2], by_reason=json.loads(record["precision_by_reason"]),
            intervals=json.loads(record["intervals"]),
        )  # fmt: skip
        if name == "location-tree":
            record["branches"] = within_city(warehouse, site)
        rows.append(record)
        print(
            f"  {name} seed {seed}: plan precision {record['plan_precision']:.3f} "
            f"{interval_text(record['intervals'].get('plan_precision'))} vs "
            f"{record['baseline_precision']:.3f}; P@10 {record['candidate_precision_at_k']:.3f} vs "
            f"{record['baseline_precision_at_k']:.3f}; orphan rescues {record['orphan_rescue_precision']} vs "
            f"{record['orphan_baseline_precision']} ({seconds:.0f}s)",
            flush=True,
        )
    return rows


def without_links_export(name: str, seeds: list[int], fraction: float) -> list[dict]:
    """The set registered without its All Inlinks export, planned with defaults, and the plan scored on the
    links each seed's backtest hides (and on every in-content link, none of which the pipeline saw), next
    to as many top-title-cosine links; with the plan's checks: the "before" from the crawl's counts,
    rescues only for pages with no in-links in the crawl, every page within its budget."""
    from interlink_pipeline.core.graph.plan_options import PlanOptions
    from interlink_pipeline.core.ingest.crawl_exports import read_links_export
    from interlink_pipeline.core.ingest.link_graph import LinkGraph, page_links
    from interlink_pipeline.core.ml.page_embeddings import read_vectors
    from interlink_pipeline.core.relevance.backtest import links_to_hide
    from interlink_pipeline.core.relevance.backtest_scores import (
        baseline_lists,
        precision_recall,
        same_budget_baseline,
    )
    from interlink_pipeline.core.warehouse.store import read_site

    site, warehouse, inbox = _prepare(name, "no-links")
    seconds = _materialize(warehouse, inbox, site, THROUGH_PLAN, {})
    pages, vectors = read_vectors(warehouse, site, ("page_id", "url", "url_key", "is_home", "crawl_inlinks"))
    index = pages.select("url", pl.int_range(pl.len(), dtype=pl.Int64).alias("row"))
    plan = (
        read_site(warehouse, "graph.link_plan", site)
        .join(index.rename({"url": "source_url", "row": "source"}), on="source_url")
        .join(index.rename({"url": "target_url", "row": "target"}), on="target_url")
    )
    links = page_links(read_links_export(_folder(name) / "all_inlinks.csv", site).frame, pages["url_key"])
    with duckdb.connect(str(warehouse), read_only=True) as con:
        known, orphans_before, orphans_after, max_depth = con.execute(
            "SELECT any_value(links_known), max(orphan_pages) FILTER (scenario = 'before'), "
            "max(orphan_pages) FILTER (scenario = 'after'), max(max_depth) FILTER (scenario = 'after') "
            "FROM graph.site_metrics WHERE site = ?",
            [site],
        ).fetchone()
        orphans_after -= left_alone(con, site)
        over_budget = con.execute(
            "SELECT count(*) FROM graph.page_metrics m JOIN staging.pages p USING (site, page_id) "
            "WHERE site = ? AND NOT p.is_home AND m.planned_outlinks > ?",
            [site, PlanOptions().out_link_budget],
        ).fetchone()[0]
    rescued = plan.filter(pl.col("reason") == "orphan-rescue")["target"]
    zero_inlinks = set(np.flatnonzero(pages["crawl_inlinks"].fill_null(0).to_numpy() == 0).tolist())
    every = links.content_pairs()
    home = int(pages["is_home"].arg_max())
    baseline = same_budget_baseline(baseline_lists(vectors, LinkGraph.empty(), 50).lists, plan.height)
    rows = []
    for seed in seeds:
        hidden = links_to_hide(links, fraction, seed, ORPHAN_FRACTION, home).scored(links)
        _, precision, recall = precision_recall(plan, hidden)
        _, base_precision, base_recall = precision_recall(baseline, hidden)
        rows.append(
            {
                "set": f"{name}:no-links", "seed": seed, "hidden_links": hidden.height,
                "plan_links": plan.height, "plan_precision": precision, "plan_recall": recall,
                "baseline_precision": base_precision, "baseline_recall": base_recall,
                "plan_precision_all_links": precision_recall(plan, every)[1],
                "baseline_precision_all_links": precision_recall(baseline, every)[1],
                "links_known": known, "orphans_before": orphans_before, "orphans_after": orphans_after,
                "max_depth_after": max_depth, "pages_over_budget": over_budget,
                "rescues": rescued.len(), "rescues_of_pages_with_inlinks":
                    int(sum(t not in zero_inlinks for t in rescued.to_list())),
                "by_reason": dict(plan.group_by("reason").len().sort("reason").iter_rows()),
                "seconds": seconds,
                **({"branches": within_city(warehouse, site)} if name == "location-tree" else {}),
            }
        )  # fmt: skip
        print(f"  {name}:no-links seed {seed}: plan precision {precision:.3f} vs {base_precision:.3f}")
    return rows


# the ranker a site gets when it has too few links of its own: the default weights, checked on a set
# they were not fitted on
DEFAULT_WEIGHTS_CONFIG = {"ops": {"link_ranker": {"config": {"min_positives": 10**9}}}}


def editorial_recovery(run_config: dict) -> dict:
    """lightchiropractic: the plan built without the 52 editorial links, searched for them."""
    from interlink_pipeline.core.ingest.link_graph import page_links
    from interlink_pipeline.core.ml.page_embeddings import read_vectors
    from interlink_pipeline.core.relevance.backtest_scores import baseline_lists, same_budget_baseline
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
    baseline = same_budget_baseline(baseline_lists(vectors, visible, 50).lists, plan.height)
    found_plan = plan.join(hidden, on=["source", "target"])
    found = found_plan.height
    base_found = baseline.join(hidden, on=["source", "target"]).height
    with duckdb.connect(str(warehouse), read_only=True) as con:
        after = con.execute(
            "SELECT orphan_pages, max_depth FROM graph.site_metrics WHERE scenario = 'after'"
        ).fetchone()
        ranker = con.execute("SELECT reason FROM ml.link_ranker_runs ORDER BY trained_at DESC").fetchone()[0]
        twins = left_alone(con, con.execute("SELECT any_value(site) FROM graph.page_metrics").fetchone()[0])
    return {
        "editorial_links": hidden.height,
        "plan_links": plan.height,
        "found": found,
        "found_by_reason": dict(found_plan.group_by("reason").len().sort("reason").iter_rows()),
        "baseline_found": base_found,
        "orphans_after": after[0] - twins,
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
    parser.add_argument("--sets", nargs="+", default=CHOICES, choices=CHOICES)
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
    results: dict = {"backtests": {}, "editorial": [], "no_links": {}}
    rows, reason_rows, orphan_rows, no_links_rows = [], [], [], []
    for name in args.sets:
        if name == "lightchiropractic":
            results["editorial"] = [editorial_recovery({}), editorial_recovery(DEFAULT_WEIGHTS_CONFIG)]
            continue
        base, _, variant = name.partition(":")
        if variant == "no-links":
            runs = without_links_export(base, args.seeds, args.fraction)
            results["no_links"][name] = runs
            no_links_rows.append(_no_links_row(name, runs))
            continue
        runs = backtests(base, args.seeds, args.fraction, variant or None)
        results["backtests"][name] = runs
        reason_rows += _reason_rows(name, runs)
        orphan_rows.append(_orphan_row(name, runs))

        def median(key: str, runs: list[dict] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        plan_p, base_p = median("plan_precision"), median("baseline_precision")
        cand_p, base_cand = median("candidate_precision_at_k"), median("baseline_precision_at_k")
        rows.append(
            [
                name, str(runs[0]["hidden_links"]), f"{median('plan_links'):,.0f}",
                f"{plan_p:.3f} / {base_p:.3f}", f"{plan_p / base_p:.1f}×" if base_p else "∞",
                " / ".join(interval_text(runs[0]["intervals"].get(f)) for f in PLAN_VS_BASELINE),
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
            ["set", "hidden", "plan links", "plan precision", "ratio", f"95% (seed {args.seeds[0]})",
             "plan recall", "P@10", "ratio", "R@10", "coverage", "orphans / max depth after", "backtest s"],
        )  # fmt: skip
    if reason_rows:
        print_table(
            "The plan per reason (median of the seeds): links, precision, recall; its links into pages "
            "that lost an in-link to the hiding and their precision; those into pages that lost one from a "
            "page within max_depth - 1 clicks of home once planned (the sources a depth shortcut may have) "
            "and their precision. A structural reason's precision into the pages it could have linked "
            "right (any page that lost a link; for a depth shortcut, one that lost it from a page within "
            "reach) is held against one third of the set's topical precision (fewer than 20 links: exempt)",
            reason_rows,
            ["set", "reason", "links", "precision", "recall", "into pages that lost a link",
             "their precision", "… from a page within reach", "their precision", "≥ ⅓ topical"],
        )  # fmt: skip
        print_table(
            f"Orphan backtest: every link into {ORPHAN_FRACTION:.0%} of the pages linked in content hidden "
            "(navigation too); each rescue's source against the pages that linked to it, next to the "
            "orphan's most similar page by title (median of the seeds)",
            orphan_rows,
            ["set", "orphans", "rescues", "rescue precision", "most-similar-page precision", "ratio",
             "≥ ⅓ topical"],
        )  # fmt: skip
    if no_links_rows:
        print_table(
            "Without the All Inlinks export: the plan scored on the links each seed's backtest hides and on "
            "every in-content link (ours / as many top-title-cosine links; median of the seeds)",
            no_links_rows,
            ["set", "plan links", "precision (hidden)", "ratio", "precision (every link)", "ratio",
             "links known", "orphans before / after", "rescues of pages with in-links", "pages over budget",
             "by reason"],
        )  # fmt: skip
    branches = [
        [name, f"{run['branches']['topical_links']:,}",
         "–" if run["branches"]["within_city"] is None else f"{run['branches']['within_city']:.1%}",
         str(run["branches"]["most_targets_per_anchor"])]
        for group in (results["backtests"], results["no_links"])
        for name, runs in group.items()
        for run in runs[:1]
        if "branches" in run
    ]  # fmt: skip
    if branches:
        print_table(
            "The generated location-tree site (a template site): the plan's topical links within the "
            "source's city branch (its ancestors included), and the most pages one anchor points at",
            branches,
            ["set", "topical links", "within the city", "most targets per anchor"],
        )
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


def _ratio(ours: float | None, baseline: float | None) -> str:
    if ours is None or baseline is None:
        return "–"
    return f"{ours / baseline:.1f}×" if baseline else "∞"


def _reason_rows(name: str, runs: list[dict]) -> list[list[str]]:
    """Per reason: links, precision and recall, medians over the seeds; a structural reason's precision into
    the pages that lost an in-link it could have found (any, for a rescue or a bridge; one from a page
    within reach, for a depth shortcut) against a third of topical's."""
    from interlink_pipeline.core.warehouse.vocabularies import STRUCTURAL_REASONS

    keys = ("links", "precision", "recall", "known", "known_precision", "reachable", "reachable_precision")
    figures: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        for row in run["by_reason"]:
            reason = figures.setdefault(row["reason"], {key: [] for key in keys})
            for key in keys:
                if row.get(key) is not None:
                    reason[key].append(row[key])
    medians = {r: {k: statistics.median(v) if v else None for k, v in f.items()} for r, f in figures.items()}
    topical = medians.get("topical", {}).get("precision") or 0.0

    def bar(reason: str, m: dict) -> str:
        if reason not in STRUCTURAL_REASONS:
            return "–"
        if m["links"] < 20:
            return "exempt (< 20 links)"
        held = m["reachable_precision"] if reason == "depth-shortcut" else m["known_precision"]
        return "yes" if (held or 0.0) >= topical / 3 else "no"

    def share(value: float | None) -> str:
        return "–" if value is None else f"{value:.3f}"

    return [
        [name, reason, f"{m['links']:,.0f}", f"{m['precision']:.3f}", f"{m['recall']:.3f}",
         f"{m['known'] or 0:,.0f}", share(m["known_precision"]), f"{m['reachable'] or 0:,.0f}",
         share(m["reachable_precision"]), bar(reason, m)]
        for reason, m in sorted(medians.items(), key=lambda item: -item[1]["links"])
    ]  # fmt: skip


def _orphan_row(name: str, runs: list[dict]) -> list[str]:
    def median(key: str) -> float | None:
        values = [r[key] for r in runs if r.get(key) is not None]
        return statistics.median(values) if values else None

    rescue, baseline = median("orphan_rescue_precision"), median("orphan_baseline_precision")
    topical = statistics.median(
        next((row["precision"] for row in r["by_reason"] if row["reason"] == "topical"), 0.0) for r in runs
    )
    return [
        name, f"{median('orphaned_pages') or 0:,.0f}", f"{median('orphan_rescues') or 0:,.0f}",
        f"{rescue:.3f}" if rescue is not None else "–", f"{baseline:.3f}" if baseline is not None else "–",
        _ratio(rescue, baseline), "yes" if rescue is not None and rescue >= topical / 3 else "no",
    ]  # fmt: skip


PLAN_VS_BASELINE = ("plan_precision", "baseline_precision")


def _no_links_row(name: str, runs: list[dict]) -> list[str]:
    def median(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    first = runs[0]
    return [
        name, f"{first['plan_links']:,}",
        f"{median('plan_precision'):.3f} / {median('baseline_precision'):.3f}",
        _ratio(median("plan_precision"), median("baseline_precision")),
        f"{first['plan_precision_all_links']:.3f} / {first['baseline_precision_all_links']:.3f}",
        _ratio(first["plan_precision_all_links"], first["baseline_precision_all_links"]),
        first["links_known"], f"{first['orphans_before'] or 0} / {first['orphans_after'] or 0}",
        str(first["rescues_of_pages_with_inlinks"]), str(first["pages_over_budget"]),
        ", ".join(f"{r} {n}" for r, n in first["by_reason"].items()),
    ]  # fmt: skip


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
