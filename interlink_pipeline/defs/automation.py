"""Automation beyond the inbox sensor: a schedule that refreshes SERP evidence and everything after it, and a
sensor that records every failed run (and posts it to a webhook when one is configured)."""

import os

from dagster import (
    AssetSelection,
    ConfigurableResource,
    DagsterEvent,
    DagsterRun,
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

from interlink_pipeline.core.publish.alerts import record_failure
from interlink_pipeline.defs.partitions import site_partitions
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.tables import table_key, table_spec

SERP_REFRESH_CRON_ENV = "INTERLINK_SERP_REFRESH_CRON"
WEBHOOK_ENV = "INTERLINK_FAILURE_WEBHOOK"

serp_refresh_job = define_asset_job(
    "serp_refresh",
    selection=AssetSelection.assets(table_key("serp.results")).downstream(),
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


def failure_payload(run: DagsterRun, step_failures: list[DagsterEvent], run_message: str | None) -> dict:
    """What is recorded and sent of a failed run: its first failed step and that step's own error (the
    innermost cause: an input error's message, not Dagster's wrapper)."""
    first = step_failures[0] if step_failures else None
    error = first.event_specific_data.error if first and first.event_specific_data else None
    while error is not None and error.cause is not None:
        error = error.cause
    return {
        "run_id": run.run_id,
        "job": run.job_name,
        "site": run.tags.get("dagster/partition"),
        "step": first.step_key if first else None,
        "message": _readable(error) if error else run_message or "run failed",
    }


# errors whose message is written for the user: shown without the class's name
_USER_ERRORS = ("Failure", "InputError")


def _readable(error) -> str:
    """An error's message without the module path Dagster puts before it ("dagster._core.definitions.
    events.Failure: …"): a user's error as its message, any other with its class's short name."""
    message = error.message.strip()
    head, sep, rest = message.partition(": ")
    if not sep or head.rsplit(".", 1)[-1] != error.cls_name:
        return message
    return rest if error.cls_name in _USER_ERRORS else f"{error.cls_name}: {rest}"


class FailureAlerts(ConfigurableResource):
    """Where failed runs are announced."""

    webhook_url: str = Field(
        default_factory=lambda: os.environ.get(WEBHOOK_ENV, ""),
        description="POST a JSON alert here on every failed run; default $INTERLINK_FAILURE_WEBHOOK (empty: "
        "record only).",
    )
    timeout_s: float = Field(default=10.0, gt=0, description="How long the webhook may take.")


# written by the sensor below, not by a step: shown in the UI (schema, lineage) but never materialised
run_failures = table_spec("ops.run_failures", group="ops", kinds={"duckdb"}, deps=())


@run_failure_sensor(
    default_status=DefaultSensorStatus.RUNNING,
    description="Records every failed run in ops.run_failures, and posts it to the webhook when one is set.",
)
def run_failure_recorder(context: RunFailureSensorContext, warehouse: Warehouse, alerts: FailureAlerts):
    run = context.dagster_run
    payload = failure_payload(run, context.get_step_failure_events(), context.failure_event.message)
    _, outcome = record_failure(
        payload, warehouse.path, alerts.webhook_url, alerts.timeout_s, warehouse.lock_timeout_s
    )
    context.log.info(f"webhook: {outcome}")
