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
    DagsterRunStatus,
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
from interlink_pipeline.core.ingest.inbox import latest_exports
from interlink_pipeline.core.ingest.inbox import site_folder as inbox_folder
from interlink_pipeline.core.publish.freshness import plan_freshness, plan_max_age, site_freshness
from interlink_pipeline.core.publish.publication import read_manifest, site_folder
from interlink_pipeline.defs.ingest.inbox_sensor import cached_digest
from interlink_pipeline.defs.partitions import site_partitions
from interlink_pipeline.defs.resources import CrawlInbox, Warehouse
from interlink_pipeline.defs.site_runs import FRESHNESS_TAG, site_runs

FRESHNESS_CHECK = "published_plan_is_fresh"
FRESHNESS_SCAN_S = 60


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
    freshness = site_freshness(site_folder(warehouse.path, site), inbox.root, site)
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
    description="The published plan's freshness check alone, for the site its run is tagged with "
    "(dagster/partition): plan_freshness_sensor starts it; by hand, add that tag in the launchpad.",
)


def _stale(folder: Path, inbox_root: str, site: str, now: datetime, known: dict, files: dict) -> str | None:
    """Why the site's published plan is stale, in the check's words (None: it is fresh, or nothing is
    published yet: the site's first run evaluates the check). The crawl is compared by content, a file
    copied with its old time too; its digest is read from `known` when the file is unchanged, kept in
    `files`."""
    published = read_manifest(folder)
    if published is None:
        return None
    crawl = latest_exports(inbox_folder(inbox_root, site)).get("crawl")
    digest = None
    if crawl is not None:
        digest, files[str(crawl)] = cached_digest(crawl, known)
    freshness = plan_freshness(published, digest, now, plan_max_age(environment()))
    return None if freshness.fresh else freshness.said


# a run of the site not finished yet, queued included (it evaluates the check itself once it publishes)
NOT_FINISHED = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
]


@sensor(
    job=plan_freshness_job,
    minimum_interval_seconds=FRESHNESS_SCAN_S,
    default_status=DefaultSensorStatus.RUNNING,
    description=f"Every {FRESHNESS_SCAN_S} s: a site whose registered crawl is newer than its plan, "
    f"or whose plan is older than {plan_max_age(environment()).days} days ($INTERLINK_PLAN_MAX_AGE_DAYS), "
    "gets its freshness check run once (not while a run of the site is queued or running).",
)
def plan_freshness_sensor(context: SensorEvaluationContext, warehouse: Warehouse, inbox: CrawlInbox):
    now = datetime.now(UTC)
    cursor = json.loads(context.cursor) if context.cursor else {}
    asked, known, files = cursor.get("asked", {}), cursor.get("files", {}), {}
    requests = []
    for site in sorted(context.instance.get_dynamic_partitions(site_partitions.name)):
        reason = _stale(site_folder(warehouse.path, site), inbox.root, site, now, known, files)
        if reason is None:
            asked.pop(site, None)
        elif asked.get(site) != reason and not site_runs(context.instance, site, NOT_FINISHED, limit=1):
            asked[site] = reason
            # the site as the run's partition tag: a job of a check alone takes no partition key (1.13)
            tags = {"dagster/partition": site, **FRESHNESS_TAG}
            requests.append(RunRequest(run_key=f"freshness:{site}:{reason}", tags=tags))
    next_cursor = json.dumps({"asked": asked, "files": files}, sort_keys=True)
    if not requests:
        return SensorResult(skip_reason=SkipReason("no plan became stale"), cursor=next_cursor)
    return SensorResult(run_requests=requests, cursor=next_cursor)
