"""graph.link_plan's rows: the planned links with their anchors, sentences and placements, by page id and
URL. A link that may only go in the source's text (sensible_candidates' needs_sentence: into a broad page,
or one the text naming the target alone supports; a topical link the site's links do not tie, its `tied`)
and whose anchor found no sentence that can take it is taken out of the plan, not turned into a
related-links entry nothing supports."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from interlink_pipeline.core.graph.anchors import Anchored, AnchorRules, plan_anchors
from interlink_pipeline.core.graph.decisions import link_ids
from interlink_pipeline.core.graph.mention_sense import MentionSense
from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.graph.plan_state import PlanState
from interlink_pipeline.core.relevance.confidence import MeasuredConfidence, link_confidence
from interlink_pipeline.core.warehouse.vocabularies import STRUCTURAL_REASONS


def placed_links(
    pages: pl.DataFrame,
    planned: pl.DataFrame,
    planner: PlanState,
    candidates: pl.DataFrame,
    options: PlanOptions,
    taken: Mapping[str, set[int]],
    parents: list[int],
    sense: MentionSense,
    rules: AnchorRules,
) -> tuple[pl.DataFrame, Anchored]:
    """The planned links (with needs_sentence, tied) that keep a place and their anchors (plan_anchors,
    by the site's anchor `rules`); the links taken out leave the planner too (their room given back), but
    those editors accepted, and a target then past max_target_share of the plan keeps its most probable
    topical links."""

    def anchored_links(links: pl.DataFrame) -> Anchored:
        return plan_anchors(pages, links, candidates, options, taken, parents, rules, sense)

    anchored = anchored_links(planned)
    unplaced = planned.select(
        "source", "target", "needs_sentence", "tied", "reason",
        pl.Series("placement", anchored.placements, dtype=pl.String),
    ).filter(
        (pl.col("placement") == "related")
        & (pl.col("needs_sentence") | (~pl.col("tied") & (pl.col("reason") == "topical")))
    )  # fmt: skip
    pairs = {
        pair for pair in unplaced.select("source", "target").iter_rows() if pair not in planner.accepted_pairs
    }
    if not pairs:
        return planned, anchored
    planner.remove(pairs)
    # the share one target may take is of the plan that stays
    pairs |= planner.drop_topical_past(max(2, int(options.max_target_share * len(planner.links))))
    keep = pl.Series([pair not in pairs for pair in planned.select("source", "target").iter_rows()])
    planned = planned.filter(keep)
    return planned, anchored_links(planned)


def navigation_pairs(existing: pl.DataFrame) -> pl.DataFrame:
    """The (source, target) pairs the site links in navigation but not in content."""
    pairs = existing.select("source", "target", "content")
    content = pairs.filter(pl.col("content")).select("source", "target")
    return (
        pairs.filter(~pl.col("content"))
        .select("source", "target")
        .unique()
        .join(content, on=["source", "target"], how="anti")
    )


def plan_rows(
    site: str,
    pages: pl.DataFrame,
    planned: pl.DataFrame,
    anchored: Anchored,
    min_probability: float,
    navigation: pl.DataFrame,
    measured: MeasuredConfidence,
) -> pl.DataFrame:
    """graph.link_plan: the planned links (page indices) by page id and URL, with their anchors, sentences
    and placements; a structural link whose source scores under `min_probability` is weak; a link the
    source already has in its navigation (a menu, a sidebar) is flagged; each link's confidence band and
    note, by what the site's last backtest `measured` (relevance/confidence.py)."""
    ids, urls = pages["page_id"], pages["url"]
    structural = pl.col("reason").is_in(STRUCTURAL_REASONS)
    in_navigation = (
        planned.select("source", "target")
        .join(
            navigation.with_columns(pl.lit(True).alias("in_navigation")),
            on=["source", "target"],
            how="left",
            maintain_order="left",
        )["in_navigation"]
        .fill_null(False)
    )
    return planned.with_columns(
        pl.Series("anchor_text", anchored.anchors, dtype=pl.String),
        pl.Series("anchor_offset", anchored.offsets, dtype=pl.Int32),
        pl.Series("sentence", anchored.sentences, dtype=pl.String),
        pl.Series("placement", anchored.placements, dtype=pl.String),
        in_navigation.alias("in_navigation"),
        pl.col("alternatives")
        .list.eval(
            pl.element().replace_strict(pl.int_range(urls.len(), eager=True), urls, return_dtype=pl.String)
        )
        .alias("alternative_source_urls"),
        (structural & (pl.col("probability").fill_null(0.0) < min_probability)).alias("weak"),
        *link_confidence(planned, measured, min_probability).get_columns(),
    ).select(
        pl.lit(site).alias("site"),
        pl.Series("source_page_id", ids.gather(planned["source"]), dtype=pl.String),
        pl.Series("target_page_id", ids.gather(planned["target"]), dtype=pl.String),
        link_ids(site, ids.gather(planned["source"]), ids.gather(planned["target"])),
        pl.Series("source_url", urls.gather(planned["source"]), dtype=pl.String),
        pl.Series("target_url", urls.gather(planned["target"]), dtype=pl.String),
        "anchor_text",
        "anchor_offset",
        "sentence",
        "score",
        "probability",
        "reason",
        "evidence",
        "placement",
        "in_navigation",
        "weak",
        "alternative_source_urls",
        "confidence",
        "confidence_note",
    )
