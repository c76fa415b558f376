"""The code location: one Definitions object (`dagster dev` / `dg dev` load `defs`)."""

from __future__ import annotations

from dagster import Definitions

from interlink_pipeline.core.ingest.inbox import default_inbox
from interlink_pipeline.core.warehouse.database import default_warehouse
from interlink_pipeline.defs.automation import (
    FailureAlerts,
    run_failure_recorder,
    run_failures,
    serp_refresh_job,
    serp_refresh_schedule,
)
from interlink_pipeline.defs.backtest import link_backtest
from interlink_pipeline.defs.crawl import pages, raw_crawl, raw_links, raw_page_text
from interlink_pipeline.defs.embeddings import Embedder, default_embedder, page_embeddings
from interlink_pipeline.defs.jobs import site_pipeline_job
from interlink_pipeline.defs.link_plan import link_plan
from interlink_pipeline.defs.maintenance import lake_maintenance, lake_maintenance_schedule
from interlink_pipeline.defs.marts import (
    DBT_EXECUTABLE,
    EnvironmentDbt,
    analyst_snapshot,
    dbt_project,
    marts,
)
from interlink_pipeline.defs.pool_wait import sleep_between_claims
from interlink_pipeline.defs.relevance import CandidateSettings, link_candidates, link_ranker
from interlink_pipeline.defs.reports import html_report, published_files, spreadsheet_exports
from interlink_pipeline.defs.resources import CrawlInbox, Warehouse
from interlink_pipeline.defs.sensors import crawl_inbox_sensor
from interlink_pipeline.defs.serp import SerpApi, default_serp_api, serp_results
from interlink_pipeline.defs.similarity import similarity_pairs, topic_clusters

# Every process that runs the pipeline's steps loads this module: runs waiting for the writer pool sleep.
sleep_between_claims()


def build_defs(
    duckdb_path: str | None = None,
    inbox_root: str | None = None,
    embedder: Embedder | None = None,
    serp_api: SerpApi | None = None,
) -> Definitions:
    """Definitions over a given warehouse file, drop folder and model (defaults: env vars, then data/)."""
    return Definitions(
        assets=[
            raw_crawl,
            raw_links,
            raw_page_text,
            pages,
            page_embeddings,
            similarity_pairs,
            topic_clusters,
            serp_results,
            link_ranker,
            link_candidates,
            link_plan,
            link_backtest,
            marts,
            analyst_snapshot,
            spreadsheet_exports,
            html_report,
            published_files,
            run_failures,
        ],
        jobs=[site_pipeline_job, serp_refresh_job, lake_maintenance],
        schedules=[serp_refresh_schedule, lake_maintenance_schedule],
        sensors=[crawl_inbox_sensor, run_failure_recorder],
        resources={
            "warehouse": Warehouse(path=duckdb_path or default_warehouse()),
            "inbox": CrawlInbox(root=inbox_root or default_inbox()),
            "embedder": embedder or default_embedder(),
            "serp_api": serp_api or default_serp_api(),
            "candidate_settings": CandidateSettings(),
            "alerts": FailureAlerts(),
            "dbt": EnvironmentDbt(project_dir=dbt_project, dbt_executable=DBT_EXECUTABLE),
        },
    )


defs = build_defs()
