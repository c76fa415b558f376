"""The README's deployment beyond one machine, for real on loopback: a Dagster instance on PostgreSQL
(deploy/dagster.yaml), and the code server, the daemon and the webserver as three separate processes
(deploy/workspace.yaml). Two crawls dropped at once become two successful runs that every process sees."""

import json
import os
import shutil
import sys
import urllib.request
from itertools import pairwise
from pathlib import Path

import dagster as dg
import duckdb
import psycopg2

from interlink_pipeline.core.ingest.inbox import register_crawl
from interlink_pipeline.defs.tables import WRITER_POOL
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import LIGHT, PROJECT_ROOT, SAMPLE_DIR
from interlink_pipeline_tests.services import free_port, http_ok, service, step_spans, wait_for

DEPLOY = PROJECT_ROOT / "deploy"


def _graphql(url: str, query: str) -> dict:
    request = urllib.request.Request(
        f"{url}/graphql", json.dumps({"query": query}).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["data"]


def test_postgres_instance_with_separate_code_server_daemon_and_webserver(
    postgres_url, tmp_path, model_cache, crawls, monkeypatch
):
    # SQLAlchemy 2.1 maps a bare postgresql:// to psycopg 3; dagster-postgres brings psycopg2
    monkeypatch.setenv("DAGSTER_PG_URL", postgres_url.replace("postgresql://", "postgresql+psycopg2://"))
    home, inbox = tmp_path / "dagster_home", tmp_path / "inbox"
    home.mkdir()
    inbox.mkdir()
    shutil.copyfile(DEPLOY / "dagster.yaml", home / "dagster.yaml")
    warehouse = tmp_path / "warehouse" / "interlink.duckdb"
    code_port, web_port = free_port(), free_port()
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "INTERLINK_CODE_SERVER_HOST": "127.0.0.1",
        "INTERLINK_CODE_SERVER_PORT": str(code_port),
        # the code server launches the runs: the pipeline's settings are its environment
        "INTERLINK_WAREHOUSE": str(warehouse),
        "INTERLINK_INBOX": str(inbox),
        "INTERLINK_MODEL_CACHE": str(model_cache),
    }
    bin_dir = Path(sys.executable).parent
    workspace = str(DEPLOY / "workspace.yaml")
    code_server = [str(bin_dir / "dagster"), "code-server", "start", "-m", "interlink_pipeline.definitions"]
    code_server += ["-h", "127.0.0.1", "-p", str(code_port)]
    daemon = [str(bin_dir / "dagster-daemon"), "run", "-w", workspace]
    webserver = [str(bin_dir / "dagster-webserver"), "-w", workspace, "-h", "127.0.0.1", "-p", str(web_port)]
    logs = [tmp_path / f"{name}.log" for name in ("code-server", "daemon", "webserver")]
    url = f"http://127.0.0.1:{web_port}"
    common = {"cwd": PROJECT_ROOT, "env": env}
    with (
        service(code_server, logs[0], **common),
        service(daemon, logs[1], **common),
        service(webserver, logs[2], **common),
        dg.DagsterInstance.from_config(str(home)) as instance,
    ):
        wait_for(lambda: http_ok(f"{url}/server_info"), 180, "the webserver", *logs)
        register_crawl(inbox, SAMPLE_HOST, SAMPLE_DIR / "internal_all.csv", SAMPLE_DIR / "all_inlinks.csv")
        register_crawl(inbox, LIGHT, crawls / "lightchiropractic/internal_all.csv")

        def both_finished():
            runs = instance.get_runs(filters=dg.RunsFilter(tags={"interlink/trigger": "inbox"}))
            return runs if len(runs) == 2 and all(r.is_finished for r in runs) else None

        runs = wait_for(both_finished, 900, "two inbox runs to finish", *logs)
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs), logs[1].read_text()[-6000:]
        assert {r.tags["dagster/partition"] for r in runs} == {SAMPLE_HOST, LIGHT}

        # the webserver reads the same history: both runs, successful, from the code server's location
        seen = _graphql(
            url,
            "{ runsOrError { ... on Runs { results { runId status repositoryOrigin "
            "{ repositoryLocationName } } } } }",
        )["runsOrError"]["results"]
        assert {(r["runId"], r["status"]) for r in seen} == {(r.run_id, "SUCCESS") for r in runs}
        assert {r["repositoryOrigin"]["repositoryLocationName"] for r in seen} == {"interlink_pipeline"}
        # the writer pool, kept in PostgreSQL, queued the two runs (one sensor tick submitted both, below;
        # Dagster may start the second while the first runs or hold it until the pool is free, depending on
        # timing): no two steps ever wrote at once
        assert instance.event_log_storage.get_concurrency_info(WRITER_POOL).slot_count == 1
        spans = sorted(span for run in runs for span in step_spans(instance, run.run_id))
        assert len(spans) > 20 and all(a[1] <= b[0] for a, b in pairwise(spans))

    # the history lives in PostgreSQL, not in SQLite files under DAGSTER_HOME
    with psycopg2.connect(postgres_url) as con, con.cursor() as cursor:
        cursor.execute("SELECT run_id, status FROM runs")
        assert dict(cursor.fetchall()) == {r.run_id: "SUCCESS" for r in runs}
        cursor.execute("SELECT count(*) FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION'")
        assert cursor.fetchone()[0] > 20
        # the daemon's sensor ticks and cursor are there too: one tick started both runs, the rest nothing
        cursor.execute("SELECT tick_body FROM job_ticks ORDER BY id")
        ticks = [json.loads(body) for (body,) in cursor.fetchall()]
        inbox_ticks = [t for t in ticks if t["job_name"] == "crawl_inbox_sensor"]
        assert len(inbox_ticks) >= 2 and [set(t["run_ids"]) for t in inbox_ticks if t["run_ids"]] == [
            {r.run_id for r in runs}
        ]
    assert not list(home.rglob("*.db"))
    with duckdb.connect(str(warehouse), read_only=True) as con:
        planned = dict(con.execute("SELECT site, count(*) FROM graph.link_plan GROUP BY site").fetchall())
    assert set(planned) == {SAMPLE_HOST, LIGHT} and min(planned.values()) > 0
