"""What every table-writing step does after its core call: user errors as failures, the validated write, the
metadata and the check results a materialisation reports."""

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    Failure,
    FloatMetadataValue,
    JsonMetadataValue,
    MaterializeResult,
    MetadataValue,
)

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.files import file_problem
from interlink_pipeline.core.invariants import Invariant
from interlink_pipeline.core.numbers import for_people, significant
from interlink_pipeline.core.warehouse.contract import NO_FAILURES, ContractError, ValidationReport
from interlink_pipeline.core.warehouse.store import RowChanges, SpilledRows, merge_rows
from interlink_pipeline.defs.previews import table_preview
from interlink_pipeline.defs.tables import check_name, table_key


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn InputError (bad file, config or key) and a refused file operation (a full disk, a read-only or
    immutable folder) into a Dagster Failure with just the message."""
    try:
        yield
    except InputError as exc:
        raise Failure(description=str(exc), allow_retries=False) from None
    except OSError as exc:
        raise Failure(description=f"cannot go on: {file_problem(exc)}", allow_retries=False) from None


def with_site(
    rows: pl.DataFrame | RowChanges | SpilledRows, site: str
) -> pl.DataFrame | RowChanges | SpilledRows:
    """A table's rows as stored: with the site as their first column (spilled rows, and a patch's, got it
    as they were spilled)."""
    if isinstance(rows, SpilledRows | RowChanges):
        return rows
    return rows.select(pl.lit(site).alias("site"), pl.all())


def persist(
    context: AssetExecutionContext,
    warehouse: Any,
    site: str,
    frames: Mapping[str, pl.DataFrame | RowChanges | SpilledRows],
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
    # text, not a number: a check's plot draws every site's runs on one line
    metadata: dict[str, Any] = {"rows_checked": MetadataValue.text(f"{report.rows:,}")}
    if not report.passed:
        metadata["failures"] = table_preview(report.failures, max_rows=20)
        metadata["summary"] = MetadataValue.text(report.summary())
    return AssetCheckResult(
        asset_key=table_key(report.table),
        check_name=check_name(report.table),
        passed=report.passed,
        metadata=metadata,
    )
