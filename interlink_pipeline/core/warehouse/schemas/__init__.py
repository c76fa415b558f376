"""The table contract: one pandera model per warehouse table, by the step family that computes it.

These models are the single source of truth: the DuckDB DDL and column comments, the asset checks, the
Dagster column schemas and the table reference (docs/tables.md) are all derived from them. TABLES is the
one list of every table.
"""

from __future__ import annotations

import pandera.polars as pa

from interlink_pipeline.core.warehouse.schemas.candidates import CandidatePage, LinkCandidate
from interlink_pipeline.core.warehouse.schemas.graph import (
    BacktestRun,
    LinkDecision,
    LinkPlanChange,
    LiveLink,
    PageMetrics,
    PlannedLink,
    SiteMetrics,
)
from interlink_pipeline.core.warehouse.schemas.ingest import (
    ExcludedPage,
    Page,
    RawCrawlLink,
    RawCrawlPage,
    RawPageText,
    RawSearchConsole,
)
from interlink_pipeline.core.warehouse.schemas.ml import (
    Cluster,
    EmbeddingCacheRow,
    LinkRankerRun,
    PageCluster,
    PageEmbedding,
    PageNeighbours,
    SimilarityPair,
)
from interlink_pipeline.core.warehouse.schemas.ops import RunFailure
from interlink_pipeline.core.warehouse.schemas.serp import SerpCacheRow, SerpResult

# Warehouse table name -> model. Order is creation order and the order of docs/tables.md.
TABLES: dict[str, type[pa.DataFrameModel]] = {
    "raw.crawl_pages": RawCrawlPage,
    "raw.crawl_links": RawCrawlLink,
    "raw.page_text": RawPageText,
    "raw.search_console": RawSearchConsole,
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
    "graph.link_decisions": LinkDecision,
    "graph.link_plan": PlannedLink,
    "graph.page_metrics": PageMetrics,
    "graph.link_plan_changes": LinkPlanChange,
    "graph.live_links": LiveLink,
    "graph.site_metrics": SiteMetrics,
    "graph.backtest_runs": BacktestRun,
    "ops.run_failures": RunFailure,
}
