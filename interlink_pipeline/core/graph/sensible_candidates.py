"""The candidates a plan may use: sense before any score. None into a page of a shared name outside the
source's own branch (same_name.py). Two kinds only where the source's text names the target in a sentence
that can take the link: those into a broad page (broad_targets.py), and those whose one evidence is that
the text names the target — a name in a bibliography line or inside a longer name is no evidence at all,
and would become a related-links entry nothing supports. And, on a site whose links are known, a topical
link goes in the source's related links only where the site's own structure ties the two pages (they
share linked neighbours, the `graph` signal, or the URL tree puts them together) and the target's page
does not leave the source out: it links back to the source, or to none of the pages that link to it
(returns_or_silent). A page the text makes similar but the editors' links never bring near is no entry a
reader of the source looks for (a technique's page listing one engine of hundreds that use it), nor is a
sibling whose page links back to its related pages but not to the source (two of one maker's machines,
two render hooks): the list they share is where a reader finds it. Elsewhere it needs a sentence."""

from __future__ import annotations

import numpy as np
import polars as pl

from interlink_pipeline.core.graph.anchors import placed_mentions
from interlink_pipeline.core.graph.broad_targets import broad_pages
from interlink_pipeline.core.graph.link_evidence import SITE_TIES, TEXT_EVIDENCE
from interlink_pipeline.core.graph.mention_sense import MentionSense
from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.graph.same_name import outside_branch
from interlink_pipeline.core.relevance.url_tree import UrlTree


def sensible_candidates(
    pages: pl.DataFrame,
    tree: UrlTree,
    name_groups: np.ndarray,
    cluster_of: np.ndarray,
    candidates: pl.DataFrame,
    existing: pl.DataFrame,
    options: PlanOptions,
    sense: MentionSense,
    links_known: bool,
) -> pl.DataFrame:
    """`candidates` (source, target page indices, probability, mention_offset, mention_words) less those a
    plan may not use (see the module's docstring), with `needs_sentence`: whether the link may only go in
    the source's text (its anchor placed in a sentence, never a related-links entry); `existing`: the
    site's links (source, target, content), which with the likely candidates say which pages are broad;
    `sense`: whether a phrase of the source's text means the target; and `tied` (see the module's
    docstring; `links_known`: whether the site's links are known from an All Inlinks export)."""
    far = outside_branch(tree, name_groups, candidates["source"].to_numpy(), candidates["target"].to_numpy())
    linkers = pl.concat(
        [
            existing.filter("content").select("source", "target"),
            candidates.filter(pl.col("probability") >= options.min_probability).select("source", "target"),
        ]
    )
    broad = broad_pages(cluster_of, linkers)[candidates["target"].to_numpy()]
    origins = candidates["origins"]
    named_only = origins.str.contains("mention") & ~origins.str.contains(TEXT_EVIDENCE)
    in_text_only = broad | named_only.fill_null(False).to_numpy()
    # masks over the site's candidates, each kept row copied once
    asked = candidates.filter(pl.Series(~far & in_text_only))
    named = placed_mentions(
        pages,
        asked.select(
            "source", "target", pl.col("probability").alias("score"), pl.lit("contextual").alias("placement")
        ),
        asked,
        sense,
        None,  # its sentence is judged once the link is planned (plan_rows.placed_links)
    ).filter(pl.col("mention_text").is_not_null())
    placed = asked.join(named.select("source", "target"), on=["source", "target"])
    usable = pl.concat(
        [
            candidates.filter(pl.Series(~far & ~in_text_only)).with_columns(
                pl.lit(False).alias("needs_sentence")
            ),
            placed.with_columns(pl.lit(True).alias("needs_sentence")),
        ]
    )
    if not links_known:
        return usable.with_columns(pl.lit(True).alias("tied"))
    ties = usable["origins"].str.contains(SITE_TIES) & returns_or_silent(usable, existing)
    return usable.with_columns(ties.alias("tied"))


def returns_or_silent(pairs: pl.DataFrame, existing: pl.DataFrame) -> pl.Series:
    """For each pair (source, target), whether its target's page links back to the source in its content,
    or returns no in-content link at all (it links to none of the pages that link to it): a silent page's
    silence about the source says nothing (a floor plan's page that lists no home built on it), where a
    page that links back to the pages it is related to but not to this source was written without it."""
    content = existing.filter("content").select("source", "target").unique()
    back = content.select(pl.col("target").alias("source"), pl.col("source").alias("target"))
    returners = content.join(back, on=["source", "target"], how="semi")["target"].unique()
    joined = pairs.select("source", "target").join(
        back.with_columns(pl.lit(True).alias("back")),
        on=["source", "target"],
        how="left",
        maintain_order="left",
    )
    return (joined["back"].fill_null(False) | ~joined["target"].is_in(returners.implode())).alias("returns")
