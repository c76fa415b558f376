"""The SERP refresh schedule, the plan freshness sensor and the run-failure recorder (with a real webhook on
loopback)."""

import json
from datetime import UTC, datetime, timedelta

import dagster as dg
import duckdb
import pytest

from interlink_pipeline.defs.publish.alerts import FailureAlerts, run_failure_recorder
from interlink_pipeline.defs.resources import Warehouse
from interlink_pipeline.defs.serp.refresh import serp_refresh_schedule
from interlink_pipeline_tests.helpers import LIGHT, NUTRI, SAMPLE_DIR, run_site, write_export
from interlink_pipeline_tests.services import Webhook

BROKEN_SITE = "www.broken.example"


def test_the_serp_refresh_schedule_asks_for_every_site_and_everything_after_serp(instance):
    context = dg.build_schedule_context(
        instance=instance, scheduled_execution_time=datetime(2026, 11, 23, 6, tzinfo=UTC)
    )
    assert isinstance(serp_refresh_schedule(context), dg.SkipReason)  # no site yet
    instance.add_dynamic_partitions("sites", [NUTRI, LIGHT])
    requests = serp_refresh_schedule(context)
    assert [(r.partition_key, r.run_key) for r in requests] == [
        (NUTRI, f"serp-refresh:{NUTRI}:2026-11-23T06:00"),
        (LIGHT, f"serp-refresh:{LIGHT}:2026-11-23T06:00"),
    ]
    assert serp_refresh_schedule.cron_schedule == "0 6 * * 1"  # weekly
    from interlink_pipeline.definitions import defs

    selected = defs.resolve_job_def("serp_refresh").asset_layer.selected_asset_keys
    names = {key.to_user_string() for key in selected}
    assert {
        "serp/results",
        "ml/link_candidates",
        "graph/link_plan",
        "marts/link_opportunities",
        "html_report",
    } <= names
    assert not names & {"raw/crawl_pages", "staging/pages", "ml/page_embeddings", "ml/similarity_pairs"}


def test_the_freshness_sensor_asks_once_per_stale_plan_and_never_while_the_site_runs(tmp_path, instance):
    from interlink_pipeline.core.ingest.inbox import register_crawl, registered_crawl_id
    from interlink_pipeline.core.publish.publication import site_folder
    from interlink_pipeline.definitions import build_defs
    from interlink_pipeline.defs.publish.freshness import plan_freshness_sensor
    from interlink_pipeline.sample import SAMPLE_HOST

    warehouse, inbox = tmp_path / "warehouse.duckdb", tmp_path / "inbox"
    defs = build_defs(str(warehouse), str(inbox))
    register_crawl(inbox, SAMPLE_HOST, SAMPLE_DIR / "internal_all.csv")
    instance.add_dynamic_partitions("sites", [SAMPLE_HOST])
    published = site_folder(warehouse, SAMPLE_HOST) / "published.json"
    published.parent.mkdir(parents=True)
    cursor = None

    def plan(crawl_id: str, days_old: int) -> None:
        made = datetime.now(UTC) - timedelta(days=days_old)
        published.write_text(
            json.dumps(
                {
                    "published_at": datetime.now(UTC).isoformat(),
                    "plan_computed_at": made.isoformat(),
                    "crawl_id": crawl_id,
                }
            )
        )

    def asked() -> list[str]:
        nonlocal cursor
        context = dg.build_sensor_context(instance, cursor=cursor, definitions=defs, resources=defs.resources)
        tick = plan_freshness_sensor(context)
        cursor = tick.cursor
        return [
            f"{r.tags['dagster/partition']} {r.run_key.split(':', 2)[2]}"  # freshness:<site>:<why, as said>
            for r in tick.run_requests
        ]

    registered = registered_crawl_id(inbox, SAMPLE_HOST)
    plan(registered, days_old=1)
    assert asked() == []  # the plan of the crawl registered now, a day old
    plan("an-older-crawl", days_old=1)
    running = dg.DagsterRun(
        job_name="site_pipeline", tags={"dagster/partition": SAMPLE_HOST}, status=dg.DagsterRunStatus.STARTED
    )
    instance.add_run(running)
    assert asked() == []  # the site's running run evaluates the check itself
    instance.delete_run(running.run_id)
    [why] = asked()  # the check's own run, tagged with the site
    assert why.startswith(f"{SAMPLE_HOST} stale: the plan (made ") and why.endswith(
        f"is of crawl an-older-crawl, and a newer crawl ({registered}) is registered: run the site again"
    )
    assert asked() == []  # once
    plan(registered, days_old=31)
    [why] = asked()
    assert why.startswith(f"{SAMPLE_HOST} stale: the plan was made ") and why.endswith(
        "over the 30 days allowed"
    )
    assert asked() == []


# every way a run starts besides the CLI (tested in test_cli_safety): the inbox sensor, the weekly
# schedule (its own job), a click in the UI (no tag)
TRIGGERS = {
    "inbox sensor": ("site_pipeline", {"dagster/sensor_name": "crawl_inbox_sensor"}),
    "schedule": ("serp_refresh", {"dagster/schedule_name": "serp_refresh_schedule"}),
    "UI": ("site_pipeline", {}),
}


@pytest.mark.parametrize(
    ("trigger", "status"), [("inbox sensor", 200), ("inbox sensor", 500), ("schedule", 200), ("UI", 200)]
)
def test_a_failed_run_is_recorded_and_posted_to_the_webhook(
    trigger, status, warehouse_path, inbox_root, instance
):
    # dropped into the site's folder by hand (`interlink register` would refuse it before the run)
    (inbox_root / BROKEN_SITE).mkdir(parents=True)
    crawl = inbox_root / BROKEN_SITE / "crawl.csv"
    write_export(crawl, ["Title 1", "Status Code"], [["No address column", "200"]])
    job, tags = TRIGGERS[trigger]
    result = run_site(warehouse_path, inbox_root, instance, BROKEN_SITE, tags=tags, job=job)
    assert not result.success
    run = instance.get_run_by_id(result.run_id)
    failure = next(iter(instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_FAILURE))).dagster_event
    hook = Webhook(status)
    try:
        context = dg.build_run_status_sensor_context(
            sensor_name="run_failure_recorder",
            dagster_event=failure,
            dagster_instance=instance,
            dagster_run=run,
            resources={
                "warehouse": Warehouse(path=str(warehouse_path)),
                "alerts": FailureAlerts(webhook_url=hook.url),
            },
        ).for_run_failure()
        run_failure_recorder(context)
    finally:
        hook.close()
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        rows = con.execute(
            "SELECT run_id, job, site, step, message, notified FROM ops.run_failures"
        ).fetchall()
    assert len(rows) == 1
    run_id, recorded_job, site, step, message, notified = rows[0]
    assert (run_id, recorded_job, site) == (run.run_id, job, BROKEN_SITE)
    if job == "site_pipeline":
        assert step == "raw_crawl" and ("URL" in message or "Address" in message)  # the reader's words
    else:  # the schedule's job starts after the crawl: its first step says what is missing
        assert step and message
    assert notified is (status == 200)
    assert len(hook.received) == 1 and hook.received[0]["run_id"] == run.run_id
    summary = f"interlink_pipeline: {job} failed for {BROKEN_SITE} at {step}"
    assert hook.received[0]["text"].startswith(summary)


def test_an_unreachable_webhook_is_reported_not_raised():
    from interlink_pipeline.core.publish.alerts import post_alert

    accepted, outcome = post_alert("http://127.0.0.1:9/hook", {"text": "x"}, timeout_s=2)
    assert not accepted and "ConnectError" in outcome
