"""The editor's review queue: the pages an editor has reviewed (decided links on), the last plan's links that
were there when they did, and why each new link of a plan is new (the links planned since the site's last
decisions are listed as new since the review: warehouse_reads.NEW_SQL). A re-run keeps the undecided links
in place (plan_stability.py); what it adds is said here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
import polars as pl

PAIR = ["source_page_id", "target_page_id"]
FIRST_PLAN = "in the site's first plan"
BEFORE_REASONS = "in the plan before reasons were kept"  # a link of a plan made before this column existed


@dataclass(frozen=True)
class ReviewedPages:
    """The pages an editor has decided links on, by page index, and the last plan's links on them that the
    editor saw: those there at the page's last review."""

    pages: np.ndarray  # bool per page
    settled: frozenset[tuple[int, int]]


def reviewed_pages(standing: pl.DataFrame, previous: pl.DataFrame, index: pl.DataFrame) -> ReviewedPages:
    """ReviewedPages from the standing decisions (graph.link_decisions rows), the last plan (`previous`:
    source_page_id, target_page_id, planned_since) and the pages now (`index`: page_id -> i)."""
    reviews = standing.group_by("source_page_id").agg(pl.col("decided_at").max().alias("reviewed_at"))
    sides = {side: index.rename({"page_id": f"{side}_page_id", "i": side}) for side in ("source", "target")}
    reviews = reviews.join(sides["source"], on="source_page_id")
    pages = np.zeros(index.height, dtype=bool)
    pages[reviews["source"].to_numpy()] = True
    seen = (
        previous.join(reviews, on="source_page_id")
        .join(sides["target"], on="target_page_id")
        .filter(pl.col("planned_since").is_null() | (pl.col("planned_since") <= pl.col("reviewed_at")))
    )
    settled = frozenset(zip(seen["source"].to_list(), seen["target"].to_list(), strict=True))
    return ReviewedPages(pages, settled)


def why_added(
    plan: pl.DataFrame,
    previous: pl.DataFrame,
    fingerprints: pl.DataFrame,
    let_go: pl.DataFrame,
    learned: int | None,
) -> pl.DataFrame:
    """source_page_id, target_page_id, added_because: why each link of `plan` the last plan (`previous`)
    did not have is new — one of its pages is new or changed (`fingerprints`: page_id, same — null for a
    page the last plan did not know), its source lost a link of the last plan (`let_go`: pairs, why), the
    ranker was fitted again since the last plan (`learned`: the decisions made since; None: it was not),
    or else the scores changed."""
    added = plan.select(PAIR).join(previous.select(PAIR), on=PAIR, how="anti")
    if previous.is_empty():
        return added.with_columns(pl.lit(FIRST_PLAN).alias("added_because"))
    lost = (
        previous.select(PAIR)
        .join(plan.select(PAIR), on=PAIR, how="anti")
        .join(let_go, on=PAIR, how="left")
        .group_by("source_page_id")
        .agg(pl.col("why").fill_null("no longer chosen").sort().first().alias("lost"))
    )
    for side in ("source", "target"):
        added = added.join(
            fingerprints.rename({"page_id": f"{side}_page_id", "same": f"{side}_same"}),
            on=f"{side}_page_id",
            how="left",
        )
    scores = (
        "newly chosen: the site's links, the candidates or the settings changed"
        if learned is None
        else f"the ranker was fitted again since the last plan, learning from {learned:,} new decisions"
        if learned
        else "the ranker was fitted again since the last plan, on the site as it is now"
    )
    because = (
        pl.when(pl.col("source_same").is_null())
        .then(pl.lit("its source page is new in this crawl"))
        .when(pl.col("target_same").is_null())
        .then(pl.lit("its target page is new in this crawl"))
        .when(~pl.col("source_same"))
        .then(pl.lit("its source page changed since the last plan"))
        .when(~pl.col("target_same"))
        .then(pl.lit("its target page changed since the last plan"))
        .when(pl.col("lost").is_not_null())
        .then("in place of a link its page lost: " + pl.col("lost"))
        .otherwise(pl.lit(scores))
    )
    return added.join(lost, on="source_page_id", how="left").select(*PAIR, because.alias("added_because"))


def with_history(
    plan: pl.DataFrame,
    previous: pl.DataFrame,
    added: pl.DataFrame,
    now: datetime,
    planned_at: datetime | None,
) -> pl.DataFrame:
    """graph.link_plan rows with planned_since and added_because: a link of the last plan keeps its own
    (those of a plan made before they were kept: the last plan's time, BEFORE_REASONS), a new one is
    planned now, for its reason in `added` (why_added)."""
    carried = previous.select(*PAIR, "planned_since", "added_because")
    since = pl.coalesce(
        "planned_since", "new_since", pl.lit(planned_at or now, dtype=pl.Datetime("us"))
    ).dt.cast_time_unit("us")
    return (
        plan.join(carried, on=PAIR, how="left", maintain_order="left")
        .join(
            added.with_columns(pl.lit(now, dtype=pl.Datetime("us")).alias("new_since")).rename(
                {"added_because": "new_because"}
            ),
            on=PAIR,
            how="left",
            maintain_order="left",
        )
        .with_columns(
            since.alias("planned_since"),
            pl.coalesce("added_because", "new_because", pl.lit(BEFORE_REASONS)).alias("added_because"),
        )
        .drop("new_since", "new_because")
    )
