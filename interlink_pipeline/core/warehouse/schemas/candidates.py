"""ml.link_candidates and ml.candidate_pages: every proposed pair with its features and probability, and
the per-page state that lets the next build recompute only what changed."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from interlink_pipeline.core.warehouse.schemas.bases import PageTable, PairTable


class LinkCandidate(PairTable, unique=("site", "source_page_id", "target_page_id")):
    """ml.link_candidates: every pair some signal proposes, with each signal's score and the ranker's
    probability that the site's editors would link it; existing in-content links are not candidates."""

    probability: pl.Float32 = pa.Field(
        ge=0, le=1, description="The ranker's probability that the site's editors would link the pair."
    )
    rank: pl.Int32 = pa.Field(ge=1, description="1 = the source's most probable candidate.")
    origins: str = pa.Field(
        description="The signals that proposed the pair, '+'-joined: similar, hierarchy, graph, mention, "
        "serp, listing, menu."
    )
    cos_title: pl.Float32 = pa.Field(description="Cosine of the two pages' title embeddings.")
    cos_h1: pl.Float32 = pa.Field(description="Cosine of their H1 embeddings.")
    cos_meta_description: pl.Float32 = pa.Field(
        description="Cosine of their meta-description embeddings (0 when either has none)."
    )
    cos_body: pl.Float32 = pa.Field(description="Cosine of their body-text embeddings (0 without body text).")
    cos_body_title: pl.Float32 = pa.Field(
        description="Cosine of the source's body text and the target's title."
    )
    rank_title: pl.Float32 = pa.Field(
        description="The target's rank among the source's candidates by title cosine (1 = closest)."
    )
    rank_body: pl.Float32 = pa.Field(
        description="The target's rank among the source's candidates by body cosine."
    )
    is_parent: pl.Float32 = pa.Field(description="1 when the target is the source's parent in the URL path.")
    is_child: pl.Float32 = pa.Field(
        description="1 when the target sits directly below the source in the URL path."
    )
    is_sibling: pl.Float32 = pa.Field(description="1 when both have the same parent page.")
    same_section: pl.Float32 = pa.Field(description="1 when both are in the same first path segment.")
    tree_distance: pl.Float32 = pa.Field(description="Steps between the two in the URL tree.")
    template_twin: pl.Float32 = pa.Field(
        description="1 when their paths hold the same name at the same depth below different prefixes: "
        "parts of a template in two branches (the same floor plan, or plans of same-named communities, in "
        "two cities; the same service in two cities)."
    )
    source_depth: pl.Float32 = pa.Field(description="Path segments of the source's URL.")
    target_depth: pl.Float32 = pa.Field(description="Path segments of the target's URL.")
    two_hop: pl.Float32 = pa.Field(description="In-content paths source -> page -> target.")
    cocitation: pl.Float32 = pa.Field(description="Pages linking (in content) to both.")
    coupling: pl.Float32 = pa.Field(description="Pages both link to (in content).")
    adamic_adar: pl.Float32 = pa.Field(
        description="Adamic–Adar index of the pair on the undirected in-content link graph."
    )
    reverse_link: pl.Float32 = pa.Field(
        description="1 when the target already links to the source in its content."
    )
    navigation_link: pl.Float32 = pa.Field(
        description="1 when a navigation, header or footer link joins them (either way)."
    )
    target_inlinks: pl.Float32 = pa.Field(description="log(1 + the target's in-content in-links).")
    source_outlinks: pl.Float32 = pa.Field(description="log(1 + the source's in-content out-links).")
    mention_commonness: pl.Float32 = pa.Field(
        description="How specific the best phrase of the target found in the source's text is: the "
        "share of that phrase's links (and titles) that mean this target; 0 when none is found."
    )
    mention_words: pl.Float32 = pa.Field(description="Words of that phrase.")
    mention_title: pl.Float32 = pa.Field(description="1 when the phrase is the target's title or H1.")
    serp_score: pl.Float32 = pa.Field(
        description="(depth - rank + 1) / depth of the target in the source's SERP; 0 when absent."
    )
    same_cluster: pl.Float32 = pa.Field(description="1 when both are in the same topic cluster.")
    listing_similarity: pl.Float32 = pa.Field(
        description="Mean title cosine between the target and the 3 pages most like it that the source "
        "links to in its body (a paginated listing's later pages count as its first): a page that lists "
        "pages like this one."
    )
    menu_parent: pl.Float32 = pa.Field(
        description="1 when the site's menu lists the target under the source (from the links' Link Path)."
    )
    mention_offset: pl.Int32 = pa.Field(
        nullable=True, ge=0, description="Character offset of that phrase in the source's text, when found."
    )


class CandidatePage(PageTable, unique=("site", "page_id")):
    """ml.candidate_pages: per page, what its candidate pairs read of it at the last build, so that the next
    build after a re-crawl recomputes only the pairs of pages that changed (the build's state)."""

    candidates: pl.Int32 = pa.Field(ge=0, description="Its candidate pairs as a source.")
    inputs_hash: str = pa.Field(
        description="Hash of what a pair's features read of the page: its texts, URL, parent, topic, SERP "
        "results, in-content links both ways (with the titles it links to and its link neighbours' "
        "Adamic–Adar weights), navigation links and menu children."
    )
    settings_hash: str = pa.Field(
        description="Hash of the features, candidate settings and embedding model the pairs were built with."
    )
    scored_by: str = pa.Field(
        description="The run that fitted the ranker whose probabilities the pairs carry."
    )
