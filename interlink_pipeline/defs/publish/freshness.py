"""The published plan's freshness, a check per site on `published_files` (core/publish/freshness.py): the
run that publishes a plan evaluates it, and `plan_freshness_sensor` runs it again, on its own, for a site
whose newest crawl is newer than its plan or whose plan grew old, so the UI marks a plan stale without
waiting for the site's next run. (A check evaluated outside a run is stored once per site by Dagster 1.13's
SQLite storage, so each evaluation is a run of its own: a few seconds.)"""

import json
from datetime import UTC, datetime
from pathlib import Path

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetKey,
    AssetSelection,
    DefaultSensorStatus,
    MetadataValue,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    asset_check,
    define_asset_job,
    in_process_executor,
    sensor,
)

from interlink_pipeline.core.environment import environment
from interlink_pipeline.core.ingest.inbox import latest_exports, registered_crawl_id
from interlink_pipeline.core.ingest.inbox import site_folder as inbox_folder
from interlink_pipeline.core.publish.freshness import Freshness, plan_freshness, plan_max_age
from interlink_pipeline.core.publish.publication import read_manifest
from interlink_pipeline.defs.partitions import site_partitions
from interlink_pipeline.defs.publish.reports import site_folder
from interlink_pipeline.defs.resources import CrawlInbox, Warehouse

FRESHNESS_CHECK = "published_plan_is_fresh"
FRESHNESS_SCAN_S = 60


def site_freshness(folder: Path, inbox_root: str | Path, site: str) -> Freshness:
    """The plan published in `folder` against the crawl registered for `site` now."""
    registered = registered_crawl_id(inbox_root, site)
    return plan_freshness(read_manifest(folder), registered, datetime.now(UTC), plan_max_age(environment()))


@asset_check(
    asset=AssetKey("published_files"),
    name=FRESHNESS_CHECK,
    partitions_def=site_partitions,
    description="The site's published plan is of the crawl registered now and younger than "
    "$INTERLINK_PLAN_MAX_AGE_DAYS (30 days by default): a newer crawl registered or dropped fails it (within "
    "a minute under `make dev`), and the run that plans that crawl makes it pass.",
)
def published_plan_is_fresh(
    context: AssetCheckExecutionContext, warehouse: Warehouse, inbox: CrawlInbox
) -> AssetCheckResult:
    site = context.partition_key
    freshness = site_freshness(site_folder(warehouse, site), inbox.root, site)
    hours = (
        {"age_hours": MetadataValue.text(f"{freshness.age.total_seconds() / 3600:.1f}")}
        if freshness.age
        else {}
    )
    return AssetCheckResult(passed=freshness.fresh, description=freshness.said, metadata=hours)


plan_freshness_job = define_asset_job(
    "plan_freshness",
    selection=AssetSelection.checks(published_plan_is_fresh),
    executor_def=in_process_executor,
    description="The published plan's freshness check alone, per site (plan_freshness_sensor starts it).",
)


def _maybe_stale(folder: Path, inbox_root: str, site: str, now: datetime) -> str | None:
    """What may have made the site's plan stale since it was published (None: nothing): a crawl file newer
    than the plan, or the plan's age; the check's run decides (a crawl file may be the same crawl again)."""
    published = read_manifest(folder)
    crawl = latest_exports(inbox_folder(inbox_root, site)).get("crawl")
    if published is None or crawl is None:
        return None
    at = datetime.fromisoformat(published["published_at"])
    if crawl.stat().st_mtime > at.timestamp():
        return f"{published['published_at']}|{crawl.name}|{crawl.stat().st_mtime_ns}"
    return f"{published['published_at']}|aged" if now - at > plan_max_age(environment()) else None


@sensor(
    job=plan_freshness_job,
    minimum_interval_seconds=FRESHNESS_SCAN_S,
    default_status=DefaultSensorStatus.RUNNING,
    description=f"Every {FRESHNESS_SCAN_S} s: a site whose newest crawl is newer than its published plan, or "
    "whose plan is older than $INTERLINK_PLAN_MAX_AGE_DAYS, gets its freshness check run once.",
)
def plan_freshness_sensor(context: SensorEvaluationContext, warehouse: Warehouse, inbox: CrawlInbox):
    now = datetime.now(UTC)
    looked = json.loads(context.cursor) if context.cursor else {}
    reasons = {}
    for site in context.instance.get_dynamic_partitions(site_partitions.name):
        reason = _maybe_stale(site_folder(warehouse, site), inbox.root, site, now)
        if reason is not None:
            reasons[site] = reason
    cursor = json.dumps(reasons, sort_keys=True)
    # the site as the run's partition tag: a job of a check alone takes no partition key in Dagster 1.13
    requests = [
        RunRequest(
            run_key=f"freshness:{site}:{reason}",
            tags={"dagster/partition": site, "interlink/trigger": "freshness"},
        )
        for site, reason in sorted(reasons.items())
        if looked.get(site) != reason
    ]
    if not requests:
        return SensorResult(skip_reason=SkipReason("no plan became stale"), cursor=cursor)
    return SensorResult(run_requests=requests, cursor=cursor)
