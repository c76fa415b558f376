"""Fit the default link ranker (interlink_pipeline/core/ml/default_ranker.json): the logistic-regression
weights a site with too few in-content links of its own is ranked with.

Fitted on the development crawls whose warehouses `bench_link_quality` left under benchmarks/.data/quality/
(default: hugodocs and the bundled sample); checked on a set they were not fitted on by the same benchmark
(`--sets lightchiropractic` plans that site a second time with these weights).

    python -m benchmarks.fit_default_ranker [--sets hugodocs sample]
"""

from __future__ import annotations

import argparse
import json

import polars as pl

from benchmarks.bench_link_quality import SETS
from benchmarks.harness import DATA
from interlink_pipeline.core.relevance.link_candidates import CandidateBuilder
from interlink_pipeline.core.relevance.link_ranker import (
    DEFAULT_WEIGHTS,
    RankerOptions,
    export_weights,
    fit_ranker,
    training_examples,
)
from interlink_pipeline.core.relevance.site_inputs import relevance_inputs
from interlink_pipeline.defs.ml.embeddings import default_embedder
from interlink_pipeline.defs.relevance.ranker import CandidateSettings
from interlink_pipeline.defs.resources import Warehouse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["hugodocs", "sample"], choices=list(SETS))
    args = parser.parse_args()
    options = RankerOptions(model="logistic", min_positives=1)
    frames = []
    for name in args.sets:
        site = SETS[name][0]
        warehouse = Warehouse(path=str(DATA / "quality" / name / "warehouse.duckdb"))
        embedder = default_embedder()
        inputs = relevance_inputs(warehouse, site, embedder.identity().model_id, embedder.encoder)
        builder = CandidateBuilder(inputs.signals, CandidateSettings().options())
        examples = training_examples(builder, inputs.links, options)
        # each set weighs the same, whatever its size
        frames.append(
            examples.sample(min(examples.height, 150_000), seed=0).with_columns(pl.lit(name).alias("set"))
        )
        print(f"{name}: {examples.height:,} examples, {int(examples['label'].sum()):,} positive")
    ranker = fit_ranker(pl.concat(frames), options)
    print(ranker.reason)
    weights = export_weights(ranker, "logistic regression fitted on " + " and ".join(args.sets))
    DEFAULT_WEIGHTS.write_text(json.dumps(weights, indent=2) + "\n")
    print(f"wrote {DEFAULT_WEIGHTS}")


if __name__ == "__main__":
    main()
