"""The ingest assets materialised through Dagster on a real temporary DuckDB file."""

import dagster as dg
import duckdb
import pytest

from interlink_pipeline.definitions import build_defs
from interlink_pipeline.defs.crawl import pages, raw_crawl, raw_links
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.conftest import LIGHT, write_export
from interlink_pipeline_tests.run_results import failure_message

INGEST = [dg.AssetKey(name) for name in ("raw_crawl", "raw_links", "pages")]


def _run(defs, instance, site, run_config=None, selection=None):
    """Run the site pipeline's ingest assets (or `selection`) for one site."""
    if not instance.has_dynamic_partition("sites", site):
        instance.add_dynamic_partitions("sites", [site])
    job = defs.resolve_job_def("site_pipeline")
    return job.execute_in_process(
        partition_key=site,
        instance=instance,
        run_config=run_config,
        raise_on_error=False,
        asset_selection=selection or INGEST,
    )


def _materializations(result) -> dict[str, dict]:
    return {
        e.asset_key.to_user_string(): e.event_specific_data.materialization.metadata
        for e in result.all_events
        if e.event_type_value == "ASSET_MATERIALIZATION"
    }


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
    defs = build_defs(str(warehouse_path), str(sample_inbox))
    result = _run(defs, instance, SAMPLE_HOST)
    assert result.success
    metadata = _materializations(result)
    assert metadata["raw_crawl"]["dagster/row_count"].value == 1962
    assert metadata["raw_links"]["dagster/row_count"].value == 13792
    assert metadata["pages"]["pages_kept"].value == 1700
    assert metadata["pages"]["branding_removed"].value == "alpine gear"
    assert "| redirect | 68 |" in metadata["pages"]["excluded_by_reason"].value
    assert metadata["pages"]["home_page"].value == f"https://{SAMPLE_HOST}/"
    assert "| url | title_raw | text | text_source |" in metadata["pages"]["preview"].value
    assert "| Header |" in metadata["raw_links"]["link_positions"].value
    assert _checks(result) == {
        "raw_crawl_pages_schema": True,
        "raw_crawl_links_schema": True,
        "staging_pages_schema": True,
        "staging_excluded_pages_schema": True,
    }
    assert _rows(warehouse_path, "staging.pages", SAMPLE_HOST) == 1700
    # a rerun replaces the site's rows: same counts, nothing duplicated
    assert _run(defs, instance, SAMPLE_HOST).success
    assert _rows(warehouse_path, "staging.pages") == 1700
    assert _rows(warehouse_path, "raw.crawl_links") == 13792


def test_assets_show_table_schema_and_checks():
    spec = raw_crawl.specs_by_key[dg.AssetKey("raw_crawl")]
    assert spec.metadata["dagster/table_name"] == "raw.crawl_pages"
    columns = {c.name: c.type for c in spec.metadata["dagster/column_schema"].columns}
    assert columns["status_code"] == "INTEGER" and columns["loaded_at"] == "TIMESTAMP"
    assert {c.name for c in pages.check_specs} == {"staging_pages_schema", "staging_excluded_pages_schema"}
    assert raw_links.partitions_def.name == "sites"


def test_partition_key_that_is_not_a_host(warehouse_path, sample_inbox, instance):
    defs = build_defs(str(warehouse_path), str(sample_inbox))
    result = _run(defs, instance, "WWW.AlpineGear.example", selection=[dg.AssetKey("raw_crawl")])
    assert not result.success
    assert (
        "partition key 'WWW.AlpineGear.example' is not a normalised host; use 'www.alpinegear.example'"
        in (failure_message(result))
    )
    result = _run(defs, instance, "alpinegear", selection=[dg.AssetKey("raw_crawl")])
    assert "'alpinegear' is not a host name" in failure_message(result)
    assert _rows(warehouse_path, "raw.crawl_pages") == 0


@pytest.mark.parametrize(
    "name", ["../../../etc/passwd", "/etc/passwd", "../other.example.com/internal_all.csv"]
)
def test_crawl_file_outside_the_drop_folder(warehouse_path, sample_inbox, instance, name):
    defs = build_defs(str(warehouse_path), str(sample_inbox))
    config = {"ops": {"raw_crawl": {"config": {"crawl_file": name}}}}
    result = _run(defs, instance, SAMPLE_HOST, config, selection=[dg.AssetKey("raw_crawl")])
    assert not result.success
    assert f"'{name}' is outside the drop folder" in failure_message(result)
    assert _rows(warehouse_path, "raw.crawl_pages") == 0


def test_symlink_escaping_the_drop_folder(warehouse_path, sample_inbox, instance, tmp_path):
    secret = write_export(tmp_path / "elsewhere" / "internal_html.csv", ["Address"], [["https://x.example/"]])
    (sample_inbox / SAMPLE_HOST / "link.csv").symlink_to(secret)
    defs = build_defs(str(warehouse_path), str(sample_inbox))
    config = {"ops": {"raw_crawl": {"config": {"crawl_file": "link.csv"}}}}
    result = _run(defs, instance, SAMPLE_HOST, config, selection=[dg.AssetKey("raw_crawl")])
    assert "'link.csv' is outside the drop folder" in failure_message(result)


def test_a_broken_new_crawl_keeps_the_previous_good_data(warehouse_path, sample_inbox, instance):
    defs = build_defs(str(warehouse_path), str(sample_inbox))
    assert _run(defs, instance, SAMPLE_HOST).success
    write_export(sample_inbox / SAMPLE_HOST / "internal_html_v2.csv", ["Page", "Title"], [["x", "y"]])
    result = _run(defs, instance, SAMPLE_HOST)
    assert not result.success
    message = failure_message(result)
    assert "internal_html_v2.csv: no header row with a URL column" in message
    assert "Columns found: 'Page', 'Title'" in message
    assert _rows(warehouse_path, "raw.crawl_pages", SAMPLE_HOST) == 1962
    assert _rows(warehouse_path, "staging.pages", SAMPLE_HOST) == 1700


def test_site_without_inlinks_export(warehouse_path, inbox_root, instance, crawls):
    from interlink_pipeline.core.ingest.inbox import register_crawl

    register_crawl(inbox_root, LIGHT, crawls / "lightchiropractic/internal_all.csv")
    defs = build_defs(str(warehouse_path), str(inbox_root))
    result = _run(defs, instance, LIGHT)
    assert result.success
    metadata = _materializations(result)
    assert metadata["raw_links"]["dagster/row_count"].value == 0
    assert metadata["pages"]["pages_kept"].value == 97
    assert _rows(warehouse_path, "staging.pages", LIGHT) == 97


def test_no_crawl_export_for_the_site(warehouse_path, inbox_root, instance):
    defs = build_defs(str(warehouse_path), str(inbox_root))
    result = _run(defs, instance, "www.example.com", selection=[dg.AssetKey("raw_crawl")])
    assert "no crawl export in" in failure_message(result) and "interlink register" in failure_message(result)


def test_pages_before_raw_crawl(warehouse_path, inbox_root, instance):
    defs = build_defs(str(warehouse_path), str(inbox_root))
    result = _run(defs, instance, "www.example.com", selection=[dg.AssetKey("pages")])
    assert "raw.crawl_pages has no rows for www.example.com: materialise raw_crawl" in failure_message(result)
    assert _rows(warehouse_path, "staging.pages") == 0
