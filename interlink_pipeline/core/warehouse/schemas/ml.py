"""The models' tables: embeddings and their cache, similar pages and the search's state, topic clusters,
the fitted link rankers."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from interlink_pipeline.core.warehouse.schemas.bases import (
    MD5_LENGTH,
    PAGE_ID,
    PAGE_ID_LENGTH,
    PageTable,
    PairTable,
    SiteTable,
    UnitVectors,
)


class EmbeddingCacheRow(UnitVectors, unique=("model", "text_hash")):
    """ml.embedding_cache: every text ever embedded, per model; shared by all sites and runs."""

    model: str = pa.Field(description="Model id: name@content fingerprint[/fp16] (what produced the vector).")
    text_hash: str = pa.Field(str_length=MD5_LENGTH, description="MD5 of the text.")
    dim: pl.Int32 = pa.Field(gt=0, description="Vector length.")
    vector: pl.List(pl.Float32) = pa.Field(description="Unit-norm embedding.")
    created_at: pl.Datetime = pa.Field(description="When it was embedded (UTC).")


class PageEmbedding(SiteTable, UnitVectors, unique=("site", "page_id")):
    """ml.page_embeddings: one unit-norm vector per page, of its `text`, by the configured model."""

    page_id: str = pa.Field(str_length=PAGE_ID_LENGTH, description=PAGE_ID)
    text_hash: str = pa.Field(str_length=MD5_LENGTH, description="MD5 of the page text this vector embeds.")
    model: str = pa.Field(description="Model id (name@fingerprint[/fp16]).")
    dim: pl.Int32 = pa.Field(gt=0, description="Vector length.")
    vector: pl.List(pl.Float32) = pa.Field(description="Unit-norm embedding (FLOAT[]); cosine = dot product.")


class SimilarityPair(PairTable, unique=("site", "source_page_id", "target_page_id")):
    """ml.similarity_pairs: each page's most similar pages (link candidates) and its near-duplicates."""

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


class PageNeighbours(PageTable, unique=("site", "page_id")):
    """ml.page_neighbours: each page's nearest pages at the last exact search, kept so that the next search
    scores only the changed and added pages (the search's state, not a result: use ml.similarity_pairs)."""

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


class PageCluster(PageTable, unique=("site", "page_id")):
    """ml.page_clusters: the topic cluster of every page."""

    cluster_id: pl.Int32 = pa.Field(ge=0, description="The page's cluster (see ml.clusters).")
    distance: pl.Float32 = pa.Field(ge=0, le=2, description="Cosine distance to the cluster's centroid.")
    is_representative: bool = pa.Field(description="The page closest to its cluster's centroid.")
    text_hash: str = pa.Field(
        nullable=True, description="MD5 of the page text it was clustered by (the next run compares it)."
    )


class Cluster(SiteTable, unique=("site", "cluster_id")):
    """ml.clusters: named topic clusters of a site."""

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


class LinkRankerRun(SiteTable, unique=("site", "run_id")):
    """ml.link_ranker_runs: one row per fitted link ranker: which model, why, and how it validated."""

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
