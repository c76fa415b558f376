"""A sensor that records every failed run in ops.run_failures (and posts it to a webhook when one is
configured)."""

from dagster import (
    ConfigurableResource,
    DagsterEvent,
    DagsterRun,
    DefaultSensorStatus,
    RunFailureSensorContext,
    run_failure_sensor,
)
from pydantic import Field

from interlink_pipeline.core.environment import environment
from interlink_pipeline.core.publish.alerts import record_failure
from interlink_pipeline.defs.groups import PUBLISH
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.tables import table_spec


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
        default_factory=lambda: environment().failure_webhook or "",
        description="POST a JSON alert here on every failed run; default $INTERLINK_FAILURE_WEBHOOK (empty: "
        "record only).",
    )
    timeout_s: float = Field(default=10.0, gt=0, description="How long the webhook may take.")


# written by the sensor below, not by a step: shown in the UI (schema, lineage) but never materialised
run_failures = table_spec("ops.run_failures", group=PUBLISH, kinds={"duckdb"}, deps=())


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
