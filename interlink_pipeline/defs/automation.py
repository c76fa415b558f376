"""Automation beyond the inbox sensor: a schedule that refreshes SERP evidence and everything after it, and a
sensor that records every failed run (and posts it to a webhook when one is configured)."""

import os
from datetime import UTC, datetime

import polars as pl
from dagster import (
    AssetSelection,
    ConfigurableResource,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunFailureSensorContext,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    define_asset_job,
    in_process_executor,
    run_failure_sensor,
    schedule,
)
from pydantic import Field

from interlink_pipeline.core import warehouse as warehouse_tables
from interlink_pipeline.core.alerts import post_alert
from interlink_pipeline.defs.partitions import site_partitions
from interlink_pipeline.defs.resources import Warehouse

SERP_REFRESH_CRON_ENV = "INTERLINK_SERP_REFRESH_CRON"
WEBHOOK_ENV = "INTERLINK_FAILURE_WEBHOOK"

serp_refresh_job = define_asset_job(
    "serp_refresh",
    selection=AssetSelection.assets("serp_results").downstream(),
    executor_def=in_process_executor,
    description="SERP evidence again (the cache answers what is younger than its TTL), then candidates, the "
    "plan, the marts and the reports.",
)


@schedule(
    job=serp_refresh_job,
    cron_schedule=os.environ.get(SERP_REFRESH_CRON_ENV) or "0 6 * * 1",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Weekly (Monday 06:00 UTC; $INTERLINK_SERP_REFRESH_CRON) per site: SERP evidence and all "
    "that depends on it.",
)
def serp_refresh_schedule(context: ScheduleEvaluationContext):
    sites = context.instance.get_dynamic_partitions(site_partitions.name)
    if not sites:
        return SkipReason("no site registered yet")
    stamp = context.scheduled_execution_time.strftime("%Y-%m-%dT%H:%M")
    return [
        RunRequest(
            run_key=f"serp-refresh:{site}:{stamp}", partition_key=site, tags={"interlink/trigger": "schedule"}
        )
        for site in sorted(sites)
    ]


class FailureAlerts(ConfigurableResource):
    """Where failed runs are announced."""

    webhook_url: str = Field(
        default_factory=lambda: os.environ.get(WEBHOOK_ENV, ""),
        description="POST a JSON alert here on every failed run; default $INTERLINK_FAILURE_WEBHOOK (empty: "
        "record only).",
    )
    timeout_s: float = Field(default=10.0, gt=0, description="How long the webhook may take.")


@run_failure_sensor(
    default_status=DefaultSensorStatus.RUNNING,
    description="Records every failed run in ops.run_failures, and posts it to the webhook when one is set.",
)
def run_failure_recorder(context: RunFailureSensorContext, warehouse: Warehouse, alerts: FailureAlerts):
    run = context.dagster_run
    steps = context.get_step_failure_events()
    first = steps[0] if steps else None
    message = (
        first.event_specific_data.error.message.strip()
        if first and first.event_specific_data and first.event_specific_data.error
        else context.failure_event.message or "run failed"
    )
    payload = {
        "run_id": run.run_id,
        "job": run.job_name,
        "site": run.tags.get("dagster/partition"),
        "step": first.step_key if first else None,
        "message": message[:2000],
    }
    notified = False
    if alerts.webhook_url:
        notified, outcome = post_alert(
            alerts.webhook_url, {"text": _summary(payload), **payload}, alerts.timeout_s
        )
        context.log.info(f"webhook: {outcome}")
    row = pl.DataFrame(
        [{**payload, "failed_at": datetime.now(UTC).replace(tzinfo=None), "notified": notified}],
        schema={
            "run_id": pl.String,
            "job": pl.String,
            "site": pl.String,
            "failed_at": pl.Datetime("us"),
            "step": pl.String,
            "message": pl.String,
            "notified": pl.Boolean,
        },
    )
    warehouse_tables.merge_rows(
        warehouse.path, "ops.run_failures", row, ["run_id"], lock_timeout_s=warehouse.lock_timeout_s
    )


def _summary(payload: dict) -> str:
    where = f" for {payload['site']}" if payload["site"] else ""
    step = f" at {payload['step']}" if payload["step"] else ""
    return f"interlink_pipeline: {payload['job']} failed{where}{step}: {payload['message'][:300]}"
