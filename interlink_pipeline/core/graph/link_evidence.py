"""What makes a planned link one an editor would write: evidence that its two pages are about the same
thing. One rule for the planner (the last plan's links it keeps) and for the plan's own check."""

from __future__ import annotations

import re

import numpy as np
import polars as pl

from interlink_pipeline.core.frames import looked_up
from interlink_pipeline.core.warehouse.vocabularies import STRUCTURAL_REASONS

# what says two pages are about related things: their texts are near, the source names the target, a search
# for one finds the other, or the URL tree puts them together — the site's linking habits alone (graph,
# listing, menu) do not
RELATED_EVIDENCE = r"similar|mention|serp|hierarchy"
# ... of these, what relates them whatever the source's text says of the target (a related-links entry's)
TEXT_EVIDENCE = r"similar|serp|hierarchy"
# what says the site's own structure ties two pages: they share linked neighbours (Adamic–Adar), or the URL
# tree puts them together
SITE_TIES = "graph|hierarchy"
# an index page that lists pages like the target: evidence for a place in its list, not in its text
LISTING_EVIDENCE = "listing"
WEAKEST_BAR = 0.5  # the least linked quarter of pages take topical links from this share of min_probability
SECTION_INDEX = "section index"  # the evidence of a link from the target's URL parent, an index page
INDEX_ABOVE = "index above"  # ... from the index page above the target's own index, in its list
SITE_STRUCTURE = ("hub", "section")  # the home page's sections and the menu's members: the site says so


def with_shares(candidates: pl.DataFrame) -> pl.DataFrame:
    """`candidates` (source, target, score) with `share`: the pair's part of the probabilities of its
    target's candidates — how likely the source is the page that links the target, given that the target
    must be linked — and `rivals`, how many candidates the target has. Every candidate of an orphan scores
    low (nobody links it: the ranker reads that as little wanted), so a structural link is judged by the
    source's standing among the target's candidates, which the ranker's order tells, as much as by its
    probability."""
    total = pl.col("score").sum().over("target")
    return candidates.with_columns(
        pl.when(total > 0).then(pl.col("score") / total).otherwise(0.0).alias("share"),
        pl.len().over("target").alias("rivals"),
    )


def structurally_related(min_probability: float) -> pl.Expr:
    """Whether a candidate (score, share, provenance) may give its target a structural link: evidence that
    the pages are about the same thing (RELATED_EVIDENCE, or LISTING_EVIDENCE for a place in an index's
    list), and a probability of min_probability or more, or more than that share of the target's
    candidates' probabilities among enough of them for a share to stand out (1 / min_probability: among
    ten at the default, a page with more than a tenth stands above all of them being alike)."""
    return pl.col("provenance").str.contains(f"{RELATED_EVIDENCE}|{LISTING_EVIDENCE}") & standing(
        "score", min_probability
    )


def standing(probability: str, min_probability: float) -> pl.Expr:
    """A candidate's `probability` of min_probability or more, or its share (columns share and rivals)
    above it among 1 / min_probability rivals or more (see structurally_related)."""
    enough = pl.col("rivals") * min_probability >= 1
    return (pl.col(probability) >= min_probability) | (enough & (pl.col("share") > min_probability))


def related(min_probability: float) -> pl.Expr:
    """Whether a planned link has evidence that its pages are about the same thing, over the columns
    reason, evidence, placement, origins, probability, share and rivals (the pair's candidate now: null
    when none; with_shares) and source_is_parent (the source is the target's URL parent): a hub or a menu
    member; a listing in the target's own section index (or, for a top-level section, on the home page) or
    in the index above its index; or a candidate with RELATED_EVIDENCE at min_probability or more (a
    topical link at WEAKEST_BAR of it: the least linked pages take likely links from a lower bar; a
    structural link by its probability or its standing, see structurally_related), or one an index
    proposes as like what it lists (LISTING_EVIDENCE) so, in its list."""
    structural = pl.col("reason").is_in(STRUCTURAL_REASONS)
    bar = pl.when(structural).then(pl.lit(min_probability)).otherwise(pl.lit(WEAKEST_BAR * min_probability))
    likely = (pl.col("probability") >= bar) | (structural & standing("probability", min_probability))
    return (
        pl.col("reason").is_in(SITE_STRUCTURE)
        | (
            (pl.col("evidence") == SECTION_INDEX)
            & pl.col("source_is_parent")
            & pl.col("placement").is_in(["listing", "home"])
        )
        | ((pl.col("evidence") == INDEX_ABOVE) & (pl.col("placement") == "listing"))
        | (pl.col("origins").fill_null("").str.contains(RELATED_EVIDENCE) & (likely.fill_null(0.0) >= bar))
        | (
            pl.col("origins").fill_null("").str.contains(LISTING_EVIDENCE)
            & (pl.col("placement") == "listing")
            & (likely.fill_null(0.0) >= bar)
        )
    ).fill_null(False)


def in_list_only(evidence: str) -> bool:
    """Whether a structural source with this evidence may take the link only in its list (a section index,
    the index above, an index proposing it as like what it lists), not in its text."""
    return evidence in (SECTION_INDEX, INDEX_ABOVE) or not re.search(RELATED_EVIDENCE, evidence)


def with_evidence_columns(
    links: pl.DataFrame, candidates: pl.DataFrame, parent: np.ndarray | None
) -> pl.DataFrame:
    """`links` (source, target page indices, reason, evidence, placement) with the pair's candidate now
    (`candidates`: source, target, score, provenance) as probability, origins and share, and source_is_parent
    (`parent`: each page's URL parent, None when unknown)."""
    # a share is of its target's candidates alone: those of the links' targets are all it needs
    theirs = candidates.join(links.select("target"), on="target", how="semi")
    joined = looked_up(
        links.drop("probability", "origins", "share", "rivals", strict=False),
        with_shares(theirs).select(
            "source",
            "target",
            pl.col("score").alias("probability"),
            pl.col("provenance").alias("origins"),
            "share",
            "rivals",
        ),
        ["source", "target"],
    )
    parents = parent[joined["target"].to_numpy()] if parent is not None else np.full(joined.height, -1)
    return joined.with_columns(
        pl.Series("source_is_parent", parents == joined["source"].to_numpy(), dtype=pl.Boolean)
    )
