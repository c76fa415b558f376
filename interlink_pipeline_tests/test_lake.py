"""The DuckLake warehouse, for real: a PostgreSQL catalog on loopback, Parquet in a folder, several processes
writing at once. Skips, saying why, where PostgreSQL is not installed."""

import datetime
import json
import os
import subprocess
import sys

import duckdb
import polars as pl
import pytest

from benchmarks.red_team_sql import REFUSALS
from interlink_pipeline.core.environment import FAULT_ENV
from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
from interlink_pipeline.core.ingest.pages import clean_pages
from interlink_pipeline.core.warehouse import lake as lakes
from interlink_pipeline.core.warehouse.analyst_shell import shell_command
from interlink_pipeline.core.warehouse.database import connect, query
from interlink_pipeline.core.warehouse.store import read_site, replace_site_rows
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import PROJECT_ROOT, SAMPLE_DIR

SITES = [f"site{n}.example" for n in range(4)]
TABLES = ("raw.crawl_pages", "staging.pages", "staging.excluded_pages")

# Each child replaces its site's rows of the same three tables three times, all children at once: DuckLake
# checks conflicts per table, so without the table locks most of these commits would fail.
WRITER = """
import sys, time
import polars as pl
from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
from interlink_pipeline.core.ingest.pages import clean_pages
from interlink_pipeline.core.ml.page_embeddings import vectors_frame
from interlink_pipeline.core.warehouse.store import merge_rows, replace_site_rows
import numpy as np

site, start = sys.argv[1], float(sys.argv[2])
raw = read_crawl_export({crawl!r}, {host!r}).frame
cleaned = clean_pages(raw, {host!r})
frames = {{"raw.crawl_pages": raw, "staging.pages": cleaned.pages}}
frames = {{t: f.with_columns(pl.lit(site).alias("site")) for t, f in frames.items()}}
frames["staging.excluded_pages"] = cleaned.excluded.with_columns(pl.lit(site).alias("site"))
hashes = pl.Series([f"{{i:032x}}" for i in range(50)])
cache = vectors_frame("m", hashes, np.full((50, 4), 0.5, dtype=np.float32))
time.sleep(max(0.0, start - time.time()))
for _ in range(3):
    replace_site_rows({location!r}, site, frames)
    merge_rows({location!r}, "ml.embedding_cache", cache, key=["model", "text_hash"])
print("ok")
"""


def sample_frames(site: str) -> dict[str, pl.DataFrame]:
    raw = read_crawl_export(SAMPLE_DIR / "internal_all.csv", SAMPLE_HOST).frame
    cleaned = clean_pages(raw, SAMPLE_HOST)
    frames = {
        "raw.crawl_pages": raw,
        "staging.pages": cleaned.pages,
        "staging.excluded_pages": cleaned.excluded,
    }
    return {table: frame.with_columns(pl.lit(site).alias("site")) for table, frame in frames.items()}


def site_rows(location: str, table: str, site: str) -> pl.DataFrame:
    return read_site(location, table, site).sort(pl.all())


def test_four_processes_write_their_sites_into_one_lake_at_once(lake):
    import time

    script = WRITER.format(crawl=str(SAMPLE_DIR / "internal_all.csv"), host=SAMPLE_HOST, location=lake)
    start = time.time() + 8  # every child has imported and read the crawl by then
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, site, str(start)],
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for site in SITES
    ]
    outcomes = [child.communicate(timeout=600) for child in children]
    assert [child.returncode for child in children] == [0] * 4, [err[-3000:] for _, err in outcomes]

    for site in SITES:  # each site's rows, whole and only once: none lost, none of another site
        expected = sample_frames(site)
        for table in TABLES:
            stored, wanted = site_rows(lake, table, site), expected[table]
            if table == "raw.crawl_pages":  # read by each child at its own time
                stored, wanted = stored.drop("loaded_at"), wanted.drop("loaded_at")
            assert stored.sort(pl.all()).equals(wanted.sort(pl.all())), (table, site)
    with connect(lake, read_only=True) as con:
        # the shared cache got each key once, though four writers added the same keys three times each
        assert con.execute(
            "SELECT count(*), count(DISTINCT text_hash) FROM ml.embedding_cache"
        ).fetchone() == (
            50,
            50,
        )
        # the tables are partitioned by site: each site's rows are files of their own
        files = con.execute("SELECT data_file FROM ducklake_list_files('lake', 'pages', schema => 'staging')")
        folders = {path.split("/")[-2] for (path,) in files.fetchall()}
    assert folders == {f"site={site}" for site in SITES}


# A writer killed (core/faults.py) once staging.pages' rows are inserted, before its commit.
KILLED_WRITER = """
import sys
from interlink_pipeline.core.warehouse import store
from interlink_pipeline_tests.test_lake import sample_frames
frames = sample_frames({site!r})
store.replace_site_rows({location!r}, {site!r}, {{t: f.head(7) for t, f in frames.items()}})
sys.exit("not killed")
"""


def test_a_writer_killed_mid_write_leaves_the_previous_rows_and_frees_its_tables(lake):
    site = SITES[0]
    replace_site_rows(lake, site, sample_frames(site))
    before = {table: site_rows(lake, table, site) for table in TABLES}
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER.format(site=site, location=lake)],
        cwd=PROJECT_ROOT,
        env={**os.environ, FAULT_ENV: "after-insert:staging.pages"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -9, killed.stderr[-3000:]
    for table in TABLES:  # the last committed snapshot, whole
        assert site_rows(lake, table, site).equals(before[table]), table
    # its table locks went with its connection: the next write does not wait, and commits
    smaller = {table: frame.head(5) for table, frame in sample_frames(site).items()}
    replace_site_rows(lake, site, smaller)
    assert all(site_rows(lake, table, site).height == 5 for table in TABLES)
    # the failed attempt left no rows in any snapshot: the lake went from the first write to the last
    with connect(lake, read_only=True) as con:
        changes = con.execute(
            "SELECT count(*) FROM lake.snapshots() WHERE changes['tables_inserted_into'] IS NOT NULL"
        ).fetchone()[0]
    assert changes == 2


def test_time_travel_reads_an_earlier_run(lake):
    site = SITES[1]
    replace_site_rows(lake, site, sample_frames(site))
    with connect(lake, read_only=True) as con:
        first = lakes.current_snapshot(con)
    replace_site_rows(lake, site, {table: frame.head(3) for table, frame in sample_frames(site).items()})
    with connect(lake, read_only=True) as con:
        now = con.execute("SELECT count(*) FROM staging.pages WHERE site = ?", [site]).fetchone()[0]
        then = con.execute(
            f"SELECT count(*) FROM staging.pages AT (VERSION => {first}) WHERE site = ?", [site]
        ).fetchone()[0]
    assert (now, then) == (3, sample_frames(site)["staging.pages"].height)


def test_the_analysts_shell_reads_the_lake_and_nothing_else(lake, tmp_path):
    replace_site_rows(lake, SITES[2], sample_frames(SITES[2]))
    shell = shell_command(lake, tmp_path / "no-snapshot.duckdb", output="csv")
    outside = tmp_path / "outside"  # beside the lake's data folder
    outside.mkdir()

    def typed(sql: str) -> subprocess.CompletedProcess:
        return subprocess.run(shell, input=sql + "\n", capture_output=True, text=True)

    # the tables' data (Parquet in the lake's data folder) is read; the catalog is read-only
    done = typed("SELECT count(*) AS pages, count(DISTINCT title) > 0 AS read FROM staging.pages;")
    assert done.stdout.splitlines()[1:] == [f"{sample_frames('x')['staging.pages'].height},true"], done.stderr
    assert "read-only mode" in typed("INSERT INTO staging.pages SELECT * FROM staging.pages;").stderr
    # safe mode: no file outside the data folder, no other database, no command, no setting changed back
    for attack in ("SELECT * FROM read_csv('/etc/passwd');", f"ATTACH '{outside}/w.duckdb' AS w;",
                   f"COPY (SELECT 1) TO '{outside}/leak.csv';", f".shell touch {outside}/pwned",
                   "SET allowed_directories = ['/'];"):  # fmt: skip
        refused = typed(attack)
        said = refused.stderr
        assert refused.returncode != 0 and any(r in said for r in REFUSALS), (attack, said)
    assert not list(outside.iterdir())


def test_lake_settings_are_checked(lake, monkeypatch):
    with pytest.raises(InputError, match="a lake warehouse is `ducklake:postgres:dbname="):
        lakes.catalog_dsn("ducklake:")
    with monkeypatch.context() as unset:
        unset.delenv("INTERLINK_LAKE_DATA_PATH")
        with pytest.raises(InputError, match="INTERLINK_LAKE_DATA_PATH is not set"):
            replace_site_rows(lake, SITES[3], sample_frames(SITES[3]))
    assert read_site(lake, "staging.pages", SITES[3]).is_empty()  # nothing was written
    unreachable = "ducklake:postgres:dbname=lake host=127.0.0.1 port=1 user=postgres password=hunter2"
    with pytest.raises(InputError, match="cannot open the lake warehouse") as raised:
        read_site(unreachable, "staging.pages", SITES[3])
    assert "hunter2" not in str(raised.value)
    assert not isinstance(raised.value.__cause__, duckdb.Error)


def test_the_lake_keeps_its_parquet_files_on_s3(lake, monkeypatch):
    """INTERLINK_LAKE_DATA_PATH=s3://… with the AWS variables: a local S3 (moto's server) holds the files."""
    from interlink_pipeline_tests.services import s3_server

    with s3_server("interlink") as (url, client):
        for variable, value in {
            "INTERLINK_LAKE_DATA_PATH": "s3://interlink/lake/",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": url,
        }.items():
            monkeypatch.setenv(variable, value)
        frames = sample_frames(SITES[0])
        replace_site_rows(lake, SITES[0], frames)
        for table, frame in frames.items():
            assert site_rows(lake, table, SITES[0]).equals(frame.sort(pl.all())), table
        listed = client.list_objects_v2(Bucket="interlink")
    objects = [entry["Key"] for entry in listed["Contents"]]
    assert objects and all(key.startswith("lake/") and key.endswith(".parquet") for key in objects)
    assert any(f"/pages/site={SITES[0]}/" in key for key in objects), objects


def test_pages_written_to_the_lake_read_back_typed(lake):
    frames = sample_frames(SITES[3])
    replace_site_rows(lake, SITES[3], frames)
    stored = read_site(lake, "staging.pages", SITES[3])
    assert stored.schema == frames["staging.pages"].select(stored.columns).schema


# Columns that differ between any two runs of the same inputs: when and in which run a row was made.
RUN_COLUMNS = {"run_id", "fitted_in_run", "measured_in_run", "scored_by", "seconds"}


def comparable(frame: pl.DataFrame) -> pl.DataFrame:
    kept = [c for c, t in frame.schema.items() if c not in RUN_COLUMNS and not isinstance(t, pl.Datetime)]
    if "model_path" in frame.columns:  # under the warehouse's files folder, which differs by warehouse
        frame = frame.with_columns(pl.col("model_path").str.replace(r"^.*/models/", "models/"))
    return frame.select(kept).sort(pl.all(), nulls_last=True)


def site_tables(warehouse: str, site: str) -> dict[str, pl.DataFrame]:
    """Every table's rows of `site`: the pipeline's and dbt's marts."""
    from interlink_pipeline.core.warehouse.contract import table_columns
    from interlink_pipeline.core.warehouse.schemas import TABLES as CONTRACT

    with connect(warehouse, read_only=True) as con:
        marts = [
            f"marts.{name}"
            for (name,) in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'marts' ORDER BY 1"
            ).fetchall()
        ]
        rows = {table: con.execute(f"SELECT * FROM {table} WHERE site = ?", [site]).pl() for table in marts}
    per_site = [table for table in CONTRACT if "site" in table_columns(table)]
    return rows | {table: read_site(warehouse, table, site) for table in per_site}


def test_two_sites_run_at_once_on_the_lake_as_they_run_alone_on_a_file(
    lake, tmp_path, crawls, cli_env, light_and_nutri
):
    """Two `interlink materialize` processes on two sites at once (one with its links export: a ranker of
    its own and a backtest; one without), on one lake and the project's Dagster instance (whose writer pool
    of 1 a lake's steps do not join): every table (the marts too) holds for each site exactly what a run on
    a file warehouse holds (the session's runs of the same exports), and the two runs' writing steps
    overlapped in time."""
    import dagster as dg

    from interlink_pipeline_tests.helpers import LIGHT, NUTRI, call_cli
    from interlink_pipeline_tests.services import step_spans

    inbox = tmp_path / "inbox"
    env = {**cli_env, "INTERLINK_WAREHOUSE": lake, "INTERLINK_INBOX": str(inbox)}
    light = crawls / "lightchiropractic"
    exports = {
        LIGHT: ["--links", str(light / "all_inlinks.csv"), str(light / "internal_all.csv")],
        NUTRI: [str(crawls / "nutrisport/internal_html.csv")],
    }
    for site, files in exports.items():
        registered = call_cli(env, "register", *files, "--site", site)
        assert registered.returncode == 0, registered.stderr
    sites = list(exports)
    home = env["DAGSTER_HOME"]  # the project's instance: the writer pool of 1, one run per site
    command = [sys.executable, "-m", "interlink_pipeline.cli", "materialize", "--site"]
    children = [
        subprocess.Popen(
            [*command, site],
            env=env,
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for site in sites
    ]
    outputs = [child.communicate(timeout=1200)[0] for child in children]
    assert [child.returncode for child in children] == [0, 0], [out[-4000:] for out in outputs]

    with dg.DagsterInstance.from_config(home) as instance:
        runs = {run.tags["dagster/partition"]: run for run in instance.get_runs()}
        spans = {site: step_spans(instance, runs[site].run_id) for site in sites}
    overlapping = [(a, b) for a in spans[sites[0]] for b in spans[sites[1]] if a[0] < b[1] and b[0] < a[1]]
    assert overlapping, spans

    assert light_and_nutri.success
    differ, rows = [], {}
    for site in sites:
        on_lake, on_file = site_tables(lake, site), site_tables(str(light_and_nutri.warehouse), site)
        assert set(on_lake) == set(on_file)
        for table in on_file:
            rows[table] = rows.get(table, 0) + on_file[table].height
            if not comparable(on_lake[table]).equals(comparable(on_file[table])):
                differ.append((site, table))
    assert not differ
    # nothing compared was empty on both sites (nutrisport has no links: no backtest, no links of its own;
    # no editor has decided anything, no crawl came after a plan to find its links live, and neither has a
    # Search Console export)
    empty = {"ops.run_failures", "raw.page_text", "raw.search_console", "graph.link_decisions",
             "graph.live_links", "marts.decisions", "marts.adoption_by_week"}  # fmt: skip
    assert {table for table, n in rows.items() if n == 0} == empty


def test_maintenance_compacts_the_lake_and_deletes_what_time_travel_no_longer_reaches(lake, tmp_path):
    import numpy as np

    from interlink_pipeline.core.ml.page_embeddings import vectors_frame
    from interlink_pipeline.core.warehouse.lake_maintenance import MaintenanceOptions, maintain
    from interlink_pipeline.core.warehouse.store import merge_rows

    site, frames = SITES[0], sample_frames(SITES[0])
    for rows in (50, 60, 70):  # three runs: each replaces the site's rows with new files
        replace_site_rows(lake, site, {table: frame.head(rows) for table, frame in frames.items()})
    for batch in range(3):  # three runs add to the shared cache: three small files side by side
        hashes = pl.Series([f"{batch:04x}{i:028x}" for i in range(20)])
        merge_rows(
            lake,
            "ml.embedding_cache",
            vectors_frame("m", hashes, np.full((20, 4), 0.5, np.float32)),
            ["model", "text_hash"],
        )
    cache_files = "SELECT count(*) FROM ducklake_list_files('lake', 'embedding_cache', schema => 'ml')"
    with connect(lake, read_only=True) as con:
        first = con.execute("SELECT min(snapshot_id) FROM lake.snapshots()").fetchone()[0]
        assert con.execute(cache_files).fetchone()[0] == 3
    latest = {table: site_rows(lake, table, site) for table in TABLES}
    on_disk = len(list((tmp_path / "lake-data").rglob("*.parquet")))

    kept = maintain(lake)  # the defaults: a week of time travel, an hour's grace for files
    assert kept.files_deleted == 0 and kept.after.snapshots >= kept.before.snapshots  # none expired

    report = maintain(lake, MaintenanceOptions(keep_snapshots_days=0, file_grace_hours=0))
    assert report.after.snapshots < report.before.snapshots
    assert report.after.live_files == kept.after.live_files  # compacted by the first call already
    assert kept.after.live_files == kept.before.live_files - 2  # the cache's three files merged into one
    assert report.files_deleted > 0
    # the merged files and the replaced ones are gone from the folder; the merged cache's file was added
    assert len(list((tmp_path / "lake-data").rglob("*.parquet"))) == on_disk + 1 - report.files_deleted
    with connect(lake, read_only=True) as con:
        assert con.execute(cache_files).fetchone()[0] == 1
        assert con.execute("SELECT count(DISTINCT text_hash) FROM ml.embedding_cache").fetchone()[0] == 60
    for table in TABLES:  # the current rows are untouched
        assert site_rows(lake, table, site).equals(latest[table]), table
    with connect(lake, read_only=True) as con, pytest.raises(duckdb.Error):  # expired: time travel ends
        con.execute(f"SELECT count(*) FROM staging.pages AT (VERSION => {first})").fetchone()


def test_the_maintenance_job_and_its_schedule(lake, tmp_path):
    import dagster as dg

    from interlink_pipeline.defs.resources import Warehouse
    from interlink_pipeline.defs.warehouse.maintenance import lake_maintenance, lake_maintenance_schedule

    replace_site_rows(lake, SITES[1], sample_frames(SITES[1]))
    replace_site_rows(lake, SITES[1], sample_frames(SITES[1]))
    config = {"ops": {"maintain_lake": {"config": {"keep_snapshots_days": 0, "file_grace_hours": 0}}}}
    ran = lake_maintenance.execute_in_process(config, resources={"warehouse": Warehouse(path=lake)})
    assert ran.success
    [output] = [e for e in ran.all_events if e.event_type == dg.DagsterEventType.STEP_OUTPUT]
    figures = {k: v.value for k, v in output.step_output_data.metadata.items()}
    assert figures["files_deleted"] > 0 and figures["snapshots_after"] < figures["snapshots_before"]

    file_warehouse = Warehouse(path=str(tmp_path / "w.duckdb"))
    failed = lake_maintenance.execute_in_process(
        resources={"warehouse": file_warehouse}, raise_on_error=False
    )
    assert not failed.success and not (tmp_path / "w.duckdb").exists()  # nothing made
    [failure] = failed.get_step_failure_events()
    assert "is a DuckDB file, not a DuckLake: nothing to maintain" in failure.step_failure_data.error.message
    with dg.build_schedule_context(resources={"warehouse": file_warehouse}) as context:
        assert isinstance(lake_maintenance_schedule(context), dg.SkipReason)
    daily = datetime.datetime(2026, 11, 25, 3, tzinfo=datetime.UTC)
    with dg.build_schedule_context(
        resources={"warehouse": Warehouse(path=lake)}, scheduled_execution_time=daily
    ) as context:
        assert lake_maintenance_schedule(context).run_key == "lake-maintenance:2026-11-25T03:00"


SPILL_FOLDER = """
from interlink_pipeline.core.warehouse.database import connect
with connect({location!r}, read_only=True) as con:
    print(con.execute("SELECT current_setting('temp_directory')").fetchone()[0])
"""


def test_each_process_spills_to_a_folder_of_its_own(lake):
    """Four runs started from one folder once overwrote each other's spilled data in `.tmp`."""
    replace_site_rows(lake, SITES[2], sample_frames(SITES[2]))
    folders = [
        subprocess.run(
            [sys.executable, "-c", SPILL_FOLDER.format(location=lake)],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for _ in range(2)
    ]
    assert len(set(folders)) == 2 and all("interlink-duckdb-" in folder for folder in folders), folders


def join_conditions(plan: dict) -> list[list[str]]:
    """Every join's conditions in an EXPLAIN (FORMAT JSON) plan."""
    found = plan.get("extra_info", {}).get("Conditions")
    own = [[found] if isinstance(found, str) else found] if found is not None else []
    return own + [c for child in plan.get("children", []) for c in join_conditions(child)]


def test_the_spreadsheets_never_join_pages_to_pages_by_site_alone(lake):
    """On a lake, with no distinct counts for the planner, the similar-pages sheet once joined the site's
    pages to themselves on `site` before the pairs: every page with every page (10^8 rows at 10,000 pages;
    out of memory at 1 GB). Every join of every spreadsheet's query over the pipeline's tables (dbt's marts
    are not built here) must match rows on more than the site."""
    from interlink_pipeline.core.publish.warehouse_reads import SPREADSHEETS

    site = SITES[1]
    frames = sample_frames(site)
    ids = frames["staging.pages"]["page_id"]
    pairs = pl.DataFrame(
        {
            "site": site,
            "source_page_id": ids,
            "target_page_id": ids.shift(-1, fill_value=ids[0]),
            "score": pl.Series([0.5] * len(ids), dtype=pl.Float32),
            "rank": pl.Series([1] * len(ids), dtype=pl.Int32),
            "relation": "similar",
            "reciprocal": False,
            "method": "exact",
        }
    )
    replace_site_rows(lake, site, {**frames, "ml.similarity_pairs": pairs})
    with connect(lake, read_only=True) as con:
        for name, sql in SPREADSHEETS.items():
            if "marts." in sql:
                continue
            (plan,) = json.loads(con.execute(f"EXPLAIN (FORMAT JSON) {sql}", [site]).fetchone()[1])
            site_alone = [c for c in join_conditions(plan) if all(x == "site = site" for x in c)]
            assert not site_alone, f"{name}: a join on the site alone: {site_alone}"
    sheet = query(lake, SPREADSHEETS["similar_pages"], [site])
    urls = dict(zip(frames["staging.pages"]["page_id"], frames["staging.pages"]["url"], strict=True))
    assert sheet.height == len(ids)
    assert set(zip(sheet["page_url"], sheet["similar_url"], strict=True)) == {
        (urls[s], urls[t]) for s, t in zip(pairs["source_page_id"], pairs["target_page_id"], strict=True)
    }
