"""What editors' decisions do to the next plan, and the planned links a re-crawl finds live.

- An **accepted** link that is not on the site yet stays in the plan whatever its new score and however
  many links its page already has: it is placed first, before the last plan's other links, until one of its
  pages is gone or the crawl finds it live (accepted_outcomes says which).
- A **rejected** link is never planned again, unless the text of one of its pages changed past a threshold
  since the decision: when less than `rejected_returns_below` (PlanOptions) of the page's word triples are
  still there. The share is estimated from a bottom-64 sketch of the page's word triples (title, H1,
  description, body text) kept with the decision: an edit of a sentence keeps a long page's link refused, a
  rewritten page is judged anew.
- A link of the last plan, or an accepted one, that the crawl's All Inlinks shows in a page's content is
  **live**, with the crawl it was first seen in (graph.live_links).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from interlink_pipeline.core.graph.plan_state import planned_frame
from interlink_pipeline.core.warehouse.vocabularies import (
    ACCEPTED_IN_PLAN,
    ACCEPTED_LIVE,
    NOT_KEPT,
    PLANNER_MISSED,
)

SKETCH_SIZE = 64  # hashes kept per page: the share estimate's error is about 1/sqrt(64) at worst
SHINGLE_WORDS = 3
SKETCH_TEXT = ("title", "h1", "meta_description", "body_text")
ACCEPTED_EVIDENCE = "accepted"  # the evidence of an accepted link the last plan no longer had
LIVE_COLUMNS = ["link_id", "source_page_id", "target_page_id", "source_url", "target_url", "reason"]
OUTCOME_COLUMNS = [*LIVE_COLUMNS, "decided_at", "outcome"]
_WORD = re.compile(r"\w+")


def text_sketch(text: str) -> list[int]:
    """The smallest SKETCH_SIZE hashes of the text's word triples (lower case; the words themselves when
    it has fewer than three): two sketches estimate how much of the text two versions share."""
    words = _WORD.findall(text.lower())
    shingles = {" ".join(words[i : i + SHINGLE_WORDS]) for i in range(max(1, len(words) - SHINGLE_WORDS + 1))}
    hashes = {
        int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(), "big", signed=True)
        for s in shingles
    }
    return sorted(hashes)[:SKETCH_SIZE]


def page_sketches(pages: pl.DataFrame) -> pl.DataFrame:
    """page_id, sketch: each page's text_sketch of its title, H1, description and body text."""
    texts = pages.select(
        "page_id",
        pl.concat_str([pl.col(c).fill_null("") for c in SKETCH_TEXT], separator=" ").alias("text"),
    )
    sketches = [text_sketch(text) for text in texts["text"]]
    return texts.select("page_id").with_columns(pl.Series("sketch", sketches, dtype=pl.List(pl.Int64)))


def sketch_similarity(before: Sequence[int] | None, now: Sequence[int] | None) -> float:
    """The estimated share of word triples two versions of a text share (Jaccard), from their sketches; 1
    when the decision kept none (nothing to compare)."""
    if before is None or now is None:
        return 1.0
    before, now = set(before), set(now)
    union = sorted(before | now)[:SKETCH_SIZE]
    if not union:
        return 1.0
    both = before & now
    return sum(h in both for h in union) / len(union)


def with_decided_context(rows: pl.DataFrame, pages: pl.DataFrame, plan: pl.DataFrame) -> pl.DataFrame:
    """A decisions file's graph.link_decisions rows with what was decided on: the plan's reason for each
    link (`plan`: link_id, reason) and both pages' text sketches (`pages`: page_id, SKETCH_TEXT)."""
    ends = pl.concat([rows["source_page_id"], rows["target_page_id"]]).implode()
    sketches = page_sketches(pages.filter(pl.col("page_id").is_in(ends)))
    rows = rows.join(plan.select("link_id", "reason"), on="link_id", how="left", maintain_order="left")
    for side in ("source", "target"):
        rows = rows.join(
            sketches.rename({"page_id": f"{side}_page_id", "sketch": f"{side}_sketch"}),
            on=f"{side}_page_id",
            how="left",
            maintain_order="left",
        )
    return rows


@dataclass
class DecidedLinks:
    """What the standing decisions ask of the next plan, by page index."""

    accepted: pl.DataFrame  # planned_frame rows: placed first
    rejected: frozenset[tuple[int, int]]  # never planned
    returned: pl.DataFrame  # rejected links let back: source_page_id, target_page_id, text_kept

    @classmethod
    def none(cls) -> DecidedLinks:
        return cls(planned_frame([]), frozenset(), _returned_frame([]))


def decided_links(
    standing: pl.DataFrame,
    pages: pl.DataFrame,
    index: pl.DataFrame,
    previous: pl.DataFrame,
    returns_below: float,
) -> DecidedLinks:
    """The plan's accepted and refused links from the standing decisions (graph.link_decisions rows, one per
    link), the pages now (page_id and the SKETCH_TEXT columns; `index`: page_id -> i) and the last plan
    (`previous`: its rows with `alternatives` as page indices): a decision about a page that is gone is
    moot."""
    rows = standing
    for side in ("source", "target"):
        rows = rows.join(index.rename({"page_id": f"{side}_page_id", "i": side}), on=f"{side}_page_id")
    rejected = rows.filter(pl.col("decision") == "reject")
    sketches = dict(
        page_sketches(
            pages.filter(
                pl.col("page_id").is_in(
                    pl.concat([rejected["source_page_id"], rejected["target_page_id"]]).implode()
                )
            )
        ).iter_rows()
    )
    kept = [
        min(sketch_similarity(row["source_sketch"], sketches[row["source_page_id"]]),
            sketch_similarity(row["target_sketch"], sketches[row["target_page_id"]]))
        for row in rejected.iter_rows(named=True)
    ]  # fmt: skip
    rejected = rejected.with_columns(pl.Series("text_kept", kept, dtype=pl.Float64))
    refused = rejected.filter(pl.col("text_kept") >= returns_below)
    returned = rejected.filter(pl.col("text_kept") < returns_below).select(
        "source_page_id", "target_page_id", "text_kept"
    )
    return DecidedLinks(
        _accepted_links(rows.filter(pl.col("decision") == "accept"), previous),
        frozenset(zip(refused["source"].to_list(), refused["target"].to_list(), strict=True)),
        returned,
    )


def _accepted_links(accepted: pl.DataFrame, previous: pl.DataFrame) -> pl.DataFrame:
    """The accepted links as planned links: as the last plan had them, else with the reason they were
    decided under and 'accepted' as their evidence."""
    pair = ["source_page_id", "target_page_id"]
    planned = previous.select(*pair, "reason", "score", "evidence", "placement", "alternatives")
    joined = accepted.select(*pair, "source", "target", pl.col("reason").alias("decided_reason")).join(
        planned, on=pair, how="left", maintain_order="left"
    )
    return planned_frame([]).vstack(
        joined.select(
            "source",
            "target",
            pl.coalesce("reason", "decided_reason", pl.lit("topical")).alias("reason"),
            pl.col("score").fill_null(0.0).cast(pl.Float32),
            pl.col("evidence").fill_null(ACCEPTED_EVIDENCE),
            pl.col("placement").fill_null("contextual"),
            pl.col("alternatives").fill_null([]).cast(pl.List(pl.Int64)),
        )
    )


def _returned_frame(rows: list) -> pl.DataFrame:
    schema = {"source_page_id": pl.String, "target_page_id": pl.String, "text_kept": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def links_seen_live(
    site: str,
    watched: pl.DataFrame,
    content_pairs: pl.DataFrame,
    seen: pl.DataFrame,
    crawl_id: str,
    seen_at: datetime,
) -> pl.DataFrame:
    """graph.live_links: the links seen live so far (`seen`) and those of `watched` (the last plan's links and
    the accepted ones: LIVE_COLUMNS and decision) that the crawl now has in a page's content
    (`content_pairs`: source_page_id, target_page_id), first seen in `crawl_id`."""
    pair = ["source_page_id", "target_page_id"]
    new = (
        watched.unique("link_id", keep="first", maintain_order=True)
        .join(seen.select("link_id"), on="link_id", how="anti")
        .join(content_pairs.unique(), on=pair, how="semi")
        .select(
            pl.lit(site).alias("site"),
            *LIVE_COLUMNS,
            "decision",
            pl.lit(crawl_id).alias("crawl_id"),
            pl.lit(seen_at, dtype=pl.Datetime("us")).alias("seen_at"),
        )
    )
    return pl.concat([seen.select(new.columns), new]) if seen.height else new


def adoption_by_reason(plan: pl.DataFrame, standing: pl.DataFrame, live: pl.DataFrame) -> pl.DataFrame:
    """Per reason (and a total row): links in the plan, accepted, rejected, live, and the acceptance rate
    (accepted of decided); a decided or live link counts under the reason it was planned for."""
    reason = pl.col("reason").fill_null("not planned")
    counts = [
        plan.group_by(reason).agg(pl.len().alias("planned")),
        standing.group_by(reason).agg(
            (pl.col("decision") == "accept").sum().alias("accepted"),
            (pl.col("decision") == "reject").sum().alias("rejected"),
        ),
        live.group_by(reason).agg(pl.len().alias("live")),
    ]
    table = counts[0].join(counts[1], on="reason", how="full", coalesce=True)
    table = table.join(counts[2], on="reason", how="full", coalesce=True)
    figures = ["planned", "accepted", "rejected", "live"]
    table = table.with_columns(pl.col(figures).fill_null(0).cast(pl.Int64)).sort("planned", descending=True)
    total = table.select(pl.lit("all").alias("reason"), pl.col(figures).sum())
    decided = pl.col("accepted") + pl.col("rejected")
    return pl.concat([table.select("reason", *figures), total]).with_columns(
        pl.when(decided > 0).then(pl.col("accepted") / decided).alias("acceptance_rate")
    )


def accepted_outcomes(
    standing: pl.DataFrame, plan: pl.DataFrame, live: pl.DataFrame, page_ids: pl.Series
) -> pl.DataFrame:
    """Each link editors accepted (the standing decisions) and what became of it: live on the site, in the
    plan, or not kept and why (a page of it is gone from the crawl's pages: removed, redirected, or excluded
    by the cleaning). Its pages, URLs, when decided, the reason it was planned for, and the outcome; the
    oldest decision first."""
    known = page_ids.implode()
    source_gone, target_gone = (~pl.col(f"{side}_page_id").is_in(known) for side in ("source", "target"))
    outcome = (
        pl.when(pl.col("link_id").is_in(live["link_id"].implode()))
        .then(pl.lit(ACCEPTED_LIVE))
        .when(pl.col("link_id").is_in(plan["link_id"].implode()))
        .then(pl.lit(ACCEPTED_IN_PLAN))
        .when(source_gone & target_gone)
        .then(pl.lit(NOT_KEPT + "both its pages are gone from the crawl"))
        .when(source_gone)
        .then(pl.lit(NOT_KEPT + "its source page is gone from the crawl"))
        .when(target_gone)
        .then(pl.lit(NOT_KEPT + "its target page is gone from the crawl"))
        .otherwise(pl.lit(NOT_KEPT + PLANNER_MISSED))
    )
    accepted = standing.filter(pl.col("decision") == "accept").with_columns(outcome.alias("outcome"))
    return accepted.select(OUTCOME_COLUMNS).sort("decided_at", "source_url", "target_url")
