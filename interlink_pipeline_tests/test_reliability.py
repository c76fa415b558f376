"""Reliability: hostile inputs, killed runs, full disks, read-only files, concurrent readers and runs.

Every failure must name its cause and leave the warehouse exactly as it was."""

import shutil

import dagster as dg
import duckdb
import pytest

from interlink_pipeline.definitions import build_defs
from interlink_pipeline_tests.conftest import write_export
from interlink_pipeline_tests.hostile_exports import CASES, HOST, SF_HEADER, Case, good_rows

INGEST = [dg.AssetKey(name) for name in ("raw_crawl", "raw_links", "pages")]
SITE_TABLES = ("raw.crawl_pages", "raw.crawl_links", "staging.pages", "staging.excluded_pages")


def ingest(warehouse, inbox, crawl_file: str):
    """raw_crawl, raw_links and pages for HOST from one file of the drop folder, on a fresh instance."""
    defs = build_defs(str(warehouse), str(inbox))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sites", [HOST])
        return defs.resolve_job_def("site_pipeline").execute_in_process(
            partition_key=HOST,
            instance=instance,
            raise_on_error=False,
            asset_selection=INGEST,
            run_config={"ops": {"raw_crawl": {"config": {"crawl_file": crawl_file}}}},
        )


def failure_message(result) -> str:
    return next(
        e for e in result.all_events if e.event_type_value == "STEP_FAILURE"
    ).event_specific_data.error.message


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
    assert ingest(warehouse, inbox, "internal_all.csv").success
    return warehouse, site_state(warehouse)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_export(case: Case, baseline, tmp_path):
    template, before = baseline
    warehouse = tmp_path / "interlink.duckdb"
    shutil.copyfile(template, warehouse)
    (tmp_path / "inbox" / HOST).mkdir(parents=True)
    export = case.write(tmp_path / "inbox" / HOST)
    result = ingest(warehouse, tmp_path / "inbox", export.name)
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


def test_the_suite_has_at_least_thirty_distinct_inputs():
    assert len({c.name for c in CASES}) == len(CASES) >= 30


@pytest.mark.parametrize("case_name", ["a single page", "every page has the same title"])
def test_degenerate_sites_get_a_whole_plan(case_name, tmp_path, encoder):
    """The smallest and the flattest site still go through every asset, marts and reports included."""
    case = next(c for c in CASES if c.name == case_name)
    inbox = tmp_path / "inbox"
    (inbox / HOST).mkdir(parents=True)
    case.write(inbox / HOST)
    warehouse = tmp_path / "interlink.duckdb"
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sites", [HOST])
        result = (
            build_defs(str(warehouse), str(inbox))
            .resolve_job_def("site_pipeline")
            .execute_in_process(partition_key=HOST, instance=instance, raise_on_error=False)
        )
    assert result.success, failure_message(result)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pages = con.execute("SELECT count(*) FROM staging.pages").fetchone()[0]
        clustered = con.execute("SELECT count(*) FROM ml.page_clusters").fetchone()[0]
        health = con.execute("SELECT count(*) FROM marts.site_health").fetchone()[0]
        unreachable = con.execute(
            "SELECT count(*) FROM graph.page_metrics WHERE depth_after = -1"
        ).fetchone()[0]
    assert clustered == pages and health > 0 and unreachable == 0
