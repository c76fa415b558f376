"""dbt marts inside the pipeline (per site, with lineage and tests as checks) and the analysts' snapshot."""

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from dagster_dbt import DbtProject

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.warehouse.database import connect
from interlink_pipeline.core.warehouse.snapshot import publish_snapshot, snapshot_path
from interlink_pipeline.core.warehouse.table_docs import mart_columns
from interlink_pipeline.definitions import build_defs
from interlink_pipeline.defs.publish.marts import marts
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import (
    DBT_DIR,
    LIGHT,
    NUTRI,
    PROJECT_ROOT,
    changed_light_crawl,
    register_lightchiropractic,
    run_site,
)
from interlink_pipeline_tests.site_runs import SiteFolder

MARTS = ("link_opportunities", "page_scorecard", "orphan_pages", "cluster_summary", "site_health")


def _dbt_checks(result):
    return [
        e.event_specific_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
        and e.event_specific_data.asset_key.path[0] in ("marts", "dbt_staging")
    ]


def _counts(con, table, by="site"):
    return dict(con.execute(f"SELECT {by}, count(*) FROM {table} GROUP BY ALL").fetchall())


def test_marts_are_built_per_site_with_checks_lineage_and_history(light_and_nutri, light_recrawled):
    light, nutri = light_and_nutri.for_site(LIGHT), light_and_nutri.for_site(NUTRI)
    assert light.success and nutri.success
    checks = _dbt_checks(light)
    assert len(checks) >= 30 and all(check.passed for check in checks)  # the dbt tests, as asset checks
    with connect(light_and_nutri.warehouse, read_only=True) as con:
        plan = _counts(con, "graph.link_plan")
        opportunities = _counts(con, "marts.link_opportunities")
        pages = _counts(con, "staging.pages")
        scorecard = _counts(con, "marts.page_scorecard")
        orphans = _counts(con, "marts.orphan_pages")
        orphans_before = con.execute(
            "SELECT orphan_pages FROM graph.site_metrics WHERE site = ? AND scenario = 'before'", [LIGHT]
        ).fetchone()[0]
        rescued = con.execute(
            "SELECT count(*) FROM marts.orphan_pages WHERE site = ? AND first_link_from IS NOT NULL", [LIGHT]
        ).fetchone()[0]
        clusters = _counts(con, "marts.cluster_summary")
        topics = _counts(con, "ml.clusters")
        nutri_rows = con.execute(
            "SELECT * FROM marts.link_opportunities WHERE site = ? ORDER BY link_key", [NUTRI]
        ).fetchall()
    assert opportunities == plan and scorecard == pages and clusters == topics
    # nutrisport: no inlinks, unknown; lightchiropractic's 5 utility orphans (client form, sample page, …)
    # are left to its menus
    assert orphans == {LIGHT: orphans_before} and rescued == orphans_before - 5
    assert orphans_before == 14

    # lineage: the marts sit downstream of the crawl
    graph = build_defs(str(light_and_nutri.warehouse), str(light_and_nutri.inbox)).resolve_asset_graph()
    upstream = graph.upstream_key_iterator(dg.AssetKey(["marts", "link_opportunities"]))
    assert {dg.AssetKey(["raw", "crawl_pages"]), dg.AssetKey(["graph", "link_plan"])} <= set(upstream)

    # a new crawl of one site: its rows are replaced, the other site's stay, site_health keeps both crawls
    assert light_recrawled.run.success
    with duckdb.connect(str(light_recrawled.folder.warehouse), read_only=True) as con:
        crawls_kept = con.execute(
            "SELECT count(DISTINCT crawl_id), count(*) FROM marts.site_health WHERE site = ?", [LIGHT]
        ).fetchone()
        pages_now = _counts(con, "marts.page_scorecard")
        assert (
            con.execute(
                "SELECT * FROM marts.link_opportunities WHERE site = ? ORDER BY link_key", [NUTRI]
            ).fetchall()
            == nutri_rows
        )
    assert crawls_kept == (2, 4)  # before and after of each crawl
    assert pages_now[LIGHT] == pages[LIGHT] - 1 and pages_now[NUTRI] == pages[NUTRI]


@dataclass
class Recrawled:
    """lightchiropractic re-crawled without one page, run through every step beside nutrisport, while an
    analyst held the published snapshot open."""

    folder: SiteFolder
    run: dg.ExecuteInProcessResult
    tables: set[str]  # what the snapshot held before the run
    scorecard_before: int  # marts.page_scorecard's rows the analyst read before the run
    scorecard_during: int  # and read again, still connected, once the run had published


@pytest.fixture(scope="session")
def light_recrawled(light_and_nutri, crawls, tmp_path_factory) -> Recrawled:
    root = tmp_path_factory.mktemp("recrawled")
    folder = light_and_nutri.folder.copy(root / "site")
    snapshot = snapshot_path(folder.warehouse)
    with duckdb.connect(str(snapshot), read_only=True) as analyst:
        before = analyst.execute("SELECT count(*) FROM marts.page_scorecard").fetchone()[0]
        tables = {
            f"{schema}.{name}"
            for schema, name in analyst.execute(
                "SELECT schema_name, table_name FROM duckdb_tables()"
            ).fetchall()
        }
        # the analyst keeps the snapshot open while the next crawl's run writes and publishes
        register_lightchiropractic(folder.inbox, crawls, changed_light_crawl(crawls, root))
        with dg.instance_for_test() as instance:
            run = run_site(folder.warehouse, folder.inbox, instance, LIGHT)
        during = analyst.execute("SELECT count(*) FROM marts.page_scorecard").fetchone()[0]
    return Recrawled(folder, run, tables, before, during)


def test_analysts_read_the_snapshot_while_a_run_writes(light_recrawled):
    snapshot = snapshot_path(light_recrawled.folder.warehouse)
    assert snapshot == light_recrawled.folder.warehouse.parent / "snapshots" / "interlink.duckdb"
    assert light_recrawled.run.success
    first = light_recrawled.scorecard_before
    assert light_recrawled.scorecard_during == first  # the open snapshot did not change under the analyst
    with duckdb.connect(str(snapshot), read_only=True) as analyst:
        assert analyst.execute("SELECT count(*) FROM marts.page_scorecard").fetchone()[0] == first - 1
        assert (
            analyst.execute(
                "SELECT count(DISTINCT crawl_id) FROM marts.site_health WHERE site = ?", [LIGHT]
            ).fetchone()[0]
            == 2
        )
    tables = light_recrawled.tables
    assert {"marts.link_opportunities", "graph.link_plan", "staging.pages"} <= tables
    assert not tables & {"ml.page_embeddings", "ml.embedding_cache", "serp.cache"}  # vectors left out
    # republished with the run's measurement: the snapshot's backtest rows are the warehouse's
    rows = "SELECT count(*) FROM graph.backtest_runs WHERE run_id = ?"
    run_id = light_recrawled.run.run_id
    with duckdb.connect(str(light_recrawled.folder.warehouse), read_only=True) as con:
        measured = con.execute(rows, [run_id]).fetchone()[0]
    with duckdb.connect(str(snapshot), read_only=True) as analyst:
        assert analyst.execute(rows, [run_id]).fetchone()[0] == measured == 1
    assert sorted(p.name for p in snapshot.parent.iterdir()) == ["interlink.duckdb"]  # no partial left


def test_a_site_whose_plan_became_empty_has_no_marts_rows_of_the_old_plan(light_recrawled, tmp_path):
    """delete+insert deletes only the keys its new rows carry: a plan of no links must still replace the
    site's rows (a re-crawl of copies of one page once left the old crawl's opportunities and orphans)."""
    folder = light_recrawled.folder.copy(tmp_path / "site")
    with connect(folder.warehouse) as con:
        nutri_before = con.execute(
            "SELECT * FROM marts.link_opportunities WHERE site = ? ORDER BY link_key", [NUTRI]
        ).fetchall()
        assert _counts(con, "marts.link_opportunities")[LIGHT] > 0
        con.execute("DELETE FROM graph.link_plan WHERE site = ?", [LIGHT])
    with dg.instance_for_test() as instance:
        assert run_site(folder.warehouse, folder.inbox, instance, LIGHT, steps=["marts"]).success
    with connect(folder.warehouse, read_only=True) as con:
        assert LIGHT not in _counts(con, "marts.link_opportunities")
        rescued = con.execute(
            "SELECT count(*) FROM marts.orphan_pages WHERE site = ? AND first_link_from IS NOT NULL", [LIGHT]
        ).fetchone()[0]
        nutri_after = con.execute(
            "SELECT * FROM marts.link_opportunities WHERE site = ? ORDER BY link_key", [NUTRI]
        ).fetchall()
    assert rescued == 0 and nutri_after == nutri_before  # the other site's rows stay


def test_a_patched_snapshot_copies_only_the_changed_tables_again(tmp_path):
    """published_measurement's snapshot: the one published with the plan, its backtest table copied again;
    without an earlier snapshot every table is copied."""
    warehouse, published = tmp_path / "w.duckdb", tmp_path / "snapshots" / "interlink.duckdb"
    with duckdb.connect(str(warehouse)) as con:
        con.execute("CREATE SCHEMA graph; CREATE TABLE graph.backtest_runs AS SELECT 1 AS run")
        con.execute("CREATE TABLE graph.link_plan AS SELECT 1 AS link")
    assert publish_snapshot(warehouse, published) == {"graph.backtest_runs": 1, "graph.link_plan": 1}
    with duckdb.connect(str(warehouse)) as con:  # the backtest adds its row; a stray write to the plan
        con.execute("INSERT INTO graph.backtest_runs VALUES (2); INSERT INTO graph.link_plan VALUES (2)")
    patched = tmp_path / "measured" / "interlink.duckdb"
    changed = frozenset({"graph.backtest_runs"})
    assert publish_snapshot(warehouse, patched, patching=(published, changed)) == {"graph.backtest_runs": 2}
    with duckdb.connect(str(patched), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM graph.backtest_runs").fetchone()[0] == 2
        assert con.execute("SELECT count(*) FROM graph.link_plan").fetchone()[0] == 1  # as published
    fresh = tmp_path / "fresh" / "interlink.duckdb"
    assert publish_snapshot(warehouse, fresh, patching=(tmp_path / "none.duckdb", changed)) == {
        "graph.backtest_runs": 2,
        "graph.link_plan": 2,
    }


def test_a_snapshot_of_a_missing_warehouse_says_so_and_writes_nothing(tmp_path):
    target = tmp_path / "snapshots" / "interlink.duckdb"
    with pytest.raises(InputError, match="no warehouse file yet; materialise a site first"):
        publish_snapshot(tmp_path / "nothing.duckdb", target)
    assert not target.exists() and not target.parent.exists()  # nothing written, not even the folder


def _documented_queries() -> list[str]:
    """Every SQL statement of docs/querying.md (the README's examples are among them: test_project.py)."""
    page = (PROJECT_ROOT / "docs" / "querying.md").read_text()
    blocks = re.findall(r"```sql\n(.*?)```", page, re.S)
    return [statement.strip() for block in blocks for statement in block.split(";") if statement.strip()]


def test_the_documented_queries_return_rows_and_every_column_is_documented(sample_site, instance, tmp_path):
    result = sample_site
    assert result.success
    for run in result.runs:  # dbt's target folders (marts-<run>-<invocation>) are removed once read
        assert not list((PROJECT_ROOT / "dbt" / "target").glob(f"marts-{run.run_id[:7]}-*"))
    site = sample_site.folder.copy(tmp_path / "site")  # dbt opens the file to write
    warehouse_path, sample_inbox = site.warehouse, site.inbox
    # every check is the site's own: a failure on another site leaves these green
    evaluations = [
        e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    assert len(evaluations) > 60 and {e.partition for e in evaluations} == {SAMPLE_HOST}
    # the dbt tests executed on their own, as the UI's "Execute" does for the site chosen
    tests = build_defs(str(warehouse_path), str(sample_inbox)).resolve_implicit_global_asset_job_def()
    tests = tests.get_subset(asset_check_selection=set(marts.check_keys), asset_selection=set())
    instance.add_dynamic_partitions("sites", [SAMPLE_HOST])
    rerun = tests.execute_in_process(instance=instance, partition_key=SAMPLE_HOST, raise_on_error=False)
    assert rerun.success and len(_dbt_checks(rerun)) == len(marts.check_keys)
    assert {check.partition for check in _dbt_checks(rerun)} == {SAMPLE_HOST}
    queries = _documented_queries()
    assert len(queries) >= 12
    with duckdb.connect(str(snapshot_path(warehouse_path)), read_only=True) as analyst:
        empty = [query for query in queries if not analyst.execute(query).fetchall()]
        undocumented = analyst.execute(
            "SELECT schema_name || '.' || table_name || '.' || column_name FROM duckdb_columns() "
            "WHERE NOT internal AND coalesce(comment, '') = ''"
        ).fetchall()
        tables = analyst.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE NOT internal AND coalesce(comment, '') = ''"
        )
        untitled = tables.fetchone()[0]
        unreachable = analyst.execute(
            "SELECT count(*) FROM graph.page_metrics WHERE depth_after < 0 OR depth_before < 0"
        ).fetchone()[0]
        hubs = analyst.execute("SELECT count(*) FROM marts.page_scorecard WHERE is_hub").fetchone()[0]
        comments = dict(
            analyst.execute(
                "SELECT column_name, comment FROM duckdb_columns() WHERE schema_name = 'marts' "
                "AND table_name = 'page_scorecard'"
            ).fetchall()
        )
    assert empty == [] and undocumented == [] and untitled == 0
    assert unreachable == 0  # no path is null, not -1
    assert hubs > 0  # the sample's home page already links its sections: they are its hubs
    assert comments["depth_before"] == mart_columns()["marts.page_scorecard"][1]["depth_before"]

    # dbt docs: every model, and every column the warehouse has for it, carries a description
    docs = tmp_path / "dbt_docs"
    dbt_vars = json.dumps({"duckdb_path": str(warehouse_path)})
    command = ["docs", "generate", "--project-dir", DBT_DIR, "--profiles-dir", DBT_DIR, "--target-path", docs]
    subprocess.run([Path(sys.executable).with_name("dbt"), *command, "--vars", dbt_vars], check=True)
    catalog = json.loads((docs / "catalog.json").read_text())["nodes"]
    manifest = json.loads((docs / "manifest.json").read_text())["nodes"]
    models = [key for key in catalog if key.startswith("model.")]
    assert len(models) == len(list(DBT_DIR.glob("models/*/*.sql")))
    assert [key for key in models if not manifest[key]["description"]] == []
    described = {key: {c for c, v in manifest[key]["columns"].items() if v["description"]} for key in models}
    assert [f"{key}.{c}" for key in models for c in catalog[key]["columns"] if c not in described[key]] == []
    texts = [v["description"] for key in models for v in manifest[key]["columns"].values()]
    assert not [text for text in texts if "{{" in text]  # doc() references rendered


def test_dagster_dev_parses_the_dbt_project_with_this_environments_dbt(tmp_path, monkeypatch):
    """Under `dagster dev` the manifest is prepared on load, with the venv's dbt even when the venv is not
    activated (dbt not on PATH); elsewhere it is never parsed on load."""
    from dagster_shared.record import replace

    from interlink_pipeline.defs.publish.marts import EnvironmentDbtPreparer

    project_dir = tmp_path / "dbt"
    shutil.copytree(DBT_DIR, project_dir, ignore=shutil.ignore_patterns("target", "logs"))
    project = replace(
        DbtProject(project_dir=project_dir, profiles_dir=project_dir), preparer=EnvironmentDbtPreparer()
    )
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("DAGSTER_IS_DEV_CLI", raising=False)
    project.prepare_if_dev()
    assert not project.manifest_path.exists()
    monkeypatch.setenv("DAGSTER_IS_DEV_CLI", "1")
    project.prepare_if_dev()
    assert "model.interlink.site_health" in json.loads(project.manifest_path.read_text())["nodes"]


def test_the_dbt_version_the_marts_assume_is_the_one_dbt_reports():
    """EnvironmentDbt skips dagster-dbt's `dbt --version` call by reading the installed dbt-core: the two
    must agree, or dagster-dbt would treat dbt by the wrong version's rules."""
    from packaging.version import Version

    from interlink_pipeline.defs.publish.marts import DBT_EXECUTABLE, EnvironmentDbt, dbt_project

    reported = subprocess.run([DBT_EXECUTABLE, "--version"], capture_output=True, text=True, check=True)
    installed = re.search(r"installed: (\d+\.\d+\.\d+)", reported.stdout)
    assert installed, reported.stdout
    dbt = EnvironmentDbt(project_dir=dbt_project, dbt_executable=DBT_EXECUTABLE)
    assert dbt._cli_version == Version(installed.group(1))
