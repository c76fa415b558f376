"""Reliability: hostile inputs, killed runs, full disks, read-only files, concurrent readers and runs.

Every failure must name its cause and leave the warehouse exactly as it was."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest

from interlink_pipeline.core.environment import FAULT_ENV
from interlink_pipeline.core.ml.page_neighbours import NEIGHBOUR_MARGIN
from interlink_pipeline.defs.serp.results import SerpApi
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import (
    AFTER_PLAN,
    LIGHT,
    UP_TO_PLAN,
    call_cli,
    failure_message,
    materialization_metadata,
    run_serp,
    run_site,
    write_export,
)
from interlink_pipeline_tests.hostile_exports import CASES, HOST, SF_HEADER, Case, good_rows
from interlink_pipeline_tests.serper_server import KEY, serper_for

INGEST = ["raw_crawl", "raw_links", "pages"]
SITE_TABLES = ("raw.crawl_pages", "raw.crawl_links", "staging.pages", "staging.excluded_pages")


def ingest(instance, warehouse, inbox, crawl_file: str, site: str = HOST):
    """raw_crawl, raw_links and pages for `site` from one file of the drop folder."""
    config = {"ops": {"raw_crawl": {"config": {"crawl_file": crawl_file}}}}
    return run_site(warehouse, inbox, instance, site, steps=INGEST, run_config=config)


def site_state(warehouse) -> dict[str, tuple]:
    """Row count and content hash of HOST's rows in every ingest table."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return {
            table: con.execute(
                f"SELECT count(*), coalesce(bit_xor(hash(t)), 0) FROM {table} t WHERE site = ?", [HOST]
            ).fetchone()
            for table in SITE_TABLES
        }


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """A warehouse already holding a good crawl of HOST: what every bad input must leave untouched."""
    folder = tmp_path_factory.mktemp("baseline")
    inbox = folder / "inbox"
    write_export(inbox / HOST / "internal_all.csv", SF_HEADER, good_rows())
    warehouse = folder / "interlink.duckdb"
    with dg.instance_for_test() as instance:
        assert ingest(instance, warehouse, inbox, "internal_all.csv").success
    return warehouse, site_state(warehouse)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_export(case: Case, baseline, tmp_path, instance):
    template, before = baseline
    warehouse = tmp_path / "interlink.duckdb"
    shutil.copyfile(template, warehouse)
    (tmp_path / "inbox" / HOST).mkdir(parents=True)
    export = case.write(tmp_path / "inbox" / HOST)
    result = ingest(instance, warehouse, tmp_path / "inbox", export.name)
    if case.error is not None:
        assert not result.success, f"{case.name}: expected an error containing {case.error!r}"
        message = failure_message(result)
        assert case.error.lower() in message.lower(), message
        assert "Traceback" not in message and len(message) < 2_000, message
        after = site_state(warehouse)
        untouched = SITE_TABLES if case.failed_step == "raw_crawl" else SITE_TABLES[2:]
        assert {t: after[t] for t in untouched} == {t: before[t] for t in untouched}  # nothing half-written
        if case.failed_step == "pages":  # the raw layer holds the new crawl, whole, for inspection
            assert after["raw.crawl_pages"][0] == len(good_rows())
        return
    assert result.success, failure_message(result)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pages = con.execute("SELECT * FROM staging.pages WHERE site = ?", [HOST]).pl()
        raw = con.execute("SELECT count(*) FROM raw.crawl_pages WHERE site = ?", [HOST]).fetchone()[0]
        excluded = con.execute(
            "SELECT count(*) FROM staging.excluded_pages WHERE site = ?", [HOST]
        ).fetchone()[0]
    assert pages.height + excluded == raw  # every row kept or excluded with a reason, none half-written
    if case.check is not None:
        assert case.check(pages) is not False, case.name


def test_a_failed_crawl_leaves_the_links_export_unread(baseline, tmp_path, instance):
    template, before = baseline
    warehouse = tmp_path / "interlink.duckdb"
    shutil.copyfile(template, warehouse)
    folder = tmp_path / "inbox" / HOST
    write_export(folder / "internal_all.csv", ["Page", "Title"], [["x", "y"]])
    links = [[f"{row[0]}", f"https://{HOST}/", "Home"] for row in good_rows()[1:]]
    write_export(folder / "all_inlinks.csv", ["Source", "Destination", "Anchor"], links)
    result = ingest(instance, warehouse, tmp_path / "inbox", "internal_all.csv")
    assert "no header row with a URL column" in failure_message(result)
    assert site_state(warehouse) == before  # raw.crawl_links too: a crawl and its links change together


@pytest.mark.parametrize(
    "site",
    [
        "x'; DROP TABLE staging.pages; --",
        "www.hostile.example' OR '1'='1",
        "../../etc",
        "WWW.HOSTILE.EXAMPLE",
    ],
)
def test_hostile_partition_keys_never_reach_sql(site, baseline, tmp_path, instance):
    template, before = baseline
    warehouse = tmp_path / "interlink.duckdb"
    shutil.copyfile(template, warehouse)
    write_export(tmp_path / "inbox" / HOST / "internal_all.csv", SF_HEADER, good_rows())
    result = ingest(instance, warehouse, tmp_path / "inbox", "internal_all.csv", site)
    assert not result.success
    assert "not a host name" in failure_message(result) or "not a normalised host" in failure_message(result)
    assert site_state(warehouse) == before


def test_the_suite_has_at_least_thirty_distinct_inputs():
    assert len({c.name for c in CASES}) == len(CASES) >= 30


@pytest.mark.e2e
@pytest.mark.parametrize("case_name", ["a single page", "every page has the same title"])
def test_degenerate_sites_get_a_whole_plan(case_name, tmp_path, encoder):
    """The smallest and the flattest site still go through every asset, marts and reports included."""
    case = next(c for c in CASES if c.name == case_name)
    inbox = tmp_path / "inbox"
    (inbox / HOST).mkdir(parents=True)
    case.write(inbox / HOST)
    warehouse = tmp_path / "interlink.duckdb"
    with dg.instance_for_test() as instance:
        result = run_site(warehouse, inbox, instance, HOST)
    assert result.success, failure_message(result)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pages = con.execute("SELECT count(*) FROM staging.pages").fetchone()[0]
        clustered = con.execute("SELECT count(*) FROM ml.page_clusters").fetchone()[0]
        health = con.execute("SELECT count(*) FROM marts.site_health").fetchone()[0]
        unreachable = con.execute(
            "SELECT count(*) FROM graph.page_metrics WHERE depth_after IS NULL"
        ).fetchone()[0]
    assert clustered == pages and health > 0 and unreachable == 0


# --- faults: a killed process, a full disk, a read-only file --------------------------------------------

# Vectors committed per 400 texts; the ranker a logistic regression (what these runs test is what a kill
# leaves, not which model fits: the gradient-boosted model's cross-validation takes most of a sample's run).
KILLED_RUN_CONFIG = {
    "ops": {
        "page_embeddings": {"config": {"chunk_size": 400}},
        "link_ranker": {"config": {"model": "logistic"}},
    }
}

# Runs the site's pipeline up to the plan in a child process, which core/faults.py kills at the point
# $INTERLINK_FAULT names (none: it runs to the end unless killed from outside).
KILLED_RUN = """
import sys
from interlink_pipeline_tests.test_reliability import run_up_to_the_plan
run_up_to_the_plan({warehouse!r}, {inbox!r}, {site!r})
sys.exit("the run was not killed")
"""
# killed after the second chunk of new vectors is committed to the cache, while embedding the third
DURING_EMBEDDING = "embedding-chunk@3"
# killed inside the plan's write transaction, after graph.link_plan's rows are inserted, before commit
DURING_PLAN_WRITE = "after-insert:graph.link_plan"


def killed_run(warehouse, inbox, site, fault: str = "", **popen) -> subprocess.CompletedProcess:
    """The run up to the plan in a child process that core/faults.py kills at `fault`."""
    script = KILLED_RUN.format(warehouse=str(warehouse), inbox=str(inbox), site=site)
    env = {**os.environ, FAULT_ENV: fault}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, **popen)


def run_up_to_the_plan(warehouse, inbox, site):
    with dg.instance_for_test() as instance:
        return run_site(warehouse, inbox, instance, site, steps=UP_TO_PLAN, run_config=KILLED_RUN_CONFIG)


def plan_state(warehouse, site) -> tuple:
    with duckdb.connect(str(warehouse)) as con:  # read-write: the file opens after the kill
        return con.execute(
            "SELECT count(*), coalesce(bit_xor(hash(p)), 0) FROM graph.link_plan p WHERE site = ?", [site]
        ).fetchone()


def cached_vectors(warehouse) -> int:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute("SELECT count(*) FROM ml.embedding_cache").fetchone()[0]


def test_a_run_killed_while_embedding_or_writing_the_plan_loses_nothing(tmp_path, sample_site):
    site = sample_site.phases["plan"].copy(tmp_path / "site")  # the sample planned
    warehouse, inbox = site.warehouse, site.inbox
    planned = plan_state(warehouse, SAMPLE_HOST)
    assert planned[0] > 0

    # a new crawl in which every title changed: every text must be embedded again
    crawl = inbox / SAMPLE_HOST / "internal_all.csv"
    frame = pl.read_csv(crawl, infer_schema=False)
    frame.with_columns(pl.col("Title 1") + " – 2027 range").write_csv(crawl)

    cached = cached_vectors(warehouse)
    for fault in (DURING_EMBEDDING, DURING_PLAN_WRITE):
        killed = killed_run(warehouse, inbox, SAMPLE_HOST, fault, timeout=600)
        assert killed.returncode == -9, killed.stderr[-3000:]
        assert plan_state(warehouse, SAMPLE_HOST) == planned  # the previous plan, whole
        if fault == DURING_EMBEDDING:  # the two chunks committed before the kill are kept
            assert cached_vectors(warehouse) == cached + 800

    result = run_up_to_the_plan(warehouse, inbox, SAMPLE_HOST)
    assert result.success
    embedded = materialization_metadata(result, "page_embeddings")
    # every vector the killed runs computed was kept: the re-run embeds nothing again
    assert embedded["texts_embedded"] == 0 and embedded["cache_hits"] > 800
    replanned = plan_state(warehouse, SAMPLE_HOST)
    assert replanned[0] > 0 and replanned != planned  # the new crawl's plan, with its new titles
    # the same inputs give the same plan, to the last row (score ties are broken by page, not by chance)
    assert run_up_to_the_plan(warehouse, inbox, SAMPLE_HOST).success
    assert plan_state(warehouse, SAMPLE_HOST) == replanned


# killed inside the similarity step's write transaction, after ml.page_neighbours' rows are inserted
DURING_SIMILARITY_WRITE = "after-insert:ml.page_neighbours"
# killed in link_candidates once the kept text neighbours are updated, before any candidate is written
AFTER_TEXT_NEIGHBOURS = "candidate-proposals"


def kept_lists(warehouse, site) -> pl.DataFrame:
    """Each page's kept nearest pages: ml.page_neighbours and the candidates' per-field lists, as scores
    (pages with identical texts tie, and either is the exact answer)."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        similar = con.execute(
            "SELECT 'similarity' AS field, page_id, scores FROM ml.page_neighbours WHERE site = ?", [site]
        ).pl()
    fields = [
        pl.read_parquet(path, columns=["page_id", "scores"]).select(
            pl.lit(path.name.removesuffix("_neighbours.parquet")).alias("field"), "page_id", "scores"
        )
        for path in sorted((warehouse.parent / "models" / site / "neighbours").glob("*_neighbours.parquet"))
    ]
    assert fields, "no kept text neighbours"
    return pl.concat([similar, *fields]).sort("field", "page_id")


def test_a_run_killed_midway_leaves_the_next_incremental_run_right(tmp_path, sample_site):
    """Killed while writing the similarity step, then after the candidates' text neighbours were updated:
    the re-run goes on incrementally from what the killed runs kept, and its kept lists equal a cold
    run's on the same crawl."""
    site = sample_site.phases["plan"].copy(tmp_path / "warm")  # the sample planned
    warm, inbox = site.warehouse, site.inbox
    cold = tmp_path / "cold" / "interlink.duckdb"
    cold.parent.mkdir()
    planned = plan_state(warm, SAMPLE_HOST)
    crawl = inbox / SAMPLE_HOST / "internal_all.csv"
    frame = pl.read_csv(crawl, infer_schema=False)
    frame.with_columns(  # a re-crawl: 2% of the titles changed
        pl.when(pl.int_range(pl.len()) % 50 == 3).then(pl.col("Title 1") + " 2027").otherwise("Title 1")
    ).write_csv(crawl)
    lists_before = kept_lists(warm, SAMPLE_HOST)

    for fault in (DURING_SIMILARITY_WRITE, AFTER_TEXT_NEIGHBOURS):
        killed = killed_run(warm, inbox, SAMPLE_HOST, fault, timeout=600)
        assert killed.returncode == -9, killed.stderr[-3000:]
        assert plan_state(warm, SAMPLE_HOST) == planned  # the previous plan, whole
        if fault == DURING_SIMILARITY_WRITE:  # the kept lists are the last complete ones
            assert kept_lists(warm, SAMPLE_HOST).equals(lists_before)

    result = run_up_to_the_plan(warm, inbox, SAMPLE_HOST)
    assert result.success
    # the second killed run had got past the similarity step and updated the candidates' text neighbours:
    # both go on from there, with nothing left to search
    similarity = materialization_metadata(result, "similarity_pairs")
    assert similarity["search"] == "incremental" and similarity["pages_searched"] == 0
    neighbours = materialization_metadata(result, "link_candidates")["text_neighbours"]
    assert "full" not in neighbours and "title: incremental (0 changed or added" in neighbours
    assert plan_state(warm, SAMPLE_HOST) != planned

    assert run_up_to_the_plan(cold, inbox, SAMPLE_HOST).success
    incremental, full = kept_lists(warm, SAMPLE_HOST), kept_lists(cold, SAMPLE_HOST)
    assert incremental.select("field", "page_id").equals(full.select("field", "page_id"))
    # a kept list holds a margin past the answer; an update may drop some of it (a changed page that fell
    # out), and the page is searched again once too little is left: the answer itself must be exact
    both = incremental.with_columns(full=full["scores"]).with_columns(
        answer=pl.col("full").list.len() - NEIGHBOUR_MARGIN
    )
    assert (both["scores"].list.len() >= both["answer"]).all()
    answers = both.select(pl.col("scores", "full").list.head(pl.col("answer")).explode())
    gaps = answers["scores"] - answers["full"]
    assert gaps.len() > 10_000 and gaps.abs().max() < 1e-5


def test_a_full_disk_gives_a_clear_error_and_keeps_the_previous_rows(
    small_disk, tmp_path, baseline, instance
):
    mount_point, mount, _ = small_disk
    template, before = baseline
    mount(template.stat().st_size // 1024 + 256)  # room for the file and a little more
    warehouse = mount_point / "interlink.duckdb"
    shutil.copyfile(template, warehouse)
    # a crawl far larger than the space left: 20,000 pages
    rows = [
        [f"https://{HOST}/page-{i}/", *good_rows()[1][1:6], f"Page {i} " + "words " * 40, *good_rows()[1][7:]]
        for i in range(20_000)
    ]
    write_export(tmp_path / "inbox" / HOST / "internal_all.csv", SF_HEADER, rows)
    result = ingest(instance, warehouse, tmp_path / "inbox", "internal_all.csv")
    assert not result.success
    message = failure_message(result)
    assert "the disk is full (No space left on device). Nothing was written" in message, message
    assert site_state(warehouse) == before


def test_a_read_only_warehouse_gives_a_clear_error_and_stays_readable(
    small_disk, tmp_path, baseline, instance
):
    mount_point, mount, remount_read_only = small_disk
    template, before = baseline
    mount(8 * 1024)
    warehouse = mount_point / "interlink.duckdb"
    shutil.copyfile(template, warehouse)
    remount_read_only()
    (tmp_path / "inbox" / HOST).mkdir(parents=True)
    write_export(tmp_path / "inbox" / HOST / "internal_all.csv", SF_HEADER, good_rows(4))
    result = ingest(instance, warehouse, tmp_path / "inbox", "internal_all.csv")
    assert not result.success
    message = failure_message(result)
    assert f"cannot open the warehouse {warehouse}: the file or its folder is read-only" in message, message
    assert site_state(warehouse) == before  # analysts can still read it


# --- SERP faults under load ------------------------------------------------------------------------------


def test_serp_bursts_of_429s_slow_answers_and_resets_bill_each_query_once(
    warehouse_path, light_inbox, instance, light_pages
):
    titles = light_pages["title"].drop_nulls().unique(maintain_order=True).to_list()
    faults = (["429:0", "429:0", "429:0"], ["reset", "reset"], ["hang:3"], ["500", "reset", "429:0"], [])
    script = {title: list(faults[i % len(faults)]) for i, title in enumerate(titles)}
    config = {"concurrency": 16, "timeout_s": 1.5, "max_retries": 4, "budget": 400}
    with serper_for(light_pages, script=script) as server:
        result = run_serp(
            warehouse_path, light_inbox, instance, SerpApi(api_key=KEY, endpoint=server.endpoint), config
        )
        assert result.success, failure_message(result)
        meta = materialization_metadata(result, "serp_results")
        log = list(server.log)
        billed = server.answered()
        unspent = [actions for actions in server.script.values() if actions]
    # requests sent count every attempt, including those a reset connection swallowed before the server
    assert meta["failed_requests"] == 0 and len(log) <= meta["requests_sent"] <= config["budget"]
    # every scripted fault happened exactly once (in bursts, 16 in flight), then one answer per query
    assert not unspent and len(log) == sum(map(len, script.values())) + meta["queries"]
    assert set(billed) == {e["query"] for e in log} and set(billed.values()) == {1}  # each billed once
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        cached = dict(con.execute("SELECT query, result_count FROM serp.cache").fetchall())
    # nothing lost: every query's answer is cached with every result the server gave
    assert cached == {q: len(server._organic(q, 10, 1)) for q in billed}


# --- security and concurrency: the whole pipeline with a secret key, analysts reading all along ---------

SECRET = "sk-SECRET-serper-key-0123456789abcdef"

# An analyst in another process: opens the published snapshot read-only, queries it, closes, over and over.
ANALYST = """
import sys, time, duckdb
snapshot, stop = sys.argv[1], sys.argv[2]
import pathlib
reads = errors = 0
while not pathlib.Path(stop).exists():
    if pathlib.Path(snapshot).exists():
        try:
            with duckdb.connect(snapshot, read_only=True) as con:
                con.execute("SELECT count(*) FROM marts.link_opportunities").fetchone()
            reads += 1
        except duckdb.Error as exc:
            errors += 1
            print(exc, file=sys.stderr)
    time.sleep(0.05)
print(reads, errors)
"""


FRESH = {"provider": "serper", "cache_ttl_days": 0}  # every query asked


def test_the_key_is_nowhere_and_analysts_read_throughout(
    light_and_nutri, instance, light_pages, tmp_path, monkeypatch
):
    from interlink_pipeline.defs.serp.results import default_serp_api

    # a published site; the analyst reads its snapshot while a run with the key rewrites everything
    site = light_and_nutri.folder.copy(tmp_path / "site")
    warehouse_path, inbox = site.warehouse, site.inbox
    snapshot = warehouse_path.parent / "snapshots" / warehouse_path.name
    assert snapshot.is_file()
    stop = tmp_path / "stop"
    monkeypatch.setenv("SERPER_API_KEY", SECRET)
    with serper_for(light_pages) as server:
        server.key = SECRET
        monkeypatch.setenv("INTERLINK_SERPER_ENDPOINT", server.endpoint)
        analyst = subprocess.Popen(
            [sys.executable, "-c", ANALYST, str(snapshot), str(stop)], stdout=subprocess.PIPE, text=True
        )
        runs = [run_serp(warehouse_path, inbox, instance, default_serp_api(), FRESH, steps=None)]
        stop.touch()
        reads, errors = map(int, analyst.communicate(timeout=60)[0].split())
        server.key = "rotated"  # the API now rejects the key: the failure must not echo it either
        runs.append(run_serp(warehouse_path, inbox, instance, default_serp_api(), FRESH, steps=None))
    assert runs[0].success and not runs[1].success
    assert materialization_metadata(runs[0], "serp_results")["requests_sent"] > 0  # the key was used
    assert "rejected the API key" in failure_message(runs[1])
    assert reads > 20 and errors == 0  # the analyst never failed and never waited on the runs

    # scan everything a run leaves behind: events (logs, metadata, errors), tables, files
    events = "\n".join(str(e) for result in runs for e in result.all_events)
    assert SECRET not in events
    for record in instance.get_records_for_run(runs[-1].run_id).records:
        assert SECRET not in str(record.event_log_entry)
    scanned = [warehouse_path, snapshot, *sorted((warehouse_path.parent / "exports").rglob("*"))]
    for path in (p for p in scanned if p.is_file()):
        assert SECRET.encode() not in path.read_bytes(), path
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        for schema, table in con.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall():
            dump = con.execute(f'SELECT * FROM "{schema}"."{table}"').pl().write_ndjson()
            assert SECRET not in dump, f"{schema}.{table}"
    assert len(scanned) > 5


def plan_is_whole(warehouse, site) -> bool:
    """graph.link_plan and graph.page_metrics come from one write: their planned links agree."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        planned, counted = con.execute(
            "SELECT (SELECT count(*) FROM graph.link_plan WHERE site = ?), "
            "(SELECT sum(planned_inlinks) FROM graph.page_metrics WHERE site = ?)",
            [site, site],
        ).fetchone()
    return planned > 0 and planned == counted


@pytest.mark.slow
def test_kills_at_random_moments_never_leave_a_partial_plan(tmp_path, sample_site):
    """Six runs SIGKILLed at random moments (seeded): after each, the file opens and holds a whole plan —
    the previous one, or one a run completed; a last run completes. `make test-slow` (about 2 minutes)."""
    import random

    site = sample_site.phases["plan"].copy(tmp_path / "site")  # the sample planned
    warehouse, inbox = site.warehouse, site.inbox
    previous = plan_state(warehouse, SAMPLE_HOST)
    crawl = inbox / SAMPLE_HOST / "internal_all.csv"
    pl.read_csv(crawl, infer_schema=False).with_columns(pl.col("Title 1") + " (new)").write_csv(crawl)
    script = KILLED_RUN.format(warehouse=str(warehouse), inbox=str(inbox), site=SAMPLE_HOST)
    outcomes = []
    for delay in (random.Random(7).uniform(2, 40) for _ in range(6)):
        child = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.DEVNULL)
        try:
            child.wait(timeout=delay)
            outcomes.append("completed")
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            outcomes.append("killed")
        assert plan_is_whole(warehouse, SAMPLE_HOST), outcomes
    assert "killed" in outcomes
    assert run_up_to_the_plan(warehouse, inbox, SAMPLE_HOST).success
    assert plan_is_whole(warehouse, SAMPLE_HOST) and plan_state(warehouse, SAMPLE_HOST) != previous


# Runs the site's publishing steps in a child process, killed (core/faults.py) at the point its fault names:
# the n-th staged file or folder about to replace the published one.
KILLED_PUBLISHING = """
import sys
from interlink_pipeline_tests.helpers import run_site
import dagster as dg
with dg.instance_for_test() as instance:
    run_site({warehouse!r}, {inbox!r}, instance, {site!r}, steps={assets!r})
sys.exit("the run was not killed")
"""


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (through its symbolic link: what people open there), by relative path."""
    real = folder.resolve()
    return {str(p.relative_to(real)): p.read_bytes() for p in sorted(real.rglob("*")) if p.is_file()}


PUBLISHING = AFTER_PLAN[: AFTER_PLAN.index("published_files") + 1]  # marts, snapshot, files, report, publish


@pytest.mark.parametrize(
    ("assets", "fault"),
    [
        (["spreadsheet_exports", "html_report", "published_files"], "publish-file"),
        (["analyst_snapshot", "published_files"], "publish-file"),
        (["link_plan", *PUBLISHING], "publish-file@2"),
    ],
    ids=["before the switch", "before the snapshot", "after the snapshot, before the switch"],
)
def test_a_run_killed_while_publishing_leaves_one_whole_release(
    assets, fault, tmp_path, light_and_nutri, cli_env, crawls
):
    """Killed at the publication's own kill points (issue 56: two files had moved, the site showed a mix):
    the site's folder is the previous release, whole, and its manifest and report name the same run; the
    next run publishes its own and says it removed what the killed one left."""
    site = light_and_nutri.folder.copy(tmp_path / "site")  # published once
    warehouse, inbox = site.warehouse, site.inbox
    exports, snapshots = warehouse.parent / "exports" / LIGHT, warehouse.parent / "snapshots"
    before, snapshot = _files(exports), _files(snapshots)
    manifest = json.loads(before["published.json"])
    assert len(before) >= 8 and manifest["run_id"].encode() in before["report.html"]
    releases = warehouse.parent / "exports" / ".releases" / LIGHT
    published, earlier = exports.resolve().name, {p.name for p in releases.iterdir()}
    assert published == f"{manifest['run_id']}-measured"  # the run's plan, republished with its measurement

    script = KILLED_PUBLISHING.format(warehouse=str(warehouse), inbox=str(inbox), site=LIGHT, assets=assets)
    env = {**os.environ, FAULT_ENV: fault}
    killed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env
    )
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert _files(exports) == before  # every file people open: the previous release's, byte for byte
    if fault == "publish-file" and "analyst_snapshot" in assets:  # killed before the snapshot moved
        assert (snapshots / warehouse.name).read_bytes() == snapshot[warehouse.name]
    if "link_plan" in assets:  # the snapshot holds the new plan, the files the old one: status says so
        env = {**cli_env, "INTERLINK_WAREHOUSE": str(warehouse), "INTERLINK_INBOX": str(inbox)}
        light = crawls / "lightchiropractic"
        call_cli(env, "register", str(light / "internal_all.csv"), "--links", str(light / "all_inlinks.csv"))
        said = call_cli(env, "status", "--site", LIGHT).stdout
        assert f"note: the analysts' snapshot ({snapshots / warehouse.name}) holds the plan made " in said, (
            said
        )
        assert "not the published one: its run stopped between replacing the snapshot and publishing" in said
    left = sorted(p.name for p in releases.iterdir())
    assert (
        len(left) == len(earlier) + 1 and published in left
    )  # the releases there were, and the killed run's

    # the next run publishes its release whole and removes what the killed one left, saying so
    with dg.instance_for_test() as instance:
        result = run_site(warehouse, inbox, instance, LIGHT, steps=assets)
        assert result.success, failure_message(result)
    cleaned = materialization_metadata(result, "published_files")["cleaned_up"]
    [leftover] = [name for name in left if name not in earlier]
    assert any(line.startswith(f"run {leftover}'s files, never published") for line in cleaned), cleaned
    now = _files(exports)
    assert json.loads(now["published.json"])["run_id"] == result.run_id and sorted(now) == sorted(before)
    if "html_report" in assets:  # status and the report's header name the same run
        assert result.run_id.encode() in now["report.html"]
    kept = sorted(p.name for p in releases.iterdir())
    assert kept == sorted([published, result.run_id])  # this release, and the one before it
    assert not (snapshots / ".staged").exists()


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under `root` by relative path, not following links: a file's bytes, a link's target."""
    return {
        str(p.relative_to(root)): os.readlink(p) if p.is_symlink() else p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_symlink() or p.is_file()
    }


@pytest.mark.parametrize("kind", ["a file", "a link to a web root", "a folder of its own"])
def test_what_a_user_put_in_the_published_folders_place_is_never_replaced(
    kind, tmp_path, light_and_nutri, cli_env, crawls
):
    """Issue 70: a file put in place of `exports/<site>` was deleted by the next publication, a link to a
    web root silently replaced. The publication stops in a sentence before anything moves: the user's
    file, link and web root, the snapshot and every release keep their bytes; status says what is there."""
    site = light_and_nutri.folder.copy(tmp_path / "site")  # published once
    warehouse, inbox = site.warehouse, site.inbox
    exports = warehouse.parent / "exports" / LIGHT
    exports.unlink()
    web_root = tmp_path / "www"
    web_root.mkdir()
    (web_root / "index.html").write_text("the user's own site")
    if kind == "a file":
        exports.write_text("notes of my own")
    elif kind == "a link to a web root":
        exports.symlink_to(web_root)
    else:
        exports.mkdir()
        (exports / "draft.md").write_text("my draft")
    staged = warehouse.parent / "snapshots" / ".staged"

    def state() -> tuple[dict, dict]:  # the staged snapshot aside: the next publication removes it
        return {
            k: v for k, v in _tree(site.root).items() if not (site.root / k).is_relative_to(staged)
        }, _tree(web_root)

    before = state()
    with dg.instance_for_test() as instance:
        result = run_site(warehouse, inbox, instance, LIGHT, steps=["analyst_snapshot", "published_files"])
    assert not result.success
    message = failure_message(result)
    assert (
        f"{exports} is " in message
        and "not the site's published folder: the plan was not published" in message
    )
    assert state() == before
    env = {**cli_env, "INTERLINK_WAREHOUSE": str(warehouse), "INTERLINK_INBOX": str(inbox)}
    light = crawls / "lightchiropractic"  # the site registered in this Dagster home too
    call_cli(env, "register", str(light / "internal_all.csv"), "--links", str(light / "all_inlinks.csv"))
    status = call_cli(env, "status", "--site", LIGHT)
    assert f"published: nothing here: {exports} is " in status.stdout, status.stdout + status.stderr


def test_a_run_failing_at_its_last_steps_publishes_nothing_and_status_shows_the_published_plan(
    tmp_path, light_and_nutri, cli_env, crawls
):
    site = light_and_nutri.folder.copy(tmp_path / "site")  # published once
    warehouse, inbox = site.warehouse, site.inbox
    exports, snapshots = warehouse.parent / "exports" / LIGHT, warehouse.parent / "snapshots"
    before = {**_files(exports), **_files(snapshots)}
    manifest = json.loads((exports / "published.json").read_text())
    assert manifest["site"] == LIGHT and {"report.html", "interlink_plan.xlsx"} <= set(manifest["files"])
    # a new plan (a smaller budget) whose run fails while writing its files (no release can be made in
    # the site's releases folder): nothing of it is published
    releases = warehouse.parent / "exports" / ".releases" / LIGHT
    planned = {"ops": {"link_plan": {"config": {"out_link_budget": 3}}}}
    subprocess.run(["chattr", "+i", str(releases)], check=True)
    try:
        with dg.instance_for_test() as instance:
            failed = run_site(
                warehouse, inbox, instance, LIGHT, steps=["link_plan", *AFTER_PLAN], run_config=planned
            )
    finally:
        subprocess.run(["chattr", "-i", str(releases)], check=True)
    assert (
        not failed.success
        and f"{releases}/{failed.run_id}: not permitted: the file or folder is immutable"
        in (failure_message(failed))
    )
    published = {
        name: data for name, data in {**_files(exports), **_files(snapshots)}.items() if ".staged" not in name
    }
    assert published == before  # every file people open is the last published run's, byte for byte
    # status shows the published plan, says the warehouse holds a newer one, and which crawl it is of
    env = {**cli_env, "INTERLINK_WAREHOUSE": str(warehouse), "INTERLINK_INBOX": str(inbox)}
    light = crawls / "lightchiropractic"
    registered = call_cli(
        env, "register", str(light / "internal_all.csv"), "--links", str(light / "all_inlinks.csv")
    )
    assert registered.returncode == 0, registered.stderr
    status = call_cli(env, "status", "--site", LIGHT).stdout
    assert f"published: run {manifest['run_id']} at {manifest['published_at']}" in status
    after = next(row for row in manifest["site_metrics"] if row["scenario"] == "after")
    assert (
        f"after  {after['pages']:,} pages, {after['links']:,} links ({after['planned_links']:,} planned)"
        in status
    )
    assert "note: the warehouse holds a newer plan (made " in status
    assert "that no run published: its run failed after planning, or is still running." in status
    # the next run that succeeds publishes its files, snapshot and figures together
    with dg.instance_for_test() as instance:
        assert run_site(warehouse, inbox, instance, LIGHT, steps=AFTER_PLAN, run_config=None).success
    now = json.loads((exports / "published.json").read_text())
    assert now["run_id"] != manifest["run_id"] and now["plan_computed_at"] != manifest["plan_computed_at"]
    assert "note:" not in call_cli(env, "status", "--site", LIGHT).stdout
    assert len(list(releases.iterdir())) == 2 and not list(snapshots.glob(".staged*"))
    # the last step alone has nothing of its run's to publish: it says so and changes nothing
    with dg.instance_for_test() as instance:
        alone = run_site(warehouse, inbox, instance, LIGHT, steps=["published_files"])
    assert not alone.success and "this run wrote no files to publish" in failure_message(alone)
    assert json.loads((exports / "published.json").read_text()) == now
