"""The local engine's search past a size: each word's postings capped, the cap checked every run.

A query scores every page that shares a word with it, and a title's words are shared by a fixed share of any
site's pages, so a full search grows with the square of the site. Capping each word's postings at its
PAGES_PER_WORD best-weighted pages, and scoring in full the pages a query finds through them, bounds each
query's work. What the cap can lose is a page on none of its query's words' capped lists; so on a seeded
sample of queries both searches run, and the capped one answers only where it finds the share of the full
search's results that the site's approximate neighbour searches must (RECALL_FLOOR); else the full search
answers, and the run says so.
"""

from __future__ import annotations

import time

import numpy as np
import polars as pl

from interlink_pipeline.core.ml.ann_search import RECALL_FLOOR, RECALL_SAMPLE, SearchCheck
from interlink_pipeline.core.serp.local_search import LocalSearch

PAGES_PER_WORD = 250  # cppdocs: 99.4% of the queries' top 10 whole, for a fifth of the matches scored


def checked_search(
    engine: LocalSearch,
    queries: list[str],
    n: int,
    prefix: str,
    capped_above: int | None,
    recall_floor: float = RECALL_FLOOR,
) -> tuple[pl.DataFrame, SearchCheck]:
    """engine.search's top `n` of each query, capped past `capped_above` pages (None: never) where the
    cap keeps `recall_floor` of a full search's results on a sample of the queries; and how it searched."""
    if capped_above is None or engine.pages <= capped_above or not queries:
        return engine.search(queries, n, prefix), SearchCheck("exact")
    started = time.monotonic()
    picked = np.sort(
        np.random.default_rng(0).choice(len(queries), min(RECALL_SAMPLE, len(queries)), replace=False)
    )
    sample = [queries[i] for i in picked]
    recall = capped_recall(engine.search(sample, n, prefix), engine.search(sample, n, prefix, PAGES_PER_WORD))
    checked = time.monotonic() - started
    if recall < recall_floor:
        why = (
            f"capped postings found {recall:.3f} of a full search's results on {len(sample):,} queries, "
            f"under the {recall_floor} floor: searched in full"
        )
        check = SearchCheck("exact", recall, len(sample), fell_back=True, why=why, seconds=checked)
        return engine.search(queries, n, prefix), check
    method = f"capped postings ({PAGES_PER_WORD} pages per word)"
    return engine.search(queries, n, prefix, PAGES_PER_WORD), SearchCheck(
        method, recall, len(sample), seconds=checked
    )


def capped_recall(full: pl.DataFrame, capped: pl.DataFrame) -> float:
    """The share of `full`'s results (query_index, row, score) that `capped` lists, a page tied with a
    query's last full result counting as found (the two sum a page's word weights in another order)."""
    if full.is_empty():
        return 1.0
    last = full.group_by("query_index").agg(pl.col("score").min().alias("last"), pl.len().alias("listed"))
    found = (
        capped.join(last, on="query_index")
        .filter(pl.col("score") >= pl.col("last") * (1 - 1e-5))
        .group_by("query_index")
        .len("found")
    )
    kept = last.join(found, on="query_index", how="left").select(
        pl.min_horizontal(pl.col("found").fill_null(0), "listed")
    )
    return float(kept.to_series().sum() / last["listed"].sum())
