"""The code location: one Definitions object (`dg dev` loads `defs`), gathered from the
shell's domain folders (interlink_pipeline/defs/<domain>/), with the resources the environment names."""

from __future__ import annotations

import warnings

from dagster import (
    AssetsDefinition,
    BetaWarning,
    Definitions,
    In,
    OpDefinition,
    Out,
    PreviewWarning,
    load_definitions_from_package_module,
)

from interlink_pipeline import defs as shell
from interlink_pipeline.core.environment import Environment, environment
from interlink_pipeline.core.ingest.inbox import default_inbox
from interlink_pipeline.core.warehouse import lake
from interlink_pipeline.core.warehouse.database import default_warehouse
from interlink_pipeline.core.warehouse.locations import check_locations, project_locations
from interlink_pipeline.defs.ml.embeddings import Embedder, default_embedder
from interlink_pipeline.defs.pool_wait import sleep_between_claims
from interlink_pipeline.defs.publish.alerts import FailureAlerts
from interlink_pipeline.defs.publish.marts import DBT_EXECUTABLE, EnvironmentDbt, dbt_project
from interlink_pipeline.defs.relevance.ranker import CandidateSettings
from interlink_pipeline.defs.resources import CrawlInbox, Warehouse
from interlink_pipeline.defs.serp.results import SerpApi, default_serp_api
from interlink_pipeline.defs.sqlite_engines import reuse_sqlite_engines

# Every process that runs the pipeline's steps loads this module: runs waiting for the writer pool sleep,
# and Dagster's SQLite storages keep their connections between statements.
sleep_between_claims()
reuse_sqlite_engines()


def build_defs(
    duckdb_path: str | None = None,
    inbox_root: str | None = None,
    embedder: Embedder | None = None,
    serp_api: SerpApi | None = None,
    env: Environment | None = None,
) -> Definitions:
    """Definitions over a given warehouse, drop folder and model (defaults: the environment, then data/);
    settings that would write one place twice are refused first (locations.py)."""
    env = env or environment()
    warehouse, inbox = duckdb_path or default_warehouse(env), inbox_root or default_inbox(env)
    check_locations(project_locations(warehouse, inbox, env=env))
    resources = {
        "warehouse": Warehouse(path=warehouse),
        "inbox": CrawlInbox(root=inbox),
        "embedder": embedder or default_embedder(env),
        "serp_api": serp_api or default_serp_api(env),
        "candidate_settings": CandidateSettings(),
        "alerts": FailureAlerts(webhook_url=env.failure_webhook or ""),
        "dbt": EnvironmentDbt(project_dir=dbt_project, dbt_executable=DBT_EXECUTABLE),
    }
    with warnings.catch_warnings():  # the loader is marked preview in Dagster 1.13; the tests pin its result
        warnings.simplefilter("ignore", PreviewWarning)
        defs = load_definitions_from_package_module(shell, resources=resources)
    return without_pool(defs) if lake.is_lake(warehouse) else defs


def without_pool(defs: Definitions) -> Definitions:
    """The definitions with every step out of its pool: a DuckLake takes many writers at once, so the
    writing steps, declared in the DuckDB file's writer pool, run as soon as their inputs are ready."""
    return Definitions(
        assets=[_out_of_pool(a) for a in defs.assets or ()],
        asset_checks=defs.asset_checks,
        jobs=defs.jobs,
        schedules=defs.schedules,
        sensors=defs.sensors,
        resources=defs.resources,
    )


def _out_of_pool(assets: object) -> object:
    if not isinstance(assets, AssetsDefinition) or not assets.is_executable or not assets.node_def.pools:
        return assets
    op = assets.node_def
    assert isinstance(op, OpDefinition), op  # every pooled step here is one op
    with (
        warnings.catch_warnings()
    ):  # `version` (the code version) is deprecated in name only; `execution_type`
        warnings.simplefilter("ignore", DeprecationWarning)  # is beta: both are passed through as they are
        warnings.simplefilter("ignore", BetaWarning)
        unpooled = OpDefinition(
            compute_fn=op.compute_fn,
            name=op.name,
            ins={i.name: In.from_definition(i) for i in op.input_defs},
            outs={o.name: Out.from_definition(o) for o in op.output_defs},
            description=op.description,
            config_schema=op.config_schema,
            required_resource_keys=op.required_resource_keys,
            tags=op.tags,
            code_version=op.version,
            retry_policy=op.retry_policy,
        )
        return AssetsDefinition(**{**assets.get_attributes_dict(), "node_def": unpooled})


defs = build_defs()
