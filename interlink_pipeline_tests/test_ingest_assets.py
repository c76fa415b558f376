"""The ingest assets materialised through Dagster on a real temporary DuckDB file."""

import dagster as dg
import duckdb
import pytest

from interlink_pipeline.defs.ingest.crawl import pages, raw_crawl, raw_links
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import (
    LIGHT,
    failure_message,
    materialization_metadata,
    run_site,
    write_export,
)

INGEST = ["raw_crawl", "raw_links", "pages"]


def _checks(result) -> dict[str, bool]:
    return {
        e.event_specific_data.check_name: e.event_specific_data.passed
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }


def _rows(path, table, site=None) -> int:
    if not path.exists():
        return 0
    with duckdb.connect(str(path), read_only=True) as con:
        exists = con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE schema_name || '.' || table_name = ?", [table]
        ).fetchone()[0]
        if not exists:
            return 0
        where, params = ("", []) if site is None else (" WHERE site = ?", [site])
        return con.execute(f"SELECT count(*) FROM {table}{where}", params).fetchone()[0]


def test_sample_site_end_to_end(warehouse_path, sample_inbox, instance):
    result = run_site(warehouse_path, sample_inbox, instance, SAMPLE_HOST, steps=INGEST)
    assert result.success
    metadata = {step: materialization_metadata(result, step) for step in INGEST}
    assert metadata["raw_crawl"]["dagster/row_count"] == 1962
    assert metadata["raw_links"]["dagster/row_count"] == 13792
    assert metadata["pages"]["pages_kept"] == 1700
    assert metadata["pages"]["branding_removed"] == "alpine gear"
    assert dict(metadata["pages"]["excluded_by_reason"].iter_rows())["redirect"] == 68
    assert metadata["pages"]["home_page"] == f"https://{SAMPLE_HOST}/"
    assert metadata["pages"]["preview"].columns == ["url", "title_raw", "text", "text_source"]
    assert "Header" in metadata["raw_links"]["link_positions"]["link_position"].to_list()
    assert _checks(result) == {
        "raw_crawl_pages_schema": True,
        "raw_crawl_links_schema": True,
        "staging_pages_schema": True,
        "staging_excluded_pages_schema": True,
    }
    assert _rows(warehouse_path, "staging.pages", SAMPLE_HOST) == 1700
    # a rerun replaces the site's rows: same counts, nothing duplicated
    assert run_site(warehouse_path, sample_inbox, instance, SAMPLE_HOST, steps=INGEST).success
    assert _rows(warehouse_path, "staging.pages") == 1700
    assert _rows(warehouse_path, "raw.crawl_links") == 13792


def test_assets_show_table_schema_and_checks():
    spec = raw_crawl.specs_by_key[dg.AssetKey(["raw", "crawl_pages"])]
    assert spec.metadata["dagster/table_name"] == "raw.crawl_pages"
    columns = {c.name: c.type for c in spec.metadata["dagster/column_schema"].columns}
    assert columns["status_code"] == "INTEGER" and columns["loaded_at"] == "TIMESTAMP"
    # a step that writes two tables shows two assets, each with its own schema and check
    excluded = pages.specs_by_key[dg.AssetKey(["staging", "excluded_pages"])]
    assert "reason" in {c.name for c in excluded.metadata["dagster/column_schema"].columns}
    assert {(c.asset_key.to_user_string(), c.name) for c in pages.check_specs} == {
        ("staging/pages", "staging_pages_schema"),
        ("staging/excluded_pages", "staging_excluded_pages_schema"),
    }
    assert raw_links.partitions_def.name == "sites"


def test_partition_key_that_is_not_a_host(warehouse_path, sample_inbox, instance):
    result = run_site(warehouse_path, sample_inbox, instance, "WWW.AlpineGear.example", steps=["raw_crawl"])
    assert not result.success
    assert (
        "partition key 'WWW.AlpineGear.example' is not a normalised host; use 'www.alpinegear.example'"
        in (failure_message(result))
    )
    result = run_site(warehouse_path, sample_inbox, instance, "alpinegear", steps=["raw_crawl"])
    assert "'alpinegear' is not a host name" in failure_message(result)
    assert _rows(warehouse_path, "raw.crawl_pages") == 0


@pytest.mark.parametrize(
    "name", ["../../../etc/passwd", "/etc/passwd", "../other.example.com/internal_all.csv"]
)
def test_crawl_file_outside_the_drop_folder(warehouse_path, sample_inbox, instance, name):
    config = {"ops": {"raw_crawl": {"config": {"crawl_file": name}}}}
    result = run_site(
        warehouse_path, sample_inbox, instance, SAMPLE_HOST, steps=["raw_crawl"], run_config=config
    )
    assert not result.success
    assert f"'{name}' is outside the drop folder" in failure_message(result)
    assert _rows(warehouse_path, "raw.crawl_pages") == 0


def test_symlink_escaping_the_drop_folder(warehouse_path, sample_inbox, instance, tmp_path):
    secret = write_export(tmp_path / "elsewhere" / "internal_html.csv", ["Address"], [["https://x.example/"]])
    (sample_inbox / SAMPLE_HOST / "link.csv").symlink_to(secret)
    config = {"ops": {"raw_crawl": {"config": {"crawl_file": "link.csv"}}}}
    result = run_site(
        warehouse_path, sample_inbox, instance, SAMPLE_HOST, steps=["raw_crawl"], run_config=config
    )
    assert "'link.csv' is outside the drop folder" in failure_message(result)


def test_a_broken_new_crawl_keeps_the_previous_good_data(warehouse_path, sample_inbox, instance):
    assert run_site(warehouse_path, sample_inbox, instance, SAMPLE_HOST, steps=INGEST).success
    write_export(sample_inbox / SAMPLE_HOST / "internal_html_v2.csv", ["Page", "Title"], [["x", "y"]])
    result = run_site(warehouse_path, sample_inbox, instance, SAMPLE_HOST, steps=INGEST)
    assert not result.success
    message = failure_message(result)
    assert "internal_html_v2.csv: no header row with a URL column" in message
    assert "Columns found: 'Page', 'Title'" in message
    assert _rows(warehouse_path, "raw.crawl_pages", SAMPLE_HOST) == 1962
    assert _rows(warehouse_path, "staging.pages", SAMPLE_HOST) == 1700


def test_site_without_inlinks_export(warehouse_path, inbox_root, instance, crawls):
    from interlink_pipeline.core.ingest.inbox import register_crawl

    register_crawl(inbox_root, LIGHT, crawls / "lightchiropractic/internal_all.csv")
    result = run_site(warehouse_path, inbox_root, instance, LIGHT, steps=INGEST)
    assert result.success
    metadata = {step: materialization_metadata(result, step) for step in INGEST}
    assert metadata["raw_links"]["dagster/row_count"] == 0
    assert metadata["pages"]["pages_kept"] == 97
    assert _rows(warehouse_path, "staging.pages", LIGHT) == 97


def test_no_crawl_export_for_the_site(warehouse_path, inbox_root, instance):
    result = run_site(warehouse_path, inbox_root, instance, "www.example.com", steps=["raw_crawl"])
    assert "no crawl export in" in failure_message(result) and "interlink register" in failure_message(result)


@pytest.mark.parametrize(
    ("step", "table", "missing", "writer"),
    [
        ("pages", "staging.pages", "raw.crawl_pages", "raw_crawl"),
        ("serp_results", "serp.results", "staging.pages", "pages"),
        ("link_ranker", "ml.link_ranker_runs", "staging.pages", "pages"),
    ],
)
def test_a_step_before_the_step_it_reads(warehouse_path, inbox_root, instance, step, table, missing, writer):
    result = run_site(warehouse_path, inbox_root, instance, "www.example.com", steps=[step])
    expected = f"{missing} has no rows for www.example.com: materialise {writer} for it first."
    assert expected in failure_message(result)
    assert _rows(warehouse_path, table) == 0
