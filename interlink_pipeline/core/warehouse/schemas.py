"""The table contract: one pandera model per warehouse table.

These models are the single source of truth: the DuckDB DDL and column comments, the asset checks, the
Dagster column schemas and the README's table reference are all derived from them.
"""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from interlink_pipeline.core.graph.plan_stability import CHANGES
from interlink_pipeline.core.graph.planner import REASONS
from interlink_pipeline.core.ingest.exclusions import EXCLUSION_REASONS

SITE = "Site key: the crawl's normalised host, e.g. www.example.com (the Dagster partition)."
PAGE_ID = "Stable page id: MD5 prefix of the page's URL key; the same URL keeps its id across crawls."


class RawCrawlPage(pa.DataFrameModel):
    """raw.crawl_pages: the crawl export as read, one row per exported URL, canonical columns."""

    site: str = pa.Field(description=SITE)
    crawl_id: str = pa.Field(
        description="Content hash (SHA-256 prefix) of the export file this row came from."
    )
    loaded_at: pl.Datetime = pa.Field(description="When the file was loaded (UTC).")
    source_file: str = pa.Field(description="File name of the export.")
    row_number: pl.Int64 = pa.Field(ge=1, description="1-based data row in the export.")
    url: str = pa.Field(description="Address as exported.")
    content_type: str = pa.Field(nullable=True, description="Content Type (old exports: Content).")
    status_code: pl.Int32 = pa.Field(nullable=True, description="HTTP status code; 0 or null = no response.")
    status: str = pa.Field(nullable=True, description="HTTP status text.")
    indexability: str = pa.Field(nullable=True, description="Indexable / Non-Indexable.")
    indexability_status: str = pa.Field(nullable=True, description="Why a URL is non-indexable.")
    title: str = pa.Field(nullable=True, description="Title 1 as exported (branding included).")
    meta_description: str = pa.Field(nullable=True, description="Meta Description 1.")
    h1: str = pa.Field(nullable=True, description="H1-1.")
    h2: str = pa.Field(nullable=True, description="H2-1.")
    canonical_url: str = pa.Field(nullable=True, description="Canonical Link Element 1.")
    meta_robots: str = pa.Field(nullable=True, description="Meta Robots 1.")
    x_robots_tag: str = pa.Field(nullable=True, description="X-Robots-Tag 1.")
    rel_next: str = pa.Field(nullable=True, description='rel="next" 1.')
    rel_prev: str = pa.Field(nullable=True, description='rel="prev" 1 (set on page 2+ of a series).')
    redirect_url: str = pa.Field(nullable=True, description="Redirect URL.")
    crawl_depth: pl.Int32 = pa.Field(
        nullable=True, ge=0, description="Crawl Depth (clicks from the start URL)."
    )
    word_count: pl.Int32 = pa.Field(nullable=True, ge=0, description="Word Count.")
    unique_inlinks: pl.Int32 = pa.Field(nullable=True, ge=0, description="Unique Inlinks.")
    main_query: str = pa.Field(nullable=True, description="The page's main search query, when mapped.")
    custom_text: str = pa.Field(nullable=True, description="A user-mapped text column (e.g. an extraction).")
    content_hash: str = pa.Field(
        nullable=True, description="The crawler's hash of the page's content (Hash)."
    )
    extra: str = pa.Field(nullable=True, description="JSON object of the extra_columns kept from the export.")

    class Config:
        strict = True
        unique = ["site", "row_number"]


class RawCrawlLink(pa.DataFrameModel):
    """raw.crawl_links: the All Inlinks export as read: the site's existing links."""

    site: str = pa.Field(description=SITE)
    crawl_id: str = pa.Field(description="Content hash of the inlinks export.")
    loaded_at: pl.Datetime = pa.Field(description="When the file was loaded (UTC).")
    source_file: str = pa.Field(description="File name of the export.")
    row_number: pl.Int64 = pa.Field(ge=1, description="1-based data row in the export.")
    link_type: str = pa.Field(nullable=True, description="Type: Hyperlink, Canonical, Image, JavaScript, …")
    source_url: str = pa.Field(description="Source: the page holding the link.")
    target_url: str = pa.Field(description="Destination: the page linked to.")
    anchor: str = pa.Field(nullable=True, description="Anchor text.")
    alt_text: str = pa.Field(nullable=True, description="Alt text (image links).")
    status_code: pl.Int32 = pa.Field(nullable=True, description="Status code of the destination.")
    follow: bool = pa.Field(description="Whether the link is followed (missing Follow column: true).")
    rel: str = pa.Field(nullable=True, description="rel attribute.")
    link_position: str = pa.Field(
        nullable=True, description="Header, Navigation, Content, Sidebar, Footer, Head."
    )
    link_path: str = pa.Field(nullable=True, description="XPath of the link element.")
    link_origin: str = pa.Field(nullable=True, description="HTML or Rendered HTML.")

    class Config:
        strict = True
        unique = ["site", "row_number"]


class RawPageText(pa.DataFrameModel):
    """raw.page_text: the page-text file as read (optional): each page's body text, by URL."""

    site: str = pa.Field(description=SITE)
    crawl_id: str = pa.Field(description="Content hash of the page-text file.")
    loaded_at: pl.Datetime = pa.Field(description="When the file was loaded (UTC).")
    source_file: str = pa.Field(description="File name of the page-text file.")
    row_number: pl.Int64 = pa.Field(ge=1, description="1-based data row in the file.")
    url: str = pa.Field(description="Address as given.")
    text: str = pa.Field(nullable=True, description="The page's body text.")

    class Config:
        strict = True
        unique = ["site", "row_number"]


class Page(pa.DataFrameModel):
    """staging.pages: the pages worth linking: indexable HTML 200, de-duplicated, titles de-branded."""

    site: str = pa.Field(description=SITE)
    page_id: str = pa.Field(str_length={"min_value": 16, "max_value": 16}, description=PAGE_ID)
    url: str = pa.Field(description="URL a link should point to (fragment and tracking parameters removed).")
    url_key: str = pa.Field(description="Identity key: host + path without trailing slash + sorted query.")
    crawled_url: str = pa.Field(description="Address as crawled.")
    is_home: bool = pa.Field(description="The site's home page (exactly one per site).")
    path: str = pa.Field(description="URL path.")
    section: str = pa.Field(description="First path segment ('' for the home page).")
    title: str = pa.Field(nullable=True, description="Title with the site's branding removed.")
    title_raw: str = pa.Field(nullable=True, description="Title as crawled.")
    h1: str = pa.Field(nullable=True, description="First H1.")
    meta_description: str = pa.Field(nullable=True, description="Meta description.")
    body_text: str = pa.Field(
        nullable=True,
        description="Body text, from the page-text file or a mapped custom_text column (first "
        "20,000 characters); null when the site supplies none.",
    )
    duplicate_key: str = pa.Field(
        nullable=True,
        description="Pages sharing it are near-duplicates: the crawler's content hash, else a hash of H1 + "
        "body text when there is body text; null when there is no strong evidence.",
    )
    text: str = pa.Field(str_length={"min_value": 1}, description="Text that represents the page (embedded).")
    text_source: str = pa.Field(description="Which field `text` came from (after fallbacks).")
    text_hash: str = pa.Field(str_length={"min_value": 32, "max_value": 32}, description="MD5 of `text`.")
    crawl_depth: pl.Int32 = pa.Field(nullable=True, ge=0, description="Crawl depth in the crawl.")
    word_count: pl.Int32 = pa.Field(nullable=True, ge=0, description="Word count.")
    main_query: str = pa.Field(nullable=True, description="Main query, when supplied.")
    crawl_id: str = pa.Field(description="The crawl these pages came from.")
    row_number: pl.Int64 = pa.Field(ge=1, description="Row in the crawl export.")

    class Config:
        strict = True
        unique = ["site", "page_id"]

    @pa.dataframe_check(description="exactly one home page per site")
    def one_home_page(cls, data) -> pl.LazyFrame:
        return data.lazyframe.group_by("site").agg(pl.col("is_home").sum() == 1).select(pl.col("is_home"))

    @pa.dataframe_check(description="URL keys are unique per site")
    def unique_url_key(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(~pl.struct("site", "url_key").is_duplicated())


class ExcludedPage(pa.DataFrameModel):
    """staging.excluded_pages: every crawled row not kept as a page, with the reason."""

    site: str = pa.Field(description=SITE)
    crawled_url: str = pa.Field(description="Address as crawled.")
    url_key: str = pa.Field(nullable=True, description="Identity key (null for invalid URLs).")
    reason: str = pa.Field(isin=list(EXCLUSION_REASONS), description="Why the row is not a page.")
    detail: str = pa.Field(nullable=True, description="Specifics: status, redirect or canonical target, …")
    status_code: pl.Int32 = pa.Field(nullable=True, description="HTTP status code.")
    crawl_id: str = pa.Field(description="The crawl the row came from.")
    row_number: pl.Int64 = pa.Field(ge=1, description="Row in the crawl export.")

    class Config:
        strict = True
        unique = ["site", "row_number"]


def _unit_vectors(data, tolerance: float = 1e-3) -> pl.LazyFrame:
    norm = pl.col("vector").list.eval(pl.element().cast(pl.Float64).pow(2)).list.sum().sqrt()
    return data.lazyframe.select((norm - 1).abs() <= tolerance)


def _vector_length_is_dim(data) -> pl.LazyFrame:
    return data.lazyframe.select(pl.col("vector").list.len() == pl.col("dim"))


class EmbeddingCacheRow(pa.DataFrameModel):
    """ml.embedding_cache: every text ever embedded, per model; shared by all sites and runs."""

    model: str = pa.Field(description="Model id: name@content fingerprint[/fp16] (what produced the vector).")
    text_hash: str = pa.Field(str_length={"min_value": 32, "max_value": 32}, description="MD5 of the text.")
    dim: pl.Int32 = pa.Field(gt=0, description="Vector length.")
    vector: pl.List(pl.Float32) = pa.Field(description="Unit-norm embedding.")
    created_at: pl.Datetime = pa.Field(description="When it was embedded (UTC).")

    class Config:
        strict = True
        unique = ["model", "text_hash"]

    @pa.dataframe_check(description="vectors have unit norm")
    def unit_norm(cls, data) -> pl.LazyFrame:
        return _unit_vectors(data)

    @pa.dataframe_check(description="vector length equals dim")
    def length_is_dim(cls, data) -> pl.LazyFrame:
        return _vector_length_is_dim(data)


class PageEmbedding(pa.DataFrameModel):
    """ml.page_embeddings: one unit-norm vector per page, of its `text`, by the configured model."""

    site: str = pa.Field(description=SITE)
    page_id: str = pa.Field(str_length={"min_value": 16, "max_value": 16}, description=PAGE_ID)
    text_hash: str = pa.Field(
        str_length={"min_value": 32, "max_value": 32}, description="MD5 of the page text this vector embeds."
    )
    model: str = pa.Field(description="Model id (name@fingerprint[/fp16]).")
    dim: pl.Int32 = pa.Field(gt=0, description="Vector length.")
    vector: pl.List(pl.Float32) = pa.Field(description="Unit-norm embedding (FLOAT[]); cosine = dot product.")

    class Config:
        strict = True
        unique = ["site", "page_id"]

    @pa.dataframe_check(description="vectors have unit norm")
    def unit_norm(cls, data) -> pl.LazyFrame:
        return _unit_vectors(data)

    @pa.dataframe_check(description="vector length equals dim")
    def length_is_dim(cls, data) -> pl.LazyFrame:
        return _vector_length_is_dim(data)


class SimilarityPair(pa.DataFrameModel):
    """ml.similarity_pairs: each page's most similar pages (link candidates) and its near-duplicates."""

    site: str = pa.Field(description=SITE)
    source_page_id: str = pa.Field(description="The page the link would be placed on.")
    target_page_id: str = pa.Field(description="The page it would link to.")
    score: pl.Float32 = pa.Field(
        ge=-1.0001, le=1.0001, description="Cosine similarity of the two pages' texts."
    )
    rank: pl.Int32 = pa.Field(ge=1, description="1 = the source's most similar target (within its relation).")
    relation: str = pa.Field(
        isin=["similar", "near_duplicate"],
        description="similar: a link candidate; near_duplicate: duplicate content (the pages share a "
        "duplicate_key: the crawler's content hash, or the same H1 and body text).",
    )
    reciprocal: bool = pa.Field(description="The target lists the source too (same relation).")
    method: str = pa.Field(description="exact, or ann:<index> (approximate; recall in the run's metadata).")

    class Config:
        strict = True
        unique = ["site", "source_page_id", "target_page_id"]

    @pa.dataframe_check(description="no page is paired with itself")
    def no_self_pairs(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("source_page_id") != pl.col("target_page_id"))


class PageNeighbours(pa.DataFrameModel):
    """ml.page_neighbours: each page's nearest pages at the last exact search, kept so that the next search
    scores only the changed and added pages (the search's state, not a result: use ml.similarity_pairs)."""

    site: str = pa.Field(description=SITE)
    page_id: str = pa.Field(description=PAGE_ID)
    text_hash: str = pa.Field(description="MD5 of the page text its vector embeds (a change re-searches it).")
    model: str = pa.Field(description="Model id of the vectors searched.")
    width: pl.Int32 = pa.Field(
        ge=1, description="Neighbours searched per page (candidates_per_page + a margin)."
    )
    floor: pl.Float32 = pa.Field(
        nullable=True, description="Every page scoring above it is listed (-inf: every page is listed)."
    )
    neighbour_page_ids: pl.List(pl.String) = pa.Field(description="Its nearest pages, most similar first.")
    scores: pl.List(pl.Float32) = pa.Field(description="Their cosine similarity, in the same order.")

    class Config:
        strict = True
        unique = ["site", "page_id"]


class PageCluster(pa.DataFrameModel):
    """ml.page_clusters: the topic cluster of every page."""

    site: str = pa.Field(description=SITE)
    page_id: str = pa.Field(description=PAGE_ID)
    cluster_id: pl.Int32 = pa.Field(ge=0, description="The page's cluster (see ml.clusters).")
    distance: pl.Float32 = pa.Field(ge=0, le=2, description="Cosine distance to the cluster's centroid.")
    is_representative: bool = pa.Field(description="The page closest to its cluster's centroid.")
    text_hash: str = pa.Field(
        nullable=True, description="MD5 of the page text it was clustered by (the next run compares it)."
    )

    class Config:
        strict = True
        unique = ["site", "page_id"]


class Cluster(pa.DataFrameModel):
    """ml.clusters: named topic clusters of a site."""

    site: str = pa.Field(description=SITE)
    cluster_id: pl.Int32 = pa.Field(ge=0, description="Cluster number.")
    label: str = pa.Field(
        str_length={"min_value": 1}, description="Name: its most distinctive 1-2-word phrase."
    )
    top_terms: pl.List(pl.String) = pa.Field(description="Its most distinctive phrases (class-based TF-IDF).")
    size: pl.Int32 = pa.Field(ge=1, description="Pages in the cluster.")
    cohesion: pl.Float32 = pa.Field(ge=-1, le=1.0001, description="Mean cosine of its pages to the centroid.")
    representative_page_id: str = pa.Field(description="The page closest to the centroid.")
    centroid: pl.List(pl.Float32) = pa.Field(
        nullable=True, description="Unit-norm centroid of its pages' vectors: where the next run starts from."
    )

    class Config:
        strict = True
        unique = ["site", "cluster_id"]


class SerpCacheRow(pa.DataFrameModel):
    """serp.cache: search API answers, shared by all sites and runs, refreshed after their TTL."""

    provider: str = pa.Field(description="The search API (serper).")
    request_key: str = pa.Field(
        str_length={"min_value": 32, "max_value": 32},
        description="MD5 of the request: query, results per page, result page, country, language.",
    )
    query: str = pa.Field(description="The search string sent, e.g. 'site:www.example.com hiking boots'.")
    result_page: pl.Int32 = pa.Field(ge=1, description="Which page of results (1 = the first).")
    fetched_at: pl.Datetime = pa.Field(description="When the answer arrived (UTC).")
    results: str = pa.Field(description="JSON list of the organic results: position, link, title.")
    result_count: pl.Int32 = pa.Field(ge=0, description="Organic results in the answer.")

    class Config:
        strict = True
        unique = ["provider", "request_key"]


class SerpResult(pa.DataFrameModel):
    """serp.results: for each page's query, the search results, matched to the site's pages."""

    site: str = pa.Field(description=SITE)
    page_id: str = pa.Field(description="The page whose main query was searched.")
    query: str = pa.Field(description="The search string.")
    provider: str = pa.Field(
        isin=["serper", "local"], description="serper (Google via Serper) or local (BM25)."
    )
    rank: pl.Int32 = pa.Field(ge=1, description="Position in the results (1 = top).")
    result_url: str = pa.Field(description="The result's URL as returned.")
    result_title: str = pa.Field(nullable=True, description="The result's title as returned.")
    matched_page_id: str = pa.Field(
        nullable=True, description="The crawled page the result is (by URL key); null when it is not one."
    )
    fetched_at: pl.Datetime = pa.Field(description="When the results were fetched (UTC).")

    class Config:
        strict = True
        unique = ["site", "page_id", "rank"]


class LinkCandidate(pa.DataFrameModel):
    """ml.link_candidates: every pair some signal proposes, with each signal's score and the ranker's
    probability that the site's editors would link it; existing in-content links are not candidates."""

    site: str = pa.Field(description=SITE)
    source_page_id: str = pa.Field(description="The page the link would be placed on.")
    target_page_id: str = pa.Field(description="The page it would link to.")
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

    class Config:
        strict = True
        unique = ["site", "source_page_id", "target_page_id"]

    @pa.dataframe_check(description="no page is a candidate for itself")
    def no_self_links(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("source_page_id") != pl.col("target_page_id"))


class CandidatePage(pa.DataFrameModel):
    """ml.candidate_pages: per page, what its candidate pairs read of it at the last build, so that the next
    build after a re-crawl recomputes only the pairs of pages that changed (the build's state)."""

    site: str = pa.Field(description=SITE)
    page_id: str = pa.Field(description=PAGE_ID)
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

    class Config:
        strict = True
        unique = ["site", "page_id"]


class LinkRankerRun(pa.DataFrameModel):
    """ml.link_ranker_runs: one row per fitted link ranker: which model, why, and how it validated."""

    site: str = pa.Field(description=SITE)
    run_id: str = pa.Field(description="Dagster run id.")
    trained_at: pl.Datetime = pa.Field(description="When it was fitted (UTC).")
    model: str = pa.Field(
        isin=["gradient_boosting", "logistic", "default"], description="The model kind chosen."
    )
    reason: str = pa.Field(description="Why: the cross-validated figures, or why the default weights.")
    positive_examples: pl.Int32 = pa.Field(ge=0, description="In-content links found among the candidates.")
    examples: pl.Int64 = pa.Field(ge=0, description="Training examples (candidate pairs).")
    validation: str = pa.Field(
        description="JSON: cross-validated average precision, precision@k and recall@k per model."
    )
    feature_weights: str = pa.Field(description="JSON: each feature's share of the model's weight.")
    settings: str = pa.Field(description="JSON: the ranker settings.")
    model_path: str = pa.Field(description="The fitted model's file (joblib).")
    fitted_in_run: str = pa.Field(
        description="The run that fitted the model: this run, or an earlier one whose model was reused."
    )
    inputs_fingerprint: str = pa.Field(
        description="SHA-256 of the pages, texts, links, SERP, topics and settings it was fitted on."
    )

    class Config:
        strict = True
        unique = ["site", "run_id"]


class PlannedLink(pa.DataFrameModel):
    """graph.link_plan: the links to add, each with its anchor text, score and reason."""

    site: str = pa.Field(description=SITE)
    source_page_id: str = pa.Field(description="The page to place the link on.")
    target_page_id: str = pa.Field(description="The page to link to.")
    source_url: str = pa.Field(description="URL of the page to place the link on.")
    target_url: str = pa.Field(description="URL to link to.")
    anchor_text: str = pa.Field(
        str_length={"min_value": 1},
        description="Suggested anchor text: a phrase the source's text already uses for the target, else a "
        "whole phrase of the target's H1 or title; no anchor text points at more than anchor_max_targets "
        "pages.",
    )
    anchor_offset: pl.Int32 = pa.Field(
        nullable=True,
        ge=0,
        description="Character offset of the anchor in the source page's body text (its meta description "
        "when it has none), when the anchor is a phrase already there: the link goes in place.",
    )
    score: pl.Float32 = pa.Field(
        description="Evidence strength: the ranker's probability for candidates, the cosine for a similar "
        "page found by vector search, the centrality for hubs."
    )
    probability: pl.Float32 = pa.Field(
        nullable=True,
        ge=0,
        le=1,
        description="The ranker's probability that the site's editors would link the pair (null for a pair "
        "no signal proposed: hubs and structural links from the nearest page by vector search).",
    )
    reason: str = pa.Field(
        isin=list(REASONS),
        description="hub, section, topical, orphan-rescue, component-bridge or depth-shortcut (see the "
        "README).",
    )
    evidence: str = pa.Field(
        description="What proposed it: the candidate's origins ('+'-joined: similar, hierarchy, graph, "
        "mention, serp, listing, menu), 'semantic' (vector search), 'centrality' (hubs) or 'menu' "
        "(sections)."
    )
    placement: str = pa.Field(
        isin=["home", "contextual"], description="home: on the home page; contextual: in-content."
    )

    class Config:
        strict = True
        unique = ["site", "source_page_id", "target_page_id"]

    @pa.dataframe_check(description="no page links to itself")
    def no_self_links(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("source_page_id") != pl.col("target_page_id"))


class PageMetrics(pa.DataFrameModel):
    """graph.page_metrics: each page before (existing links, when known) and after the plan."""

    site: str = pa.Field(description=SITE)
    page_id: str = pa.Field(description=PAGE_ID)
    url: str = pa.Field(description="The page's URL.")
    cluster_id: pl.Int32 = pa.Field(nullable=True, description="Its topic cluster.")
    betweenness: pl.Float64 = pa.Field(ge=0, description="Betweenness centrality in the relatedness graph.")
    inlink_quota: pl.Int32 = pa.Field(
        ge=0, description="In-content in-links the plan fills up to (grows with centrality rank)."
    )
    is_hub: bool = pa.Field(
        description="A hub: linked from the home page's content, in the crawl or by the plan."
    )
    depth_before: pl.Int32 = pa.Field(
        nullable=True,
        ge=0,
        description="Clicks from home; null when no path reaches the page (or no links export: unknown).",
    )
    depth_after: pl.Int32 = pa.Field(
        nullable=True, ge=0, description="Clicks from home with the plan; null when no path reaches the page."
    )
    inlinks_before: pl.Int32 = pa.Field(
        nullable=True, ge=0, description="In-links from other pages (null: unknown)."
    )
    inlinks_after: pl.Int32 = pa.Field(ge=0, description="In-links with the plan.")
    outlinks_before: pl.Int32 = pa.Field(nullable=True, ge=0, description="Out-links to other pages.")
    outlinks_after: pl.Int32 = pa.Field(ge=0, description="Out-links with the plan.")
    pagerank_before: pl.Float64 = pa.Field(nullable=True, ge=0, description="Internal PageRank (sums to 1).")
    pagerank_after: pl.Float64 = pa.Field(ge=0, description="Internal PageRank with the plan.")
    planned_inlinks: pl.Int32 = pa.Field(ge=0, description="Links the plan adds to it.")
    planned_outlinks: pl.Int32 = pa.Field(ge=0, description="Links the plan adds on it.")
    plan_fingerprint: str = pa.Field(
        description="Hash of what the plan read of the page (URL, title, H1, meta description, text): the "
        "next plan keeps this plan's links of pages whose fingerprint is unchanged."
    )

    class Config:
        strict = True
        unique = ["site", "page_id"]


class LinkPlanChange(pa.DataFrameModel):
    """graph.link_plan_changes: how this plan differs from the site's previous one, link by link."""

    site: str = pa.Field(description=SITE)
    source_page_id: str = pa.Field(description="The page the link is (or was) placed on.")
    target_page_id: str = pa.Field(description="The page it links to.")
    source_url: str = pa.Field(description="URL of the page the link is placed on.")
    target_url: str = pa.Field(description="URL it links to.")
    reason: str = pa.Field(isin=list(REASONS), description="Why the plan holding it chose it.")
    change: str = pa.Field(
        isin=list(CHANGES),
        description="kept: in both plans; added: new in this plan; removed: in the previous plan only.",
    )
    why: str = pa.Field(
        description="still valid, planned again after a change, new in this plan, page removed, page "
        "changed: planned anew, now on the site, no link budget left on the source, no longer chosen."
    )
    computed_at: pl.Datetime = pa.Field(description="When this plan was computed (UTC).")

    class Config:
        strict = True
        unique = ["site", "source_page_id", "target_page_id"]


class SiteMetrics(pa.DataFrameModel):
    """graph.site_metrics: the site's link graph before (existing links, when known) and after the plan."""

    site: str = pa.Field(description=SITE)
    scenario: str = pa.Field(
        isin=["before", "after"], description="before: existing links; after: plus the plan."
    )
    crawl_id: str = pa.Field(description="The crawl the pages came from.")
    computed_at: pl.Datetime = pa.Field(description="When the plan was made (UTC).")
    pages: pl.Int32 = pa.Field(ge=0, description="Pages in the graph.")
    links: pl.Int64 = pa.Field(ge=0, description="Distinct page-to-page links.")
    planned_links: pl.Int32 = pa.Field(ge=0, description="Links added by the plan (0 before).")
    orphan_pages: pl.Int32 = pa.Field(ge=0, description="Pages no other page links to (home excepted).")
    unreachable_pages: pl.Int32 = pa.Field(ge=0, description="Pages with no click path from the home page.")
    max_depth: pl.Int32 = pa.Field(ge=0, description="Deepest reachable page, in clicks from home.")
    median_depth: pl.Float64 = pa.Field(ge=0, description="Median clicks from home (reachable pages).")
    share_depth_le_3: pl.Float64 = pa.Field(ge=0, le=1, description="Share of pages within 3 clicks of home.")
    share_depth_le_5: pl.Float64 = pa.Field(ge=0, le=1, description="Share of pages within 5 clicks of home.")
    inlink_gini: pl.Float64 = pa.Field(ge=0, le=1, description="Inequality of in-links (0 = even).")
    mean_outlinks: pl.Float64 = pa.Field(ge=0, description="Links per page.")
    depth_histogram: str = pa.Field(description='JSON {"0": pages, "1": pages, …, "unreachable": pages}.')

    class Config:
        strict = True
        unique = ["site", "scenario"]


class BacktestRun(pa.DataFrameModel):
    """graph.backtest_runs: one row per backtest: a seeded share of the in-content links hidden, the plan
    rebuilt without them and scored against them, next to a same-budget top-title-cosine baseline."""

    site: str = pa.Field(description=SITE)
    run_id: str = pa.Field(description="Dagster run id.")
    ran_at: pl.Datetime = pa.Field(description="When it ran (UTC).")
    crawl_id: str = pa.Field(description="The crawl it ran on.")
    seed: pl.Int64 = pa.Field(description="Seed of the hidden sample.")
    fraction: pl.Float64 = pa.Field(ge=0, le=1, description="Share of in-content link pairs hidden.")
    hidden_links: pl.Int32 = pa.Field(ge=0, description="In-content link pairs hidden.")
    settings: str = pa.Field(description="JSON: candidate, ranker and plan settings used.")
    ranker: str = pa.Field(description="The ranker fitted without the hidden links, and why.")
    plan_links: pl.Int32 = pa.Field(ge=0, description="Links in the rebuilt plan.")
    plan_precision: pl.Float64 = pa.Field(
        ge=0, le=1, description="Share of the plan's links that were hidden."
    )
    plan_recall: pl.Float64 = pa.Field(ge=0, le=1, description="Share of the hidden links in the plan.")
    baseline_precision: pl.Float64 = pa.Field(
        ge=0, le=1, description="The same for as many top-title-cosine links."
    )
    baseline_recall: pl.Float64 = pa.Field(ge=0, le=1, description="Recall of that baseline.")
    k: pl.Int32 = pa.Field(ge=1, description="The k of the candidate figures.")
    candidate_precision_at_k: pl.Float64 = pa.Field(
        ge=0, le=1, description="Precision of each source's top-k candidates (sources with a hidden link)."
    )
    candidate_recall_at_k: pl.Float64 = pa.Field(ge=0, le=1, description="Recall of those top-k lists.")
    baseline_precision_at_k: pl.Float64 = pa.Field(
        ge=0, le=1, description="Precision of each source's top-k pages by title cosine."
    )
    baseline_recall_at_k: pl.Float64 = pa.Field(ge=0, le=1, description="Recall of those lists.")
    candidate_coverage: pl.Float64 = pa.Field(
        ge=0, le=1, description="Share of the hidden links among the candidates at all."
    )
    precision_by_reason: str = pa.Field(
        description="JSON: per plan reason, links, hits, precision and mean probability."
    )
    seconds: pl.Float64 = pa.Field(ge=0, description="Time the backtest took.")
    measured_in_run: str = pa.Field(
        nullable=True,
        description="The run that measured these figures: this one, or an earlier one whose backtest still "
        "stands (the site changed by at most remeasure_above since).",
    )

    class Config:
        strict = True
        unique = ["site", "run_id"]


# Warehouse table name -> model. Order is creation order and README order.
class RunFailure(pa.DataFrameModel):
    """ops.run_failures: every failed pipeline run, as the run-failure sensor saw it."""

    run_id: str = pa.Field(unique=True, description="Dagster run id.")
    job: str = pa.Field(description="The job that failed.")
    site: str = pa.Field(nullable=True, description="The run's site (partition), when it had one.")
    failed_at: pl.Datetime = pa.Field(description="When the failure was recorded (UTC).")
    step: str = pa.Field(nullable=True, description="The step (asset) that failed first, when known.")
    message: str = pa.Field(description="The failure's message.")
    notified: bool = pa.Field(description="Whether the webhook accepted the alert.")

    class Config:
        strict = True


TABLES: dict[str, type[pa.DataFrameModel]] = {
    "raw.crawl_pages": RawCrawlPage,
    "raw.crawl_links": RawCrawlLink,
    "raw.page_text": RawPageText,
    "staging.pages": Page,
    "staging.excluded_pages": ExcludedPage,
    "ml.embedding_cache": EmbeddingCacheRow,
    "ml.page_embeddings": PageEmbedding,
    "ml.similarity_pairs": SimilarityPair,
    "ml.page_neighbours": PageNeighbours,
    "ml.page_clusters": PageCluster,
    "ml.clusters": Cluster,
    "serp.cache": SerpCacheRow,
    "serp.results": SerpResult,
    "ml.link_ranker_runs": LinkRankerRun,
    "ml.link_candidates": LinkCandidate,
    "ml.candidate_pages": CandidatePage,
    "graph.link_plan": PlannedLink,
    "graph.page_metrics": PageMetrics,
    "graph.link_plan_changes": LinkPlanChange,
    "graph.site_metrics": SiteMetrics,
    "graph.backtest_runs": BacktestRun,
    "ops.run_failures": RunFailure,
}
