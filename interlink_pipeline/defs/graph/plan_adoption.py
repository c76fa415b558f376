"""link_plan's metadata of what editors did with its links: decisions, acceptance, the links live, the
accepted links not live or not kept, and the links new since their last review."""

import polars as pl
from dagster import MetadataValue

from interlink_pipeline.core.graph.decided_links import adoption_by_reason
from interlink_pipeline.core.graph.link_plan import PlanHistory, SitePlan
from interlink_pipeline.core.warehouse.vocabularies import ACCEPTED_LIVE, NOT_KEPT
from interlink_pipeline.defs.previews import table_preview


def adoption_metadata(result: SitePlan, history: PlanHistory) -> dict:
    """Editors' decisions and the links seen live: their counts as a table (the links live and the
    acceptance rate as numbers, for the Plots tab), acceptance by reason, the accepted links no crawl has
    shown live yet, and those the plan cannot hold, with why (a warning: the CLI prints it)."""
    by_reason = adoption_by_reason(result.plan, history.decisions, result.live)
    total = by_reason.row(by_reason.height - 1, named=True)
    waiting = result.accepted.filter(pl.col("outcome") != ACCEPTED_LIVE)
    not_kept = waiting.filter(pl.col("outcome").str.starts_with(NOT_KEPT))
    why = not_kept.group_by("outcome").len("links").sort("links", "outcome", descending=[True, False])
    counts = {
        "accepted": total["accepted"],
        "rejected": total["rejected"],
        "live": result.live.height,
        "live since the last plan": result.live.height - history.live.height,
        "rejected, kept out": len(result.decided.rejected),
    }
    metadata = {
        "decisions": table_preview(pl.DataFrame({"links": list(counts), "count": list(counts.values())}), 10),
        "links_live": result.live.height,
        "acceptance_rate": MetadataValue.float(total["acceptance_rate"])
        if total["acceptance_rate"] is not None
        else "nothing decided yet",
        "rejected_planned_again": table_preview(result.decided.returned, 10)
        if result.decided.returned.height
        else "none",
        "adoption_by_reason": table_preview(by_reason, 10),
        "accepted_not_live": table_preview(
            waiting.select("source_url", "target_url", "decided_at", "outcome"), 20
        )
        if waiting.height
        else "none",
        "accepted_not_kept": not_kept.height,
        "accepted_not_kept_why": table_preview(why, 10) if not_kept.height else "none",
        **_review_queue(result, history.decisions),
    }
    if not_kept.height:
        counts = "; ".join(f"{n:,} {outcome.removeprefix(NOT_KEPT)}" for outcome, n in why.iter_rows())
        metadata["warning"] = (
            f"{not_kept.height:,} of the {result.accepted.height:,} links editors accepted are not in the "
            f"plan: {counts} (graph.link_plan_changes lists them: why 'accepted by an editor, not kept: …')"
        )
    return metadata


def _review_queue(result: SitePlan, standing: pl.DataFrame) -> dict:
    """The links new since the editors' last review, by why they are new, and those held back behind the
    pages they reviewed (new_links_per_reviewed_page)."""
    if standing.is_empty():
        return {"new_since_review": "no review yet"}
    new = result.plan.filter(pl.col("planned_since") > standing["decided_at"].max())
    why = new.group_by("added_because").len("links").sort("links", "added_because", descending=[True, False])
    return {
        "new_since_review": MetadataValue.int(new.height),
        "new_since_review_why": table_preview(why, 10) if new.height else "none",
        "waiting_for_review": MetadataValue.int(result.planner.waiting_for_review),
    }
