"""docs/deployment.md's deployment beyond one machine, for real on loopback: a Dagster instance on PostgreSQL
(deploy/dagster.yaml), a DuckLake warehouse (its catalog in PostgreSQL, its Parquet files in a shared folder),
Redis as Celery's broker, and five processes that could each be a machine of its own: the code server, the
daemon, the webserver and two Celery workers (deploy/celery.yaml), each with a Dagster home of its own. Three
crawls dropped at once become three runs that the workers execute, writing the lake at the same time. The
crawls are small generated sites without links exports: what this tests is where runs go and what they share
(the real crawls' runs on a lake are test_lake's, compared with a file's)."""

import json
import os
import re
import shutil
import sys
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import dagster as dg
import psycopg2
from dagster_celery.tags import DAGSTER_CELERY_TASK_ID_TAG

from interlink_pipeline.core.ingest.inbox import register_crawl
from interlink_pipeline.core.warehouse.database import connect
from interlink_pipeline.sample import generate_site, write_site
from interlink_pipeline_tests.helpers import PROJECT_ROOT
from interlink_pipeline_tests.services import (
    free_port,
    http_ok,
    redis_server,
    service,
    step_spans,
    wait_for,
)

DEPLOY = PROJECT_ROOT / "deploy"
SITES = ("www.first.example", "www.second.example", "www.third.example")
WORKERS = ("worker-a", "worker-b")


def _graphql(url: str, query: str) -> dict:
    request = urllib.request.Request(
        f"{url}/graphql", json.dumps({"query": query}).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["data"]


def _machine(tmp_path: Path, name: str, env: dict[str, str]) -> dict[str, str]:
    """The environment of one machine of the deployment: its own Dagster home, holding deploy/dagster.yaml."""
    home = tmp_path / name
    home.mkdir()
    shutil.copyfile(DEPLOY / "dagster.yaml", home / "dagster.yaml")
    return {**env, "DAGSTER_HOME": str(home)}


def _received(log: Path) -> set[str]:
    """The Celery task ids a worker's log says it received."""
    return set(re.findall(r"Task execute_job\[([0-9a-f-]+)\] received", log.read_text()))


def test_crawls_dropped_at_once_run_on_two_celery_workers_into_one_lake(
    postgres_port, new_database, tmp_path, model_cache, monkeypatch
):
    history, catalog = new_database("dagster"), new_database("lake")
    lake = f"ducklake:postgres:dbname={catalog} host=127.0.0.1 port={postgres_port} user=postgres"
    # what every machine mounts: the drop folder, the lake's Parquet files and the files beside its tables
    shared = tmp_path / "shared"
    inbox = shared / "inbox"
    inbox.mkdir(parents=True)
    settings = {
        # SQLAlchemy 2.1 maps a bare postgresql:// to psycopg 3; dagster-postgres brings psycopg2
        "DAGSTER_PG_URL": f"postgresql+psycopg2://postgres@127.0.0.1:{postgres_port}/{history}",
        "INTERLINK_WAREHOUSE": lake,
        "INTERLINK_LAKE_DATA_PATH": str(shared / "lake-data"),
        "INTERLINK_LAKE_FILES": str(shared / "files"),
        "INTERLINK_INBOX": str(inbox),
        "INTERLINK_MODEL_CACHE": str(model_cache),
        "DAGSTER_COMPUTE_LOG_DIR": str(shared / "compute-logs"),
        "INTERLINK_INBOX_SCAN_SECONDS": "5",  # the drops are seen in seconds, not half a minute
    }
    for name, value in settings.items():  # this process reads the lake as an analyst's machine would
        monkeypatch.setenv(name, value)
    crawls = {
        site: write_site(generate_site(200, seed=seed, host=site, with_links=False), tmp_path / site)["crawl"]
        for seed, site in enumerate(SITES)
    }
    code_port, web_port = free_port(), free_port()
    bin_dir = Path(sys.executable).parent
    workspace = str(DEPLOY / "workspace.yaml")
    code_server = [str(bin_dir / "dagster"), "code-server", "start", "-m", "interlink_pipeline.definitions"]
    code_server += ["-h", "127.0.0.1", "-p", str(code_port)]
    daemon = [str(bin_dir / "dagster-daemon"), "run", "-w", workspace]
    webserver = [str(bin_dir / "dagster-webserver"), "-w", workspace, "-h", "127.0.0.1", "-p", str(web_port)]
    worker = [str(bin_dir / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app"]
    worker += ["-y", str(DEPLOY / "celery.yaml")]
    logs = {name: tmp_path / f"{name}.log" for name in ("code-server", "daemon", "webserver", *WORKERS)}
    url = f"http://127.0.0.1:{web_port}"
    with ExitStack() as running:
        broker = running.enter_context(redis_server())
        env = {
            **os.environ,
            **settings,
            "DAGSTER_CELERY_BROKER_URL": broker,
            "INTERLINK_CODE_SERVER_HOST": "127.0.0.1",
            "INTERLINK_CODE_SERVER_PORT": str(code_port),
            # the worker command starts `celery`, found on the PATH as in an activated environment
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        }
        server = _machine(tmp_path, "server", env)
        for command, name in ((code_server, "code-server"), (daemon, "daemon"), (webserver, "webserver")):
            running.enter_context(service(command, logs[name], cwd=PROJECT_ROOT, env=server))
        for name in WORKERS:  # one run at a time each, from a folder of its own (not the checkout)
            command = [*worker, "-n", name, "--", "--concurrency", "1"]
            machine = _machine(tmp_path, name, env)
            running.enter_context(service(command, logs[name], cwd=tmp_path, env=machine))
        instance = running.enter_context(dg.DagsterInstance.from_config(server["DAGSTER_HOME"]))
        wait_for(lambda: http_ok(f"{url}/server_info"), 180, "the webserver", *logs.values())
        for name in WORKERS:
            wait_for(lambda n=name: " ready." in logs[n].read_text(), 120, f"{name}", logs[name])
        for site, crawl in crawls.items():
            register_crawl(inbox, site, crawl)

        def all_finished():
            runs = instance.get_runs(filters=dg.RunsFilter(tags={"interlink/trigger": "inbox"}))
            return runs if len(runs) == 3 and all(r.is_finished for r in runs) else None

        runs = wait_for(all_finished, 1200, "three inbox runs to finish", *logs.values())
        failed = [r.run_id for r in runs if r.status != dg.DagsterRunStatus.SUCCESS]
        assert not failed, [logs[name].read_text()[-4000:] for name in ("daemon", *WORKERS)]
        assert {r.tags["dagster/partition"] for r in runs} == set(SITES)

        # the workers executed the runs, both of them: each took the Celery task the daemon sent for a run
        # (and nothing but runs)
        received = {name: _received(logs[name]) for name in WORKERS}
        assert all(received.values()), received
        sent = {r.tags.get(DAGSTER_CELERY_TASK_ID_TAG) for r in instance.get_runs()}
        assert {r.tags[DAGSTER_CELERY_TASK_ID_TAG] for r in runs} <= set.union(*received.values()) <= sent
        # and the lake took their writes at the same time: steps of two sites overlapped
        spans = [(r.run_id, span) for r in runs for span in step_spans(instance, r.run_id)]
        assert any(a != b and s[0] < t[1] and t[0] < s[1] for a, s in spans for b, t in spans)

        # the webserver reads the same history: every run, successful, from the code server's location
        seen = _graphql(
            url,
            "{ runsOrError { ... on Runs { results { runId status repositoryOrigin "
            "{ repositoryLocationName } } } } }",
        )["runsOrError"]["results"]
        assert {(r["runId"], r["status"]) for r in seen} == {(r.run_id, "SUCCESS") for r in runs}
        assert {r["repositoryOrigin"]["repositoryLocationName"] for r in seen} == {"interlink_pipeline"}

    # the history lives in PostgreSQL, not in SQLite files under any machine's Dagster home
    with psycopg2.connect(settings["DAGSTER_PG_URL"].replace("+psycopg2", "")) as con, con.cursor() as cursor:
        cursor.execute("SELECT run_id, status FROM runs")
        assert dict(cursor.fetchall()) == {r.run_id: "SUCCESS" for r in runs}
        cursor.execute("SELECT count(*) FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION'")
        assert cursor.fetchone()[0] > 30
        # the daemon's sensor ticks and cursor are there too: its ticks started every run, once
        cursor.execute("SELECT tick_body FROM job_ticks ORDER BY id")
        ticks = [json.loads(body) for (body,) in cursor.fetchall()]
        started = [run_id for t in ticks if t["job_name"] == "crawl_inbox_sensor" for run_id in t["run_ids"]]
        assert sorted(started) == sorted(r.run_id for r in runs)
    homes = [tmp_path / name for name in ("server", *WORKERS)]
    assert all((home / "dagster.yaml").exists() and not list(home.rglob("*.db")) for home in homes)
    # the steps' output, written on the workers, is in the shared folder where the webserver reads it
    assert all((shared / "compute-logs" / r.run_id).is_dir() for r in runs)
    # every site's plan is in the lake, each site's rows in Parquet files of its own
    with connect(lake, read_only=True) as con:
        planned = dict(con.execute("SELECT site, count(*) FROM graph.link_plan GROUP BY site").fetchall())
        listed = "SELECT data_file FROM ducklake_list_files('lake', 'link_plan', schema => 'graph')"
        files = con.execute(listed)
        folders = {path.split("/")[-2] for (path,) in files.fetchall()}
    assert set(planned) == set(SITES) and min(planned.values()) > 0
    assert folders == {f"site={site}" for site in planned}


def test_the_top_level_workspace_file_loads_the_pipeline_in_the_webserver(tmp_path, model_cache):
    """The design card's workspace.yaml, beside pyproject.toml: `dagster-webserver -w workspace.yaml` loads
    the code location and shows its assets and jobs."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(PROJECT_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "DAGSTER_HOME": str(home), "INTERLINK_WAREHOUSE": str(tmp_path / "interlink.duckdb"),
           "INTERLINK_INBOX": str(tmp_path / "inbox"), "INTERLINK_MODEL_CACHE": str(model_cache)}  # fmt: skip
    port, log = free_port(), tmp_path / "webserver.log"
    webserver = Path(sys.executable).with_name("dagster-webserver")
    command = [str(webserver), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)]
    url = f"http://127.0.0.1:{port}"
    with service(command, log, cwd=PROJECT_ROOT, env=env):
        wait_for(lambda: http_ok(f"{url}/server_info"), 180, "the webserver", log)
        entries = _graphql(
            url,
            "{ workspaceOrError { ... on Workspace { locationEntries { name locationOrLoadError { "
            "... on RepositoryLocation { repositories { jobs { name } assetNodes { assetKey { path } } } } "
            "... on PythonError { message } } } } } }",
        )["workspaceOrError"]["locationEntries"]
    assert [entry["name"] for entry in entries] == ["interlink_pipeline"]
    (repository,) = entries[0]["locationOrLoadError"]["repositories"]
    assets = {"/".join(node["assetKey"]["path"]) for node in repository["assetNodes"]}
    assert {"graph/link_plan", "ml/page_embeddings", "raw/crawl_pages"} <= assets
    assert "site_pipeline" in {job["name"] for job in repository["jobs"]}
