"""Editors' decisions benchmark: does the ranker learn from what editors accept and reject?

A simulated editor reviews the plan, round after round, and knows the site's true links: of the plan's links
on the pages it reviews, it accepts those the site has (hidden from the pipeline by the backtest) and rejects
the others. The pages are split in two by a seeded draw: the editor reviews the links placed on one half;
the plan's links on the other half, which no decision is about, are scored against the hidden links. So the
figure says whether the decisions teach the ranker something about pages nobody decided on, not whether the
plan repeats the answers it was given.

Each round: the backtest's rebuild (link_plan.backtest_plan: ranker, candidates and plan without the hidden
links) with the decisions so far, the unreviewed half's precision and the same-budget title baseline's on the
same pages, then the editor decides on the round's new links. Round 0 has no decision: it is the ranker
without them.

    python -m benchmarks.bench_decisions [--sets hugodocs hugodocs:no-text sample] [--seeds 0] [--rounds 2]

The sets go through the real assets up to the plan as bench_link_quality prepares them (a fresh warehouse
under benchmarks/.data/quality/<set>/).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

from benchmarks.bench_link_quality import ORPHAN_FRACTION, THROUGH_PLAN, _materialize, _prepare
from benchmarks.harness import print_table, save

PAIR = ["source", "target"]
FRACTION = 0.2


def _site_inputs(name: str, variant: str):
    """The set materialised up to the plan, and what a backtest rebuilds from."""
    from interlink_pipeline.core.graph.plan_inputs import read_plan_inputs
    from interlink_pipeline.core.relevance.site_inputs import relevance_inputs
    from interlink_pipeline.defs.ml.embeddings import default_embedder
    from interlink_pipeline.defs.resources import Warehouse

    site, path, inbox = _prepare(name, variant or None)
    _materialize(path, inbox, site, THROUGH_PLAN, {})
    warehouse = Warehouse(path=str(path))
    encoder = default_embedder().for_site(warehouse.path, site)
    inputs = relevance_inputs(warehouse, site, encoder.identity().model_id, encoder.encoder)
    return inputs, read_plan_inputs(warehouse, site, encoder)


def _precision(links: pl.DataFrame, truth: pl.DataFrame) -> tuple[int, int, float]:
    hits = links.select(PAIR).unique().join(truth.select(PAIR), on=PAIR).height
    return links.height, hits, hits / links.height if links.height else 0.0


def simulated_editor(
    set_name: str, site: tuple, seed: int, rounds: int, weight: float | None = None
) -> list[dict]:
    """The rounds on one set (`site`: _site_inputs) and seed (see the module's docstring); `weight`: the
    accepted and rejected links' weight (default: the settings')."""
    from interlink_pipeline.core.graph.link_plan import backtest_plan
    from interlink_pipeline.core.graph.plan_options import PlanOptions
    from interlink_pipeline.core.relevance.backtest import links_to_hide
    from interlink_pipeline.core.relevance.backtest_runs import BacktestSetup
    from interlink_pipeline.core.relevance.backtest_scores import baseline_lists, same_budget_baseline
    from interlink_pipeline.core.relevance.link_ranker import RankerOptions
    from interlink_pipeline.core.relevance.site_signals import CandidateOptions

    inputs, base = site
    links, n = inputs.links, inputs.pages.height
    home = int(inputs.pages["is_home"].arg_max())
    hiding = links_to_hide(links, FRACTION, seed, ORPHAN_FRACTION, home)
    truth = hiding.scored(links)
    reviewed = np.random.default_rng([seed, 40]).random(n) < 0.5
    unreviewed = pl.Series(np.flatnonzero(~reviewed), dtype=pl.Int64).implode()
    on_unreviewed = pl.col("source").is_in(unreviewed)
    ranker = RankerOptions(seed=seed)
    if weight is not None:
        ranker = RankerOptions(seed=seed, accepted_weight=weight, rejected_weight=weight)
    setup = BacktestSetup(FRACTION, seed, 10, ORPHAN_FRACTION, CandidateOptions(), ranker, PlanOptions())
    lists = baseline_lists(inputs.signals.vectors["title"], hiding.visible(links), 50).lists
    decided = pl.DataFrame(schema={"source": pl.Int64, "target": pl.Int64, "decision": pl.String})
    rows = []
    for round_number in range(rounds + 1):
        started = time.monotonic()
        result = backtest_plan(inputs.signals, links, base, hiding, setup, decided)
        ours = result.planned.filter(on_unreviewed)
        baseline = same_budget_baseline(lists.filter(on_unreviewed), ours.height)
        links_ours, hits, precision = _precision(ours, truth)
        _, _, baseline_precision = _precision(baseline, truth)
        new = (
            result.planned.filter(~on_unreviewed)
            .select(PAIR)
            .join(decided, on=PAIR, how="anti")
            .join(truth.select(PAIR).with_columns(pl.lit("accept").alias("decision")), on=PAIR, how="left")
            .with_columns(pl.col("decision").fill_null("reject"))
        )
        rows.append(
            {
                "set": set_name, "seed": seed, "weight": ranker.accepted_weight, "round": round_number,
                "decisions": decided.height,
                "accepted": int((decided["decision"] == "accept").sum()),
                "plan_links_unreviewed": links_ours, "hits_unreviewed": hits,
                "precision_unreviewed": precision,
                "baseline_precision_unreviewed": baseline_precision,
                "plan_precision_all": result.figures["plan_precision"],
                "seconds": time.monotonic() - started,
            }
        )  # fmt: skip
        print(
            f"  {set_name} seed {seed} round {round_number}: {decided.height} decisions; unreviewed pages' "
            f"precision {precision:.3f} ({links_ours} links) vs baseline {baseline_precision:.3f}",
            flush=True,
        )
        decided = pl.concat([decided, new.select(decided.columns)])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["hugodocs", "hugodocs:no-text", "sample"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--weights", nargs="+", type=float, default=[None], help="decisions' weights tried")
    args = parser.parse_args()
    rows = []
    for name in args.sets:
        site = _site_inputs(*name.partition(":")[::2])
        for seed in args.seeds:
            for weight in args.weights:
                rows += simulated_editor(name, site, seed, args.rounds, weight)
    table = pl.DataFrame(rows)
    print_table(
        "Precision on the pages no decision is about, by round of a simulated editor",
        [
            [r["set"], r["seed"], r["weight"], r["round"], r["decisions"], r["accepted"],
             r["plan_links_unreviewed"], r["hits_unreviewed"],
             f"{r['precision_unreviewed']:.3f}", f"{r['baseline_precision_unreviewed']:.3f}",
             f"{r['precision_unreviewed'] / r['baseline_precision_unreviewed']:.2f}"
             if r["baseline_precision_unreviewed"] else "–"]
            for r in table.iter_rows(named=True)
        ],
        ["set", "seed", "weight", "round", "decisions", "accepted", "plan links", "hits", "precision",
         "baseline", "ratio"],
    )  # fmt: skip
    save("decisions", {f"{r['set']}/{r['seed']}/{r['weight']}/{r['round']}": r for r in rows})


if __name__ == "__main__":
    main()
