"""The code location: one Definitions object (`dagster dev` / `dg dev` load `defs`), gathered from the
shell's domain folders (interlink_pipeline/defs/<domain>/), with the resources the environment names."""

from __future__ import annotations

import warnings

from dagster import Definitions, PreviewWarning, load_definitions_from_package_module

from interlink_pipeline import defs as shell
from interlink_pipeline.core.environment import Environment, environment
from interlink_pipeline.core.ingest.inbox import default_inbox
from interlink_pipeline.core.warehouse.database import default_warehouse
from interlink_pipeline.defs.ml.embeddings import Embedder, default_embedder
from interlink_pipeline.defs.pool_wait import sleep_between_claims
from interlink_pipeline.defs.publish.alerts import FailureAlerts
from interlink_pipeline.defs.publish.marts import DBT_EXECUTABLE, EnvironmentDbt, dbt_project
from interlink_pipeline.defs.relevance.ranker import CandidateSettings
from interlink_pipeline.defs.resources import CrawlInbox, Warehouse
from interlink_pipeline.defs.serp.results import SerpApi, default_serp_api

# Every process that runs the pipeline's steps loads this module: runs waiting for the writer pool sleep.
sleep_between_claims()


def build_defs(
    duckdb_path: str | None = None,
    inbox_root: str | None = None,
    embedder: Embedder | None = None,
    serp_api: SerpApi | None = None,
    env: Environment | None = None,
) -> Definitions:
    """Definitions over a given warehouse, drop folder and model (defaults: the environment, then data/)."""
    env = env or environment()
    resources = {
        "warehouse": Warehouse(path=duckdb_path or default_warehouse(env)),
        "inbox": CrawlInbox(root=inbox_root or default_inbox(env)),
        "embedder": embedder or default_embedder(env),
        "serp_api": serp_api or default_serp_api(env),
        "candidate_settings": CandidateSettings(),
        "alerts": FailureAlerts(webhook_url=env.failure_webhook or ""),
        "dbt": EnvironmentDbt(project_dir=dbt_project, dbt_executable=DBT_EXECUTABLE),
    }
    with warnings.catch_warnings():  # the loader is marked preview in Dagster 1.13; the tests pin its result
        warnings.simplefilter("ignore", PreviewWarning)
        return load_definitions_from_package_module(shell, resources=resources)


defs = build_defs()
