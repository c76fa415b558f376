"""A schedule that refreshes SERP evidence and everything after it, per site."""

from dagster import (
    AssetSelection,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    define_asset_job,
    in_process_executor,
    schedule,
)

from interlink_pipeline.core.environment import environment
from interlink_pipeline.defs.partitions import site_partitions
from interlink_pipeline.defs.settings import scheduled_by
from interlink_pipeline.defs.tables import table_key

serp_refresh_job = define_asset_job(
    "serp_refresh",
    selection=AssetSelection.assets(table_key("serp.results")).downstream(),
    executor_def=in_process_executor,
    description="SERP evidence again (the cache answers what is younger than its TTL), then candidates, the "
    "plan, the marts and the reports.",
)


@schedule(
    job=serp_refresh_job,
    cron_schedule=environment().serp_refresh_cron or "0 6 * * 1",
    execution_timezone="UTC",
    default_status=scheduled_by(environment().serp_refresh_cron),
    description="Per site: SERP evidence and all that depends on it; Monday 06:00 UTC. Off unless turned on "
    "here or $INTERLINK_SERP_REFRESH_CRON is set (then at that time).",
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
