"""The report's sections on the editor's loop: what changed since the last run, the links new since the
editors' last review (and those waiting behind it), and what editors made of the plan."""

from __future__ import annotations

import polars as pl

from interlink_pipeline.core.graph.decided_links import accepted_outcomes, adoption_by_reason
from interlink_pipeline.core.publish.report_parts import SECTIONS, ReportData
from interlink_pipeline.core.warehouse.vocabularies import ACCEPTED_LIVE, NOT_KEPT

CHANGES_SHOWN = 50  # the added and removed links listed
ADOPTION_SHOWN = 50  # accepted links not live yet, listed
NEW_SHOWN = 200  # links new since the last review, listed (the spreadsheets hold them all)


def changes_section(data: ReportData) -> str:
    """How this plan differs from the previous run's: links kept, added and removed, and why."""
    changes = data.changes
    if changes is None or changes.is_empty() or (changes["change"] == "added").all():
        return SECTIONS.changes()
    counts = (
        changes.group_by("change", "why")
        .agg(pl.len().alias("links"))
        .sort("change", "links", descending=[False, True])
    )
    kept = int((changes["change"] == "kept").sum())
    previous = kept + int((changes["change"] == "removed").sum())
    moved = (
        changes.filter(pl.col("change") != "kept")
        .sort("change", "source_url", "target_url")
        .head(CHANGES_SHOWN)
        .select("change", "why", "source_url", "target_url", "reason")
    )
    return SECTIONS.changes(counts, moved, kept, previous)


def adoption_section(data: ReportData) -> str:
    """What editors made of the plan: decisions and acceptance by reason, week by week, the planned links
    live on the site, and the accepted ones not live yet."""
    decisions = data.decisions if data.decisions is not None else pl.DataFrame()
    live = data.live if data.live is not None else pl.DataFrame()
    if decisions.is_empty() and live.is_empty():
        return SECTIONS.adoption()
    by_reason = adoption_by_reason(data.plan, decisions, live)
    total = by_reason.row(by_reason.height - 1, named=True)
    outcomes = accepted_outcomes(decisions, data.plan, live, data.pages["page_id"])
    waiting = outcomes.filter(pl.col("outcome") != ACCEPTED_LIVE).select(
        "source_url", "target_url", "decided_at", "outcome"
    )
    not_kept = int(waiting["outcome"].str.starts_with(NOT_KEPT).sum())
    weeks = data.adoption.drop("week_key", "site") if data.adoption is not None else pl.DataFrame()
    # the links the plan cannot hold first: the editor's to know of
    shown = waiting.sort(pl.col("outcome").str.starts_with(NOT_KEPT), descending=True, maintain_order=True)
    return SECTIONS.adoption(total, by_reason, weeks, shown.head(ADOPTION_SHOWN), waiting.height, not_kept)


def new_since_review_section(data: ReportData) -> str:
    """The links planned since the editors' last decisions, each with why it is new, and how many the plan
    holds back behind the pages they reviewed (new_links_per_reviewed_page)."""
    if data.decisions is None or data.decisions.is_empty() or data.new_since_review is None:
        return SECTIONS.new_since_review()
    after = data.site_metrics.filter(pl.col("scenario") == "after")
    waiting = int(after["waiting_for_review"].fill_null(0).sum()) if "waiting_for_review" in after else 0
    new = data.new_since_review
    shown = new.head(NEW_SHOWN).select(
        pl.col("added_because").alias("why new"), "source_url", "anchor_text", "target_url", "placement",
        "confidence",
    )  # fmt: skip
    reviewed_at = data.decisions["decided_at"].max()
    return SECTIONS.new_since_review(new.height, shown, waiting, f"{reviewed_at:%Y-%m-%d %H:%M}")
