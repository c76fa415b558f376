"""similarity_pairs and topic_clusters: what each page is most like, and the site's named topics."""

import time

import numpy as np
import polars as pl
from dagster import AssetExecutionContext, MetadataValue
from pydantic import Field

from interlink_pipeline.core.ml.clusters import ClusterOptions, ClusterStats, PreviousClusters
from interlink_pipeline.core.ml.clusters import topic_clusters as topic_clusters_core
from interlink_pipeline.core.ml.invariants import (
    every_page_in_one_cluster,
    similarity_pairs_k_respected,
)
from interlink_pipeline.core.ml.model_identity import resolve_device
from interlink_pipeline.core.ml.page_embeddings import read_vectors
from interlink_pipeline.core.ml.similarity import (
    SearchStats,
    SimilarityOptions,
    similar_pairs,
)
from interlink_pipeline.core.warehouse.contract import empty_frame
from interlink_pipeline.defs.groups import ML
from interlink_pipeline.defs.partitions import site_key
from interlink_pipeline.defs.previews import table_preview
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.settings import options_from, settings_config
from interlink_pipeline.defs.tables import site_asset
from interlink_pipeline.defs.writes import check_results, persist, user_errors

SCORE_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


class SimilarityConfig(settings_config(SimilarityOptions)):
    device: str = Field(default="auto", description="Exact search on auto (CUDA when present), cpu or cuda.")


class ClustersConfig(settings_config(ClusterOptions)):
    """How pages are clustered: the settings of ClusterOptions (core/ml/clusters.py)."""


@site_asset(
    "ml.similarity_pairs",
    "ml.page_neighbours",
    group=ML,
    deps=["staging.pages", "ml.page_embeddings"],
    kinds={"duckdb", "pytorch", "faiss"},
    invariants={
        "similarity_pairs_k_respected": "No page has more than k similar targets, and no target more than "
        "max_per_target sources.",
    },
)
def similarity_pairs(context: AssetExecutionContext, config: SimilarityConfig, warehouse: Warehouse):
    """Each page's top-k most similar pages (link candidates), near-duplicates flagged, in bounded memory;
    after a re-crawl only the changed and added pages are searched (exactly the same result)."""
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        pages, vectors = read_vectors(
            warehouse.path, site, ("page_id", "path", "url", "title", "text", "duplicate_key", "text_hash")
        )
        model = warehouse.query(
            "SELECT any_value(model) AS model FROM ml.page_embeddings WHERE site = ?", [site]
        )["model"][0]
        options = options_from(config, SimilarityOptions, device=resolve_device(config.device))
        pairs, stats = similar_pairs(
            pages["page_id"],
            pages["path"],
            vectors,
            options,
            pages["duplicate_key"],
            text_hashes=pages["text_hash"],
            model=model,
            previous=warehouse.read_site("ml.page_neighbours", site),
        )
    neighbours = stats.neighbours if stats.neighbours is not None else empty_frame("ml.page_neighbours")
    pairs = pairs.with_columns(pl.lit(site).alias("site"), pl.lit(stats.method).alias("method"))
    [k_check] = check_results([similarity_pairs_k_respected(pairs, options, len(pages))])
    metadata = _search_metadata(stats, len(pages)) | _pairs_metadata(pairs, pages)
    if stats.recall_at_k is not None:  # an approximate search was made: its measured recall, kept or not
        metadata["recall_at_k"] = MetadataValue.float(stats.recall_at_k)
        metadata["recall_sample_pages"] = stats.recall_sample
        metadata["approximate_search"] = stats.details.get("fell_back", "kept")
    frames = {
        "ml.similarity_pairs": pairs,
        "ml.page_neighbours": neighbours.with_columns(pl.lit(site).alias("site")),
    }
    yield from persist(context, warehouse, site, frames, metadata, started, [k_check])


def _search_metadata(stats: SearchStats, pages: int) -> dict:
    """How the search ran: what it recomputed and what it reused."""
    increment = stats.increment
    return {
        "method": stats.method,
        "search": increment.mode if increment else "full",
        "search_why": increment.why if increment else "path-filtered searches are always full",
        "pages_searched": increment.pages_searched if increment else pages,
        "pages_reused": increment.pages_merged if increment else 0,
        "pages_changed": increment.pages_changed if increment else pages,
        "pages_removed": increment.pages_removed if increment else 0,
        "search_seconds": MetadataValue.float(stats.seconds),
    }


def _pairs_metadata(pairs: pl.DataFrame, pages: pl.DataFrame) -> dict:
    """What the pairs are: counts, coverage, score quantiles, the strongest pairs by title."""
    similar = pairs.filter(pl.col("relation") == "similar")
    titles = pages.select("page_id", "url", pl.coalesce("title", "text").alias("title"))
    covered = similar["source_page_id"].n_unique()
    quantiles = (pl.col("score").quantile(q).round(3).alias(f"p{int(q * 100)}") for q in SCORE_QUANTILES)
    return {
        "pages": len(pages),
        "similar_pairs": similar.height,
        "near_duplicate_pairs": pairs.height - similar.height,
        "pages_with_candidates": covered,
        "pages_without_candidates": len(pages) - covered,
        "reciprocal_share": MetadataValue.float(float(similar["reciprocal"].mean() or 0)),
        "score_quantiles": table_preview(similar.select(*quantiles)),
        "top_pairs": table_preview(
            _strongest(pairs, titles, "similar", 15).select(
                "source_title", "target_title", pl.col("score").round(3)
            ),
            15,
        ),
        "near_duplicates": table_preview(
            _strongest(pairs, titles, "near_duplicate", 10).select(
                "source", "target", pl.col("score").round(3)
            )
        ),
    }


def previous_clusters(warehouse: Warehouse, site: str) -> PreviousClusters | None:
    """The site's last clustering (centroids, members and names), or None before the first."""
    clusters = warehouse.read_site("ml.clusters", site).drop_nulls("centroid").sort("cluster_id")
    if clusters.is_empty() or clusters["cluster_id"].to_list() != list(range(clusters.height)):
        return None  # a clustering from before centroids were kept, or one with an empty cluster
    members = warehouse.read_site("ml.page_clusters", site, ["page_id", "cluster_id", "text_hash"])
    cohesion = float((clusters["cohesion"] * clusters["size"]).sum() / max(1, clusters["size"].sum()))
    return PreviousClusters(
        np.asarray(clusters["centroid"].to_list(), dtype=np.float32),
        members.drop_nulls("text_hash"),
        clusters.select("cluster_id", "label", "top_terms"),
        cohesion,
    )


def _strongest(pairs: pl.DataFrame, titles: pl.DataFrame, relation: str, rows: int) -> pl.DataFrame:
    """The top pairs of one relation with their pages' URLs and titles, for the UI preview (named after the
    cut: at 1M pages, naming all 24M pairs would take gigabytes)."""
    top = (
        pairs.filter(pl.col("relation") == relation)
        .top_k(rows, by=["score", "source_page_id", "target_page_id"], reverse=[False, True, True])
        .sort("score", "source_page_id", "target_page_id", descending=[True, False, False])
    )
    for side in ("source", "target"):
        names = {"page_id": f"{side}_page_id", "url": side, "title": f"{side}_title"}
        top = top.join(titles.rename(names), on=f"{side}_page_id", how="left", maintain_order="left")
    return top


@site_asset(
    "ml.clusters",
    "ml.page_clusters",
    group=ML,
    deps=["staging.pages", "ml.page_embeddings"],
    kinds={"duckdb", "scikitlearn"},
    invariants={
        "every_page_in_one_cluster": "Each page of staging.pages is in exactly one cluster, and cluster "
        "sizes add up."
    },
)
def topic_clusters(context: AssetExecutionContext, config: ClustersConfig, warehouse: Warehouse):
    """Named topic clusters: k-means on the embeddings (k by silhouette), labels by class-based TF-IDF."""
    started = time.monotonic()
    with user_errors():
        site = site_key(context)
        pages, vectors = read_vectors(warehouse.path, site, ("page_id", "url", "path", "text", "text_hash"))
        options = options_from(config, ClusterOptions)
        page_rows, cluster_rows, stats = topic_clusters_core(
            pages["page_id"],
            pages["text"],
            vectors,
            options,
            text_hashes=pages["text_hash"],
            previous=previous_clusters(warehouse, site),
            paths=pages["path"],
        )
    page_rows = page_rows.with_columns(pl.lit(site).alias("site")).join(
        pages.select("page_id", "text_hash"), on="page_id", how="left", maintain_order="left"
    )
    cluster_rows = cluster_rows.with_columns(pl.lit(site).alias("site"))
    [one_each] = check_results([every_page_in_one_cluster(page_rows, cluster_rows, len(pages))])
    metadata = _clusters_metadata(stats, cluster_rows, pages)
    frames = {"ml.clusters": cluster_rows, "ml.page_clusters": page_rows}
    yield from persist(context, warehouse, site, frames, metadata, started, [one_each])


def _clusters_metadata(stats: ClusterStats, cluster_rows: pl.DataFrame, pages: pl.DataFrame) -> dict:
    """How k was chosen, and each cluster with its label, terms and an example page."""
    representative = pages.select(
        pl.col("page_id").alias("representative_page_id"), pl.col("text").alias("example")
    )
    preview = cluster_rows.join(representative, on="representative_page_id").select(
        "cluster_id",
        "label",
        "size",
        pl.col("cohesion").round(3),
        pl.col("top_terms").list.head(5).list.join(", "),
        "example",
    )
    silhouettes = "k was configured"
    if stats.silhouette_by_k:
        by_k = {
            "k": list(stats.silhouette_by_k),
            "silhouette": [round(v, 4) for v in stats.silhouette_by_k.values()],
        }
        silhouettes = table_preview(pl.DataFrame(by_k), 20)
    return {
        "clustering": stats.mode,
        "clustering_why": stats.why,
        "labels_kept": stats.labels_kept,
        "k": stats.k,
        "k_chosen_by": stats.chosen_by,
        "language": stats.language,
        "clustering_seconds": MetadataValue.float(stats.seconds),
        "silhouette_by_k": silhouettes,
        "clusters": table_preview(preview, 60),
        "largest_cluster_share": MetadataValue.float(int(cluster_rows["size"].max()) / len(pages)),
    }
