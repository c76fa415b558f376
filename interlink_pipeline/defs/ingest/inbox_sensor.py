"""The crawl inbox sensor: a new or changed export in <inbox>/<site>/ starts that site's pipeline; a new,
changed or removed file in <inbox>/<site>/decisions/ starts that site's link_decisions."""

import hashlib
import json
import time
from pathlib import Path

from dagster import (
    AssetKey,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from interlink_pipeline.core.environment import INBOX_SCAN_ENV, environment
from interlink_pipeline.core.ingest.inbox import SETTLE_SECONDS, SiteDrop, decision_files, scan_inbox
from interlink_pipeline.core.ingest.tabular_files import file_digest
from interlink_pipeline.core.numbers import whole_number
from interlink_pipeline.defs.jobs import site_pipeline_job
from interlink_pipeline.defs.partitions import site_partitions
from interlink_pipeline.defs.resources import CrawlInbox

RUN_KEY_TAG = "interlink/run_key"  # the exports a run read (see run_key), on sensor and CLI runs alike
INBOX_SCAN_DEFAULT_S = 30
MOST_SCAN_SECONDS = 86_400  # a day


def inbox_scan_seconds() -> int:
    """How often the sensor scans the drop folder: $INTERLINK_INBOX_SCAN_SECONDS, whole seconds."""
    value = environment().inbox_scan_seconds or str(INBOX_SCAN_DEFAULT_S)
    return whole_number(INBOX_SCAN_ENV, value, "seconds", MOST_SCAN_SECONDS)


def cached_digest(path: Path, known: dict[str, list]) -> tuple[str, list]:
    """A file's content digest, reusing the cursor's when size and mtime are unchanged."""
    stat = path.stat()
    seen = known.get(str(path))
    if seen and seen[0] == stat.st_mtime_ns and seen[1] == stat.st_size:
        return seen[2], seen
    digest = file_digest(path)
    return digest, [stat.st_mtime_ns, stat.st_size, digest]


def run_key(
    site: str,
    crawl_digest: str,
    links_digest: str | None,
    queries_digest: str | None = None,
    text_digest: str | None = None,
) -> str:
    key = f"{site}:{crawl_digest}:{links_digest or 'no-links'}"
    return (
        key
        + (f":{queries_digest}" if queries_digest else "")
        + (f":text-{text_digest}" if text_digest else "")
    )


def inbox_run_key(root: str | Path, site: str) -> str | None:
    """The run key of the site's exports now in the drop folder (None: nothing registered): a run made
    outside the sensor (`interlink materialize`, `make run`) carries it, so the sensor does not repeat it."""
    drop = next((d for d in scan_inbox(root, settle_seconds=0).drops if d.site == site), None)
    if drop is None:
        return None
    digests = (
        file_digest(path) if path else None for path in (drop.links_file, drop.queries_file, drop.text_file)
    )
    return run_key(site, file_digest(drop.crawl_file), *digests)


def decisions_key(site: str, digests: list[tuple[str, str]]) -> str | None:
    """The run key of a site's decisions files ((name, content digest), oldest first); None when none."""
    if not digests:
        return None
    return f"{site}:decisions:{hashlib.sha256(json.dumps(digests).encode()).hexdigest()[:16]}"


def decisions_run_key(root: str | Path, site: str) -> str | None:
    """The run key of the site's decisions files now in the drop folder: `interlink decisions import` tags
    its run with it, so the sensor does not repeat it."""
    return decisions_key(site, [(path.name, file_digest(path)) for path in decision_files(root, site).files])


def _decisions_request(
    context: SensorEvaluationContext, root: str, site: str, seen: dict[str, list], state: dict
) -> RunRequest | None:
    """A run of link_decisions for `site` when its decisions/ folder changed since the last request (files
    added, changed or removed); `seen` gets the files' digests, `state` (the cursor's) the key."""
    digests = []
    for path in decision_files(root, site, settled_before=time.time() - SETTLE_SECONDS).files:
        digest, seen[str(path)] = cached_digest(path, state["files"])
        digests.append((path.name, digest))
    before = state["requested"].get(f"{site} decisions")
    key = decisions_key(site, digests) or (before and not before.endswith(":none") and f"{before}:none")
    if not key or before == key:
        return None
    state["requested"][f"{site} decisions"] = key
    if _already_run(context.instance, key):
        return None
    return RunRequest(
        run_key=key,
        partition_key=site,
        asset_selection=[AssetKey(["graph", "link_decisions"])],
        tags={"interlink/trigger": "inbox-decisions", RUN_KEY_TAG: key},
    )


def _already_run(instance, key: str) -> bool:
    runs = instance.get_run_records(
        RunsFilter(tags={RUN_KEY_TAG: key}, statuses=[DagsterRunStatus.SUCCESS]), limit=1
    )
    return bool(runs)


def _files_read(drop: SiteDrop) -> dict:
    """The run's config: which file of the drop each reading step reads."""

    def named(path: Path | None) -> str | None:
        return path.name if path else None

    return {
        "raw_crawl": {"config": {"crawl_file": drop.crawl_file.name}},
        "raw_links": {"config": {"links_file": named(drop.links_file)}},
        "raw_page_text": {"config": {"text_file": named(drop.text_file)}},
        "raw_search_console": {"config": {"search_console_file": named(drop.search_console_file)}},
        "serp_results": {"config": {"queries_file": named(drop.queries_file)}},
    }


@sensor(
    job=site_pipeline_job,
    minimum_interval_seconds=inbox_scan_seconds(),
    default_status=DefaultSensorStatus.RUNNING,
    description=f"Watches the drop folder (every {INBOX_SCAN_DEFAULT_S} s; ${INBOX_SCAN_ENV}); one run per "
    "site per distinct export content.",
)
def crawl_inbox_sensor(context: SensorEvaluationContext, inbox: CrawlInbox):
    state = json.loads(context.cursor) if context.cursor else {}
    files: dict[str, list] = state.get("files", {})
    requested: dict[str, str] = state.get("requested", {})
    scan = scan_inbox(inbox.root)
    for problem in scan.problems:
        context.log.warning(f"inbox: {problem}")
    known_sites = set(context.instance.get_dynamic_partitions(site_partitions.name))
    next_files: dict[str, list] = {}
    run_requests: list[RunRequest] = []
    new_sites: list[str] = []
    decided: list[RunRequest] = []
    for drop in scan.drops:
        if drop.site in known_sites:
            state = {"files": files, "requested": requested}
            decided += filter(None, [_decisions_request(context, inbox.root, drop.site, next_files, state)])
        crawl_digest, next_files[str(drop.crawl_file)] = cached_digest(drop.crawl_file, files)
        links_digest = queries_digest = text_digest = None
        if drop.links_file is not None:
            links_digest, next_files[str(drop.links_file)] = cached_digest(drop.links_file, files)
        if drop.queries_file is not None:
            queries_digest, next_files[str(drop.queries_file)] = cached_digest(drop.queries_file, files)
        if drop.text_file is not None:
            text_digest, next_files[str(drop.text_file)] = cached_digest(drop.text_file, files)
        key = run_key(drop.site, crawl_digest, links_digest, queries_digest, text_digest)
        if requested.get(drop.site) == key:
            continue
        requested[drop.site] = key
        if _already_run(context.instance, key):
            context.log.info(f"{drop.site}: these exports were already run ({key})")
            continue
        if drop.site not in known_sites:
            new_sites.append(drop.site)
        run_requests.append(
            RunRequest(
                run_key=key,
                partition_key=drop.site,
                run_config={"ops": _files_read(drop)},
                tags={"interlink/crawl_id": crawl_digest, "interlink/trigger": "inbox", RUN_KEY_TAG: key},
            )
        )
    cursor = json.dumps({"files": next_files, "requested": requested}, sort_keys=True)
    crawled = {request.partition_key for request in run_requests}  # a whole run reads the decisions too
    run_requests += [request for request in decided if request.partition_key not in crawled]
    if not run_requests:
        return SensorResult(skip_reason=SkipReason("no new or changed crawl exports"), cursor=cursor)
    return SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=[site_partitions.build_add_request(new_sites)] if new_sites else [],
        cursor=cursor,
    )
