"""The plan's stability: which of the last plan's links a re-crawl keeps (those whose pages stand unchanged),
and what changed since, link by link (graph.link_plan_changes)."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

PAGE_FINGERPRINT = ("url", "is_home", "title", "h1", "meta_description", "text_hash")


def page_fingerprints(pages: pl.DataFrame) -> pl.Series:
    """A hash of what the plan reads of each page: a page whose fingerprint differs is planned anew."""
    return pages.select(
        pl.concat_str(
            [pl.col(c).cast(pl.String).fill_null("\x00") for c in PAGE_FINGERPRINT], separator="\x1f"
        )
        .hash(seed=17)
        .cast(pl.String)
        .alias("plan_fingerprint")
    ).to_series()


def unchanged_pages(before: pl.DataFrame, now: pl.DataFrame) -> pl.DataFrame:
    """page_id, i, same: whether each page's fingerprint now (`now`: page_id, plan_fingerprint, i) is the one
    it had (`before`: page_id, plan_fingerprint); null for a page the last plan did not know."""
    return now.join(before, on="page_id", how="left", suffix="_before").select(
        "page_id", "i", (pl.col("plan_fingerprint") == pl.col("plan_fingerprint_before")).alias("same")
    )


def links_to_keep(
    previous: pl.DataFrame, before: pl.DataFrame, now: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(links to keep, links dropped with why) of the last plan (`previous`: source_page_id,
    target_page_id, reason, score, evidence, placement, alternatives), given each page's fingerprint
    then (`before`) and now (`now`: page_id, plan_fingerprint, i). A link is kept while both its pages
    stand unchanged; one whose page changed is decided anew (and often planned again), one whose page is
    gone is dropped."""
    fingerprints = unchanged_pages(before, now).with_columns(pl.col("same").fill_null(False))
    joined = previous.with_row_index("order")
    for side in ("source", "target"):
        joined = joined.join(
            fingerprints.rename({"page_id": f"{side}_page_id", "i": side, "same": f"{side}_same"}),
            on=f"{side}_page_id",
            how="left",
            maintain_order="left",
        )
    why = (
        pl.when(pl.col("source").is_null() | pl.col("target").is_null())
        .then(pl.lit("page removed"))
        .when(~(pl.col("source_same") & pl.col("target_same")))
        .then(pl.lit("page changed: planned anew"))
    )
    joined = joined.with_columns(why.alias("why"))
    keep = (
        joined.filter(pl.col("why").is_null())
        .sort("order")
        .select("source", "target", "reason", "score", "evidence", "placement", "alternatives")
    )
    dropped = joined.filter(pl.col("why").is_not_null()).select("source_page_id", "target_page_id", "why")
    return keep, dropped


def plan_changes(
    previous: pl.DataFrame, plan: pl.DataFrame, dropped: pl.DataFrame, not_kept: pl.DataFrame
) -> pl.DataFrame:
    """Each link of the last plan or this one: kept, added or removed, and why (`dropped`: the links
    links_to_keep or the planner let go, with why; a link of both plans was kept; an added one says why it
    is new: the plan's added_because); and each link editors
    accepted that this plan cannot hold (`not_kept`: accepted_outcomes' rows), removed if the last plan had
    it, else `not kept`, saying why."""
    pair = ["source_page_id", "target_page_id"]
    columns = [*pair, "source_url", "target_url", "reason"]
    kept = plan.join(previous, on=pair, how="semi").select(
        *columns, pl.lit("kept").alias("change"), pl.lit("still valid").alias("why")
    )
    replanned = kept.join(dropped, on=pair, how="semi").with_columns(
        pl.lit("planned again after a change").alias("why")
    )
    kept = pl.concat([kept.join(dropped, on=pair, how="anti"), replanned])
    added = plan.join(previous, on=pair, how="anti").select(
        *columns, pl.lit("added").alias("change"), pl.col("added_because").alias("why")
    )
    was_planned = previous.select(*pair).unique().with_columns(pl.lit("removed").alias("change"))
    accepted = not_kept.join(was_planned, on=pair, how="left", maintain_order="left").select(
        *pair, "source_url", "target_url", pl.col("reason").fill_null("topical"),
        pl.col("change").fill_null("not kept"), ("accepted by an editor, " + pl.col("outcome")).alias("why"),
    )  # fmt: skip
    removed = (
        previous.join(plan, on=pair, how="anti")
        .join(accepted, on=pair, how="anti")
        .join(dropped, on=pair, how="left", maintain_order="left")
        .select(*columns, pl.lit("removed").alias("change"), pl.col("why").fill_null("no longer chosen"))
    )
    return pl.concat([kept, added, removed, accepted]).sort("change", *pair)


def refused_links(page_ids: pl.Series, refused: Mapping[tuple[int, int], str]) -> pl.DataFrame:
    """The last plan's links the planner did not keep (source, target page indices -> why), by page id."""
    return pl.DataFrame(
        [(page_ids[s], page_ids[t], why) for (s, t), why in refused.items()],
        schema=["source_page_id", "target_page_id", "why"],
        orient="row",
    )
