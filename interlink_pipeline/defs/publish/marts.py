"""marts: the dbt project's models, downstream of the pipeline's tables, and the analysts' snapshot."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    AssetSpec,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
)
from dagster_dbt import (
    DagsterDbtTranslator,
    DbtCliResource,
    DbtProject,
    DbtProjectPreparer,
    dbt_assets,
)
from dagster_shared.record import replace
from packaging.version import Version

from interlink_pipeline.core.environment import WAREHOUSE_ENV, environment
from interlink_pipeline.core.warehouse import lake
from interlink_pipeline.core.warehouse.database import connect, files_folder
from interlink_pipeline.core.warehouse.schemas import TABLES
from interlink_pipeline.core.warehouse.snapshot import SNAPSHOT_SKIPS, publish_snapshot, staged_snapshot
from interlink_pipeline.defs.groups import DBT_STAGING, MARTS, PUBLISH
from interlink_pipeline.defs.partitions import site_key, site_partitions
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.tables import WRITER_POOL, table_key
from interlink_pipeline.defs.writes import readable, user_errors

DBT_DIR = Path(__file__).resolve().parents[3] / "dbt"
# dbt from this interpreter's environment (the venv need not be activated), else from PATH
_venv_dbt = Path(sys.executable).with_name("dbt")
PARTIAL_PARSE = "partial_parse.msgpack"  # where dbt keeps its parse of the project, in its target folder
# how analysts query what a run wrote: read-only, in DuckDB's safe mode (core/warehouse/analyst_shell.py)
QUERY_IT = '`interlink sql`, or one query: `interlink sql --csv "SELECT …" > result.csv`'
DBT_EXECUTABLE = str(_venv_dbt) if _venv_dbt.exists() else (shutil.which("dbt") or "dbt")


class EnvironmentDbt(DbtCliResource):
    """dbt from this environment, without two things dagster-dbt does before every invocation that the
    marts never use (6 s of a 20 s marts step on a small site): a `dbt --version` process (the version is
    the installed dbt-core's when DBT_EXECUTABLE is this environment's dbt) and a dbt adapter opened in
    this process (it serves row counts and column metadata, which the marts do not fetch)."""

    @cached_property
    def _cli_version(self) -> Version:
        if self.dbt_executable == str(_venv_dbt):
            return Version(metadata.version("dbt-core"))
        return DbtCliResource._cli_version.func(self)

    def _initialize_dbt_core_adapter(self, args: Sequence[str]) -> None:
        return None


class EnvironmentDbtPreparer(DbtProjectPreparer):
    """Parses the project under `dg dev` (so model edits show on reload) with this environment's dbt:
    dagster-dbt's default preparer runs `dbt` from PATH, which fails when the venv is not activated."""

    def prepare_if_dev(self, project: DbtProject) -> None:
        if self.using_dagster_dev():
            self.prepare(project)

    def prepare(self, project: DbtProject) -> None:
        folders = ["--project-dir", str(project.project_dir), "--profiles-dir", str(project.profiles_dir)]
        subprocess.run(
            [DBT_EXECUTABLE, "parse", "--quiet", *folders, "--target-path", str(project.target_path)],
            check=True,
            capture_output=True,
        )


dbt_project = replace(
    DbtProject(project_dir=DBT_DIR, profiles_dir=DBT_DIR), preparer=EnvironmentDbtPreparer()
)
dbt_project.prepare_if_dev()
if not dbt_project.manifest_path.exists():
    raise FileNotFoundError(
        f"{dbt_project.manifest_path} is missing: the dbt manifest is prepared at install time (and under "
        "`dg dev`). Run `make install` (or `dbt parse --project-dir dbt --profiles-dir dbt`)."
    )


class PipelineTables(DagsterDbtTranslator):
    """dbt sources are the pipeline's tables, each its own asset (schema/name), so the lineage runs from
    the crawl to the marts; models go in the `staging` or `marts` group by their folder, described by
    their description in the dbt schema (the SQL is on the asset's Definition tab, not in the catalogue)."""

    def get_asset_spec(self, manifest: Mapping[str, Any], unique_id: str, project: Any) -> AssetSpec:
        spec = super().get_asset_spec(manifest, unique_id, project)
        source = manifest["sources"].get(unique_id)
        if source is None:
            model = manifest["nodes"][unique_id]
            group = DBT_STAGING if model["path"].startswith("staging/") else MARTS
            described = model["description"] or f"dbt model {model['name']} (no description in its schema)."
            sql = MetadataValue.md(f"```sql\n{model['raw_code'].strip()}\n```")
            return spec.replace_attributes(description=described, **group.attributes()).merge_attributes(
                metadata={"sql": sql}
            )
        table = f"{source['schema']}.{source['name']}"
        if table not in TABLES:
            raise KeyError(f"dbt source {table} is not a warehouse table ({sorted(TABLES)})")
        return spec.replace_attributes(key=table_key(table))

    def get_asset_check_spec(
        self, asset_spec: AssetSpec, manifest: Mapping[str, Any], unique_id: str, project: Any
    ) -> AssetCheckSpec | None:
        """dbt tests are checked per site, like the marts they test."""
        spec = super().get_asset_check_spec(asset_spec, manifest, unique_id, project)
        return spec and spec._replace(partitions_def=site_partitions)


@dbt_assets(
    manifest=dbt_project.manifest_path,
    project=dbt_project,
    dagster_dbt_translator=PipelineTables(),
    partitions_def=site_partitions,
    pool=WRITER_POOL,
)
def marts(context: AssetExecutionContext, dbt: DbtCliResource, warehouse: Warehouse):
    """`dbt build` for the run's site: its rows in every mart are replaced, the dbt tests run as checks
    (per site: executed on their own from the UI, they test the chosen site's rows)."""
    with user_errors():
        site = site_key(context)
    if lake.is_lake(warehouse.path):
        # the profile's lake target attaches $INTERLINK_WAREHOUSE (from the environment: its password, if
        # any, stays out of dbt's logged arguments); the marts' delete+insert of one site's rows would
        # conflict with another site's at commit, so sites take turns (a build takes seconds)
        if environment().warehouse != warehouse.path:
            raise Failure(
                f"dbt builds the marts in the lake named by ${WAREHOUSE_ENV}, which is not the warehouse "
                f"resource's lake ({lake.describe(warehouse.path)}): set {WAREHOUSE_ENV} to it.",
                allow_retries=False,
            )
        arguments = ["build", "--target", "lake", "--vars", json.dumps({"site": site})]
        turn = lake.table_locks(warehouse.path, [lake.MARTS_LOCK])
    else:  # the profile's path: the same file as the assets
        dbt_vars = {"site": site, "duckdb_path": str(Path(warehouse.path).resolve())}
        arguments, turn = ["build", "--vars", json.dumps(dbt_vars)], nullcontext()
    # dbt parses the whole project again when the vars differ from its last parse's (another site's): the
    # parse of the last build with these arguments is kept beside the warehouse for the next (a build of
    # the sample: 12 s with a whole parse, 7 s with it)
    parses = files_folder(warehouse.path) / "dbt_parse"
    parses.mkdir(parents=True, exist_ok=True)
    parsed = parses / hashlib.sha256(json.dumps(arguments).encode()).hexdigest()[:16]
    target = Path(tempfile.mkdtemp(prefix="target-", dir=parses))
    try:
        if parsed.exists():
            shutil.copyfile(parsed, target / PARTIAL_PARSE)
        with turn:
            yield from dbt.cli(arguments, context=context, target_path=target).stream()
        if (target / PARTIAL_PARSE).exists():
            os.replace(target / PARTIAL_PARSE, parsed)
    finally:  # the rest of the folder (about 3 MB) nothing reads once its events are in
        shutil.rmtree(target, ignore_errors=True)


def after_marts(kinds: set[str], description: str, tables: tuple[str, ...] = ()):
    """A per-site asset of what a run publishes, made from the marts (and the pipeline's `tables`) once
    they are built (in the writer pool of a file: it reads the file)."""
    return asset(
        partitions_def=site_partitions,
        **PUBLISH.attributes(),
        kinds=kinds,
        pool=WRITER_POOL,
        deps=[marts, *map(table_key, tables)],
        description=description,
    )


@after_marts(
    {"duckdb"},
    "A read-only copy of the warehouse (vectors and caches left out), published with the run's files "
    "when the run succeeds: analysts query it while runs write, and never block a run. A lake needs no "
    "copy: analysts attach it read-only, and this records the lake snapshot that holds the run's tables "
    "(time travel).",
    # the backtest is measured after the plan is published: published_measurement copies the file again
    tables=tuple(table for table in TABLES if table not in SNAPSHOT_SKIPS | {"graph.backtest_runs"}),
)
def analyst_snapshot(context: AssetExecutionContext, warehouse: Warehouse) -> MaterializeResult:
    started = time.monotonic()
    with user_errors():
        site_key(context)
        if lake.is_lake(warehouse.path):
            with connect(warehouse.path, read_only=True) as con:
                version = lake.current_snapshot(con)
            context.log.info(f"the run's tables are in lake snapshot {version}")
            attach = lake.analyst_commands(warehouse.path)
            as_of = attach.replace("(READ_ONLY)", f"(READ_ONLY, SNAPSHOT_VERSION {version})")
            return MaterializeResult(
                metadata={
                    "lake_snapshot": version,
                    "query_it": MetadataValue.md(QUERY_IT),
                    "as_of_this_run": MetadataValue.md(
                        f'`duckdb -no-init -cmd "{as_of}" -cmd ".safe_mode on"`'
                    ),
                }
            )
        path = warehouse.analyst_snapshot().resolve()
        staged = staged_snapshot(path, context.run.run_id)
        copied = publish_snapshot(warehouse.path, staged, lock_timeout_s=warehouse.lock_timeout_s)
    context.log.info(f"copied {len(copied)} tables for {path} (published with the run's files)")
    return MaterializeResult(
        metadata=readable(
            {
                "path": MetadataValue.path(str(path)),
                "size_mb": staged.stat().st_size / 2**20,
                "tables": MetadataValue.json(copied),
                "query_it": MetadataValue.md(QUERY_IT),
                "seconds": time.monotonic() - started,
            }
        )
    )
