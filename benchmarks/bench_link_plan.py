"""Link-plan benchmark: the `link_plan` asset at scale against the write-ups' plain plan, and sampled
against exact betweenness.

Speed and coverage: the asset (read, plan, anchors, metrics, write) on generated sites with their All
Inlinks export, each upstream asset materialised once beforehand; the plain plan links every page to its
`out_link_budget` most similar pages (the write-ups' approach) on the same data, and the same metrics are
taken of both. (How many of a real site's editorial links the plan finds: benchmarks/bench_link_quality.py.)
Centrality: sampled betweenness against exact on the generated site's
relatedness graph (Spearman rank correlation, top-k overlap).

    python -m benchmarks.bench_link_plan [--sizes 10000 100000] [--repeats 3] [--agreement-size 10000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from benchmarks.harness import (
    DATA,
    generated_site,
    materialize_snippet,
    measure,
    print_table,
    save,
)

SITE = "www.alpinegear.example"
LIGHT = "www.lightchiropractic.sg"
# Budgets wide enough for a 100k-page site to fit within 4 clicks (about hub_links x out_link_budget^3 pages).
WIDER = {"out_link_budget": 15, "hub_links": 40}
UPSTREAM = ("raw_crawl", "raw_links", "raw_page_text", "pages", "page_embeddings", "serp_results",
            "similarity_pairs", "topic_clusters", "link_ranker", "link_candidates")  # fmt: skip

# What is read off the warehouse after link_plan was materialised (see harness.materialize_snippet).
PLAN_RESULT = """
import duckdb
with duckdb.connect(str(warehouse), read_only=True) as con:
    after = con.execute("SELECT * FROM graph.site_metrics WHERE scenario = 'after'").pl().row(0, named=True)
    before = con.execute("SELECT * FROM graph.site_metrics WHERE scenario = 'before'").pl().row(0, named=True)
    within = con.execute(
        "SELECT avg((depth_after BETWEEN 0 AND 4)::INT), avg((depth_before BETWEEN 0 AND 4)::INT) "
        "FROM graph.page_metrics"
    ).fetchone()
RESULT = {"seconds": seconds, "links": after["planned_links"], "orphans_before": before["orphan_pages"],
          "orphans_after": after["orphan_pages"], "within4_after": within[0], "within4_before": within[1],
          "max_depth_after": after["max_depth"], "gini_before": before["inlink_gini"],
          "gini_after": after["inlink_gini"], "failed_checks": failed_checks}
"""

PLAIN = """
import time, duckdb, numpy as np, polars as pl
from interlink_pipeline.core.graph.metrics import adjacency, summarize
from interlink_pipeline.core.ingest.site_links import existing_links
started = time.monotonic()
with duckdb.connect({warehouse!r}, read_only=True) as con:
    pages = con.execute("SELECT page_id, url_key, is_home FROM staging.pages WHERE site = ? ORDER BY page_id",
                        [{site!r}]).pl()
    pairs = con.execute("SELECT source_page_id, target_page_id, score FROM ml.similarity_pairs "
                        "WHERE site = ? AND relation = 'similar'", [{site!r}]).pl()
    links = con.execute("SELECT * FROM raw.crawl_links WHERE site = ?", [{site!r}]).pl()
index = pages.select("page_id", pl.int_range(pl.len(), dtype=pl.Int64).alias("i"))
both = pl.concat([pairs, pairs.select(pl.col("target_page_id").alias("source_page_id"),
                                      pl.col("source_page_id").alias("target_page_id"), "score")])
top = (both.sort("score", descending=True).group_by("source_page_id", maintain_order=True).head({budget})
       .join(index.rename({{"page_id": "source_page_id", "i": "s"}}), on="source_page_id")
       .join(index.rename({{"page_id": "target_page_id", "i": "t"}}), on="target_page_id"))
existing, nodes = existing_links(links, pages["url_key"])
home = int(np.flatnonzero(pages["is_home"].to_numpy())[0])
seconds = time.monotonic() - started
graph = adjacency(nodes, np.concatenate([existing["source"].to_numpy(), top["s"].to_numpy()]),
                  np.concatenate([existing["target"].to_numpy(), top["t"].to_numpy()]))
after, depth, _, _ = summarize(graph, home, len(pages))
RESULT = {{"seconds": seconds, "links": top.height, "orphans_after": after.orphan_pages,
          "within4_after": float(((depth >= 0) & (depth <= 4)).mean()), "max_depth_after": after.max_depth,
          "gini_after": after.inlink_gini}}
"""


def materialise(warehouse: Path, inbox: Path, site: str, selection: tuple[str, ...]) -> None:
    import dagster as dg

    from interlink_pipeline.definitions import build_defs
    from interlink_pipeline.defs.jobs import step_keys

    defs = build_defs(str(warehouse), str(inbox))
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("sites", [site])
    defs.resolve_job_def("site_pipeline").execute_in_process(
        partition_key=site,
        instance=instance,
        asset_selection=step_keys(defs, list(selection)),
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
    )


def prepared_warehouse(pages: int) -> Path:
    """A warehouse with every asset upstream of link_plan materialised for a generated site (made once)."""
    warehouse = DATA / f"planned-{pages}.duckdb"
    if not warehouse.exists():
        from interlink_pipeline.core.ingest.inbox import register_crawl

        folder = generated_site(pages, with_links=True)
        inbox = Path(tempfile.mkdtemp()) / "inbox"
        register_crawl(inbox, SITE, folder / "internal_all.csv", folder / "all_inlinks.csv")
        print(f"materialising the upstream assets for {pages:,} pages …", flush=True)
        started = time.monotonic()
        partial = warehouse.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        materialise(partial, inbox, SITE, UPSTREAM)
        partial.rename(warehouse)
        print(f"  done in {time.monotonic() - started:.0f}s", flush=True)
    return warehouse


def centrality_agreement(warehouse: Path, samples: int) -> dict:
    """Sampled betweenness against exact on the relatedness graph the planner uses."""
    import duckdb
    from scipy.stats import spearmanr

    from interlink_pipeline.core.graph.centrality import betweenness, relatedness_edges
    from interlink_pipeline.core.graph.plan_options import PlanOptions

    with duckdb.connect(str(warehouse), read_only=True) as con:
        ids = con.execute("SELECT page_id FROM staging.pages WHERE site = ? ORDER BY page_id", [SITE]).pl()
        similar = con.execute(
            "SELECT source_page_id AS a, target_page_id AS b FROM ml.similarity_pairs WHERE site = ? "
            "AND relation = 'similar'",
            [SITE],
        ).pl()
        candidates = con.execute(
            "SELECT source_page_id AS source, target_page_id AS target FROM ml.link_candidates "
            "WHERE site = ?",
            [SITE],
        ).pl()
    index = ids.with_row_index("i").with_columns(pl.col("i").cast(pl.Int64))

    def indexed(frame: pl.DataFrame, a: str, b: str) -> pl.DataFrame:
        return (
            frame.join(index.rename({"page_id": a, "i": "ia"}), on=a)
            .join(index.rename({"page_id": b, "i": "ib"}), on=b)
            .select(pl.col("ia").alias(a), pl.col("ib").alias(b))
        )

    n = ids.height
    edges = relatedness_edges(n, indexed(similar, "a", "b"), indexed(candidates, "source", "target"))
    started = time.monotonic()
    exact, _ = betweenness(n, edges, PlanOptions(exact_centrality_below=n + 1))
    exact_s = time.monotonic() - started
    started = time.monotonic()
    estimate, method = betweenness(
        n, edges, PlanOptions(exact_centrality_below=0, centrality_samples=samples)
    )
    estimate_s = time.monotonic() - started
    top = {}
    for k in (20, 100, n // 100):
        a, b = set(np.argsort(-exact)[:k].tolist()), set(np.argsort(-estimate)[:k].tolist())
        top[k] = len(a & b) / k
    return {
        "pages": n,
        "edges": edges.height,
        "method": method,
        "exact_s": exact_s,
        "estimate_s": estimate_s,
        "spearman": float(spearmanr(exact, estimate).statistic),
        "top_overlap": top,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--agreement-size", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=512)
    args = parser.parse_args()
    payload: dict = {"plan": {}, "plain": {}}
    rows = []
    for size in args.sizes:
        warehouse = prepared_warehouse(size)
        plain = PLAIN.format(warehouse=str(warehouse), site=SITE, budget=10)
        base = measure("plain top-10 plan", size, plain, 1).runs[0]
        payload["plain"][size] = base
        configs = [("defaults", {})] + ([("wider", WIDER)] if size == max(args.sizes) else [])
        for name, config in configs:
            asset = materialize_snippet(
                warehouse, SITE, "link_plan", {"ops": {"link_plan": {"config": config}}}, PLAN_RESULT
            )
            ours = measure(f"link_plan asset ({name})", size, asset, args.repeats)
            payload["plan"][f"{size} {name}"] = ours.runs
            first = ours.runs[0]
            if name == "defaults":
                rows.append(
                    [f"{size:,}", "plain: 10 most similar per page", f"{base['seconds']:.1f}",
                     f"{base['peak_rss_mb']:,.0f}", f"{base['links']:,}",
                     f"{first['orphans_before']:,} → {base['orphans_after']:,}",
                     f"{first['within4_before']:.1%} → {base['within4_after']:.1%}",
                     f"{base['max_depth_after']}", f"{first['gini_before']:.3f} → {base['gini_after']:.3f}",
                     "-"]
                )  # fmt: skip
            label = "link_plan asset" + (
                ", " + ", ".join(f"{k} {v}" for k, v in config.items()) if config else ""
            )
            rows.append(
                [f"{size:,}", label, f"{ours.median('seconds'):.1f} ({ours.spread('seconds')})",
                 f"{ours.median('peak_rss_mb'):,.0f}", f"{first['links']:,}",
                 f"{first['orphans_before']:,} → {first['orphans_after']:,}",
                 f"{first['within4_before']:.1%} → {first['within4_after']:.1%}",
                 f"{first['max_depth_after']}", f"{first['gini_before']:.3f} → {first['gini_after']:.3f}",
                 ", ".join(first["failed_checks"]) or "all pass"]
            )  # fmt: skip
    print_table(
        "Link plan: median seconds (min–max), generated sites with their All Inlinks export",
        rows,
        ["pages", "plan", "seconds", "peak MB", "links added", "orphans", "within 4 clicks", "max depth",
         "in-link Gini", "checks"],
    )  # fmt: skip

    agreement = centrality_agreement(prepared_warehouse(args.agreement_size), args.samples)
    payload["centrality"] = agreement
    print_table(
        f"Betweenness: {agreement['method']} against exact ({agreement['pages']:,} pages, "
        f"{agreement['edges']:,} relatedness edges)",
        [
            ["seconds", f"{agreement['exact_s']:.1f}", f"{agreement['estimate_s']:.1f}"],
            ["Spearman rank correlation", "1", f"{agreement['spearman']:.3f}"],
            *[[f"top-{k} overlap", "1", f"{v:.2f}"] for k, v in agreement["top_overlap"].items()],
        ],
        ["", "exact", "sampled"],
    )
    print(f"\nraw results: {save('link_plan', payload)}")


if __name__ == "__main__":
    main()
