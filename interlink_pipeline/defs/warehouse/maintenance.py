"""The lake's upkeep: a daily job that compacts a DuckLake warehouse's files and deletes what time travel no
longer reaches (core/warehouse/lake_maintenance.py). A DuckDB file needs none: its schedule skips."""

from dagster import (
    OpExecutionContext,
    Output,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    in_process_executor,
    job,
    op,
    schedule,
)

from interlink_pipeline.core.environment import environment
from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.warehouse import lake
from interlink_pipeline.core.warehouse.lake_maintenance import MaintenanceOptions, maintain
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.settings import options_from, scheduled_by, settings_config
from interlink_pipeline.defs.writes import readable, user_errors


class LakeMaintenanceConfig(settings_config(MaintenanceOptions)):
    """How long replaced rows stay readable (the core's MaintenanceOptions)."""


@op(description="Merge the lake's small Parquet files, expire old snapshots and delete their files.")
def maintain_lake(context: OpExecutionContext, config: LakeMaintenanceConfig, warehouse: Warehouse) -> Output:
    with user_errors():
        if not lake.is_lake(warehouse.path):
            raise InputError(
                f"the warehouse {warehouse.path} is a DuckDB file, not a DuckLake: nothing to maintain."
            )
        report = maintain(warehouse.path, options_from(config, MaintenanceOptions))
    figures = {
        "snapshots_before": report.before.snapshots,
        "snapshots_after": report.after.snapshots,
        "live_files_before": report.before.live_files,
        "live_files_after": report.after.live_files,
        "live_mb_after": report.after.live_bytes / 1e6,
        "files_deleted": report.files_deleted,
        "duration_s": report.seconds,
    }
    context.log.info(
        f"{report.before.live_files:,} live files → {report.after.live_files:,}; "
        f"{report.files_deleted:,} files deleted; {report.after.snapshots:,} snapshots kept"
    )
    return Output(None, metadata=readable(figures))


@job(executor_def=in_process_executor, description="The DuckLake warehouse's upkeep (a file needs none).")
def lake_maintenance():
    maintain_lake()


@schedule(
    job=lake_maintenance,
    cron_schedule=environment().lake_maintenance_cron or "0 3 * * *",
    execution_timezone="UTC",
    default_status=scheduled_by(environment().lake_maintenance_cron),
    description="Daily at 03:00 UTC when the warehouse is a DuckLake. Off unless turned on here or "
    "$INTERLINK_LAKE_MAINTENANCE_CRON is set (then at that time).",
)
def lake_maintenance_schedule(context: ScheduleEvaluationContext, warehouse: Warehouse):
    if not lake.is_lake(warehouse.path):
        return SkipReason("the warehouse is a DuckDB file: nothing to maintain")
    return RunRequest(run_key=f"lake-maintenance:{context.scheduled_execution_time:%Y-%m-%dT%H:%M}")
