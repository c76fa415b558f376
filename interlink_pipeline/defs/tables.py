"""What every table-writing asset shares: table metadata, schema checks, and the validated write."""

import dataclasses
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Failure,
    FloatMetadataValue,
    JsonMetadataValue,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableSchema,
    multi_asset,
)

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.invariants import Invariant
from interlink_pipeline.core.numbers import for_people, significant
from interlink_pipeline.core.publish.previews import markdown_table
from interlink_pipeline.core.warehouse import lake
from interlink_pipeline.core.warehouse.contract import (
    NO_FAILURES,
    ContractError,
    ValidationReport,
    duckdb_type,
    table_columns,
    table_description,
)
from interlink_pipeline.core.warehouse.database import default_warehouse
from interlink_pipeline.core.warehouse.store import RowChanges, merge_rows
from interlink_pipeline.defs.partitions import site_partitions

WRITER_POOL = "duckdb_writer"


def writer_pool() -> str | None:
    """The pool every writing step joins: a DuckDB file takes one writer at a time (the pool's limit of 1);
    a DuckLake takes many, so its steps join none, and a site's steps still take turns (one run per site)."""
    return None if lake.is_lake(default_warehouse()) else WRITER_POOL


def table_key(table: str) -> AssetKey:
    """A table's asset key: its schema and name (`graph.link_plan` -> graph/link_plan), as dbt's sources
    name it."""
    return AssetKey(table.split("."))


def check_name(table: str) -> str:
    return table.replace(".", "_") + "_schema"


def schema_check(table: str) -> AssetCheckSpec:
    """The table's pandera schema, validated before anything is written. Checks are per site (partitioned
    like their asset): one site's failure leaves the other sites' checks green."""
    return AssetCheckSpec(
        check_name(table),
        asset=table_key(table),
        blocking=True,
        partitions_def=site_partitions,
        description=f"{table} matches its pandera schema (types, nulls, ranges, keys); checked before "
        "the write, so a failing frame is never stored.",
    )


def table_spec(table: str, group: str, kinds: Collection[str], deps: Sequence[str]) -> AssetSpec:
    """The table as the UI shows it: its own key, description, column schema and upstream tables."""
    columns = [
        TableColumn(name, duckdb_type(dtype), description=description)
        for name, (dtype, description) in table_columns(table).items()
    ]
    return AssetSpec(
        table_key(table),
        group_name=group,
        kinds=set(kinds),
        deps=[table_key(upstream) for upstream in deps],
        description=table_description(table),
        metadata={"dagster/table_name": table, "dagster/column_schema": TableSchema(columns=columns)},
    )


def site_asset(
    *tables: str,
    group: str,
    deps: Sequence[str] = (),
    kinds: Collection[str] = frozenset({"duckdb", "polars"}),
    invariants: Mapping[str, str] | None = None,
) -> Callable[[Callable[..., Any]], AssetsDefinition]:
    """A per-site step that writes `tables`, each its own asset (key, schema, checks), from the tables it
    reads (`deps`): partitioned by site, in the writer pool (of a file), one schema check per table plus
    `invariants` ({check name: description}) that the step computes itself, on its first table. The op keeps
    the step's name: run config stays `ops: {name: ...}`."""
    own_checks = [
        # blocking: an ERROR failure stops what depends on the asset; a WARN failure never does
        AssetCheckSpec(
            name, asset=table_key(tables[0]), description=text, blocking=True, partitions_def=site_partitions
        )
        for name, text in (invariants or {}).items()
    ]

    def decorate(fn: Callable[..., Any]) -> AssetsDefinition:
        return multi_asset(
            name=fn.__name__,
            specs=[table_spec(table, group, kinds, deps) for table in tables],
            partitions_def=site_partitions,
            pool=writer_pool(),
            check_specs=[schema_check(table) for table in tables] + own_checks,
            description=fn.__doc__,
        )(fn)

    return decorate


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn InputError (bad file, config or key) into a Dagster Failure with just the message."""
    try:
        yield
    except InputError as exc:
        raise Failure(description=str(exc), allow_retries=False) from None


def with_site(rows: pl.DataFrame | RowChanges, site: str) -> pl.DataFrame | RowChanges:
    """A table's rows (or a patch's rows) as stored: with the site as their first column."""
    if isinstance(rows, RowChanges):
        return dataclasses.replace(rows, upserted=with_site(rows.upserted, site))
    return rows.select(pl.lit(site).alias("site"), pl.all())


def persist(
    context: AssetExecutionContext,
    warehouse: Any,
    site: str,
    frames: Mapping[str, pl.DataFrame | RowChanges],
    metadata: dict[str, Any],
    started: float,
    invariants: Sequence[AssetCheckResult] = (),
) -> Iterator[AssetCheckResult | MaterializeResult]:
    """Validate and write `frames` (or patches) for `site`; yield check results and the materialisation.

    `invariants` are the asset's own checks, computed on the frames: if one fails with ERROR severity,
    nothing is written; WARN results (e.g. a constraint that cannot be met) are recorded with the write.
    """
    broken = [c for c in invariants if not c.passed and c.severity == AssetCheckSeverity.ERROR]
    if broken:
        yield from targeted(context, invariants)
        names = ", ".join(check.check_name for check in broken)
        raise Failure(
            description=f"nothing was written for {site}: invariant check(s) failed: {names}",
            allow_retries=False,
        )
    try:
        with user_errors():  # a full disk or a read-only file is the user's to fix
            reports = warehouse.replace_site_rows(site, dict(frames))
    except ContractError as exc:
        yield from failed_checks(site, exc)
    yield from materialized(context, site, reports, metadata, started, invariants)


def record_run(
    context: AssetExecutionContext,
    warehouse: Any,
    site: str,
    table: str,
    row: pl.DataFrame,
    metadata: dict[str, Any],
    started: float,
) -> Iterator[AssetCheckResult | MaterializeResult]:
    """Append this run's row to a run-history table (keyed by site and run id; earlier runs stay)."""
    try:
        with user_errors():
            merge_rows(warehouse.path, table, row, key=["site", "run_id"], replace=True)
    except ContractError as exc:
        yield from failed_checks(site, exc)
    stored = warehouse.query(f"SELECT count(*) AS n FROM {table} WHERE site = ?", [site])["n"][0]
    report = ValidationReport(table, row.height, NO_FAILURES, int(stored))
    yield from materialized(context, site, {table: report}, metadata, started)


def failed_checks(site: str, exc: ContractError) -> Iterator[AssetCheckResult]:
    """Record every table's check (the failing ones with their failure cases), then fail the step."""
    for report in exc.reports.values():
        yield _check_result(report)
    raise Failure(description=f"nothing was written for {site}:\n{exc}", allow_retries=False) from None


def readable(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata for people: every float (bare, a float value, or inside JSON) to 4 significant digits."""
    return {key: _readable(value) for key, value in metadata.items()}


def _readable(value: Any) -> Any:
    if isinstance(value, FloatMetadataValue) and value.value is not None:
        return MetadataValue.float(significant(value.value))
    if isinstance(value, JsonMetadataValue):
        return MetadataValue.json(for_people(value.data))
    return for_people(value)


def materialized(
    context: AssetExecutionContext,
    site: str,
    reports: Mapping[str, ValidationReport],
    metadata: dict[str, Any],
    started: float,
    invariants: Sequence[AssetCheckResult] = (),
) -> Iterator[MaterializeResult]:
    """One materialisation per table written, each with its row count, its schema check and the
    invariants declared on it; the first (the step's main table) also carries the step's metadata and
    every table's row count."""
    rows = {
        table: report.rows if report.stored_rows is None else report.stored_rows
        for table, report in reports.items()
    }
    context.log.info(f"{site}: wrote " + ", ".join(f"{t} ({n:,} rows)" for t, n in rows.items()))
    step_metadata = readable(
        {
            **{f"rows {table}": MetadataValue.int(n) for table, n in rows.items()},
            **metadata,
            "duration_s": MetadataValue.float(time.monotonic() - started),
        }
    )
    invariants = targeted(context, invariants)
    for position, (table, report) in enumerate(reports.items()):
        own = [check for check in invariants if check.asset_key == table_key(table)]
        yield MaterializeResult(
            asset_key=table_key(table),
            metadata={"dagster/row_count": rows[table], **(step_metadata if position == 0 else {})},
            check_results=[_check_result(report), *own],
        )


def check_results(invariants: Sequence[Invariant]) -> list[AssetCheckResult]:
    """The core's invariants as asset checks: a failing blocking one is an ERROR (nothing is written), a
    failing non-blocking one a WARN recorded with the write."""
    return [
        AssetCheckResult(
            check_name=invariant.name,
            passed=invariant.passed,
            severity=AssetCheckSeverity.ERROR if invariant.blocking else AssetCheckSeverity.WARN,
            metadata=readable(
                {
                    key: MetadataValue.json(value) if isinstance(value, list) else value
                    for key, value in invariant.figures.items()
                }
            ),
        )
        for invariant in invariants
    ]


def targeted(context: AssetExecutionContext, checks: Sequence[AssetCheckResult]) -> list[AssetCheckResult]:
    """The step's own check results, each naming the table its check is declared on (a step that writes
    several tables must say which one a result is for)."""
    checked_key = {spec.name: spec.asset_key for spec in context.assets_def.check_specs}
    return [check._replace(asset_key=checked_key[check.check_name]) for check in checks]


def _check_result(report: ValidationReport) -> AssetCheckResult:
    metadata: dict[str, Any] = {"rows_checked": MetadataValue.int(report.rows)}
    if not report.passed:
        metadata["failures"] = MetadataValue.md(markdown_table(report.failures, max_rows=20))
        metadata["summary"] = MetadataValue.text(report.summary())
    return AssetCheckResult(
        asset_key=table_key(report.table),
        check_name=check_name(report.table),
        passed=report.passed,
        metadata=metadata,
    )
