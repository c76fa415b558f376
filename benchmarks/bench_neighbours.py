"""Nearest pages, exact against approximate: each size's full neighbour search (the width the candidates' text
fields search, 31 per page) exactly and through the checked HNSW search the pipeline uses past
`approximate_above` pages, with its recall@k on the run's own 1,000-page sample and against the whole
exact search, on the page vectors of the generated 100,000-page site (`bench_link_plan` makes it).

    python -m benchmarks.bench_neighbours --sizes 10000 50000 100000
"""

from __future__ import annotations

import argparse
import time

import duckdb
import numpy as np

from benchmarks.harness import DATA, print_table
from interlink_pipeline.core.ml.ann_search import RECALL_FLOOR, Approximate, checked_top, recall_at_k
from interlink_pipeline.core.ml.exact_search import exact_top

WIDTH, K = 31, 21  # neighbours_per_field 20 + 1 + the kept margin 10; recall judged at the 21 used


def vectors_of(pages: int) -> np.ndarray:
    with duckdb.connect(str(DATA / "planned-100000.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT vector FROM ml.page_embeddings ORDER BY page_id LIMIT ?", [pages]
        ).fetchnumpy()
    return np.array(rows["vector"].tolist(), dtype=np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 50_000, 100_000])
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        vectors = vectors_of(size)
        started = time.monotonic()
        _, exact_scores = exact_top(vectors, vectors, WIDTH, query_ids=np.arange(len(vectors)))
        exact_s = time.monotonic() - started
        _, scores, check = checked_top(vectors, WIDTH, Approximate(above=0, k=K))
        whole = recall_at_k(scores, exact_scores, K)
        rows.append([f"{len(vectors):,}", f"{exact_s:.1f} s", f"{check.seconds:.1f} s",
                     f"{exact_s / check.seconds:.1f}×", f"{check.recall_at_k:.4f}", f"{whole:.4f}",
                     "kept" if not check.fell_back else "exact answered"])  # fmt: skip
    header = ["pages", "exact", "checked HNSW (with its check)", "speed-up", f"recall@{K} (run's sample)",
              f"recall@{K} (every page)", f"at floor {RECALL_FLOOR}"]  # fmt: skip
    print_table("Nearest pages: exact search against the checked approximate search", rows, header)


if __name__ == "__main__":
    main()
