"""The drop-folder sensor, evaluated against a real Dagster instance."""

import os
import shutil
import time

import dagster as dg
import pytest

from interlink_pipeline.core.ingest.inbox import register_crawl, scan_inbox
from interlink_pipeline.core.ingest.tabular_files import file_digest
from interlink_pipeline.definitions import build_defs
from interlink_pipeline.defs.ingest.inbox_sensor import crawl_inbox_sensor
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import LIGHT, SAMPLE_DIR


def _settle(folder):
    """Age every file past the sensor's settle time (as if copied in a while ago)."""
    past = time.time() - 60
    for path in folder.rglob("*"):
        os.utime(path, (past, past))


def _tick(defs, instance, cursor=None):
    # the code location's own resources (build_sensor_context does not take them from `definitions`)
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, definitions=defs, resources=defs.resources
    )
    return crawl_inbox_sensor(context), context


def test_one_run_per_file_content(warehouse_path, sample_inbox, instance):
    defs = build_defs(str(warehouse_path), str(sample_inbox))
    _settle(sample_inbox)
    result, _ = _tick(defs, instance)
    (request,) = result.run_requests
    crawl = sample_inbox / SAMPLE_HOST / "internal_all.csv"
    links = sample_inbox / SAMPLE_HOST / "all_inlinks.csv"
    assert request.partition_key == SAMPLE_HOST
    assert request.run_key == f"{SAMPLE_HOST}:{file_digest(crawl)}:{file_digest(links)}"
    assert request.run_config["ops"]["raw_crawl"]["config"]["crawl_file"] == "internal_all.csv"
    assert request.run_config["ops"]["raw_links"]["config"]["links_file"] == "all_inlinks.csv"
    assert request.tags["interlink/crawl_id"] == file_digest(crawl)
    (partitions,) = result.dynamic_partitions_requests
    assert list(partitions.partition_keys) == [SAMPLE_HOST]

    # the same files on the next tick: nothing to do
    again, _ = _tick(defs, instance, result.cursor)
    assert not again.run_requests
    assert again.skip_reason.skip_message == "no new or changed crawl exports"

    # the same content dropped again (new mtime, same bytes): still nothing
    shutil.copyfile(SAMPLE_DIR / "internal_all.csv", crawl)
    _settle(sample_inbox)
    same, _ = _tick(defs, instance, again.cursor)
    assert not same.run_requests

    # changed content: one new run, and the site is not re-added
    instance.add_dynamic_partitions("sites", [SAMPLE_HOST])
    crawl.write_bytes(crawl.read_bytes().replace(b"Hiking Boots", b"Walking Boots", 1))
    _settle(sample_inbox)
    changed, _ = _tick(defs, instance, same.cursor)
    (request,) = changed.run_requests
    assert request.run_key.split(":")[1] == file_digest(crawl)
    assert not changed.dynamic_partitions_requests


def test_two_sites_dropped_at_once(warehouse_path, sample_inbox, instance, crawls):
    register_crawl(sample_inbox, LIGHT, crawls / "lightchiropractic/internal_all.csv")
    _settle(sample_inbox)
    result, _ = _tick(build_defs(str(warehouse_path), str(sample_inbox)), instance)
    assert sorted(r.partition_key for r in result.run_requests) == [SAMPLE_HOST, LIGHT]
    light = next(r for r in result.run_requests if r.partition_key == LIGHT)
    assert light.run_key.endswith(":no-links")
    assert light.run_config["ops"]["raw_links"]["config"]["links_file"] is None


def test_bad_folders_are_reported_and_skipped(warehouse_path, sample_inbox, instance):
    (sample_inbox / "not a host").mkdir()
    (sample_inbox / "not a host" / "internal_html.csv").write_text("Address\nhttps://x.example/\n")
    (sample_inbox / "WWW.Example.com").mkdir()
    (sample_inbox / "stray.csv").write_text("Address\n")
    scan = scan_inbox(sample_inbox, now=time.time() + 60)
    assert [d.site for d in scan.drops] == [SAMPLE_HOST]
    assert any("not a host/" in p and "is not a host name" in p for p in scan.problems)
    assert any("rename the folder to its normalised host 'www.example.com'" in p for p in scan.problems)
    assert any(p.startswith("stray.csv: files belong in a site folder") for p in scan.problems)
    _settle(sample_inbox)
    result, _ = _tick(build_defs(str(warehouse_path), str(sample_inbox)), instance)
    assert [r.partition_key for r in result.run_requests] == [SAMPLE_HOST]


def test_a_file_still_being_copied_waits(warehouse_path, sample_inbox, instance):
    result, _ = _tick(
        build_defs(str(warehouse_path), str(sample_inbox)), instance
    )  # just written: not settled
    assert not result.run_requests
    _settle(sample_inbox)
    result, _ = _tick(build_defs(str(warehouse_path), str(sample_inbox)), instance, result.cursor)
    assert len(result.run_requests) == 1


def test_newest_export_wins_and_inlinks_are_told_apart(inbox_root):
    folder = inbox_root / SAMPLE_HOST
    folder.mkdir()
    for name, age in [
        ("internal_html_old.csv", 300),
        ("internal_html_new.csv", 100),
        ("all_inlinks.csv", 200),
        (".hidden.csv", 10),
        ("~$internal.xlsx", 10),
        ("notes.md", 10),
    ]:
        (folder / name).write_text("Address\n")
        os.utime(folder / name, (time.time() - age, time.time() - age))
    (folder / "gsc_queries.csv").write_text("Page,Query\n")
    os.utime(folder / "gsc_queries.csv", (time.time() - 50, time.time() - 50))
    (drop,) = scan_inbox(inbox_root).drops
    assert drop.crawl_file.name == "internal_html_new.csv"
    assert drop.links_file.name == "all_inlinks.csv"
    assert drop.queries_file.name == "gsc_queries.csv"


def test_how_often_the_drop_folder_is_scanned_is_a_setting(monkeypatch):
    import importlib

    from interlink_pipeline.defs.ingest import inbox_sensor as sensors

    assert crawl_inbox_sensor.minimum_interval_seconds == sensors.INBOX_SCAN_DEFAULT_S
    monkeypatch.setenv(sensors.INBOX_SCAN_ENV, "half a minute")
    with pytest.raises(ValueError, match=r"must be a whole number of seconds .* not 'half a minute'"):
        sensors.inbox_scan_seconds()
    monkeypatch.setenv(sensors.INBOX_SCAN_ENV, "5")
    try:
        assert importlib.reload(sensors).crawl_inbox_sensor.minimum_interval_seconds == 5
    finally:
        monkeypatch.delenv(sensors.INBOX_SCAN_ENV)
        importlib.reload(sensors)


def test_a_decisions_file_starts_link_decisions_for_its_site_alone(sample_site, tmp_path, instance, crawls):
    """A decisions file dropped into a planned site's decisions/ folder: one run of link_decisions for that
    site, which writes its decisions and no other site's; its removal is a change too."""
    import duckdb
    import polars as pl

    sample = sample_site.folder.copy(tmp_path / "sample")
    register_crawl(sample.inbox, LIGHT, crawls / "lightchiropractic/internal_all.csv")
    defs = build_defs(str(sample.warehouse), str(sample.inbox))
    instance.add_dynamic_partitions("sites", [SAMPLE_HOST, LIGHT])
    _settle(sample.inbox)
    crawls_run, _ = _tick(defs, instance)
    assert sorted(r.partition_key for r in crawls_run.run_requests) == [SAMPLE_HOST, LIGHT]

    with duckdb.connect(str(sample.warehouse), read_only=True) as con:
        plan = con.execute("SELECT source_url, target_url FROM graph.link_plan LIMIT 2").pl()
    folder = sample.inbox / SAMPLE_HOST / "decisions"
    folder.mkdir()
    plan.with_columns(pl.Series("decision", ["accept", "reject"])).write_csv(folder / "review.csv")
    _settle(sample.inbox)
    result, _ = _tick(defs, instance, crawls_run.cursor)
    (request,) = result.run_requests
    assert request.partition_key == SAMPLE_HOST and request.run_key.startswith(f"{SAMPLE_HOST}:decisions:")
    assert request.asset_selection == [dg.AssetKey(["graph", "link_decisions"])]
    run = defs.resolve_job_def("site_pipeline").execute_in_process(
        partition_key=SAMPLE_HOST,
        instance=instance,
        asset_selection=request.asset_selection,
        tags=request.tags,
    )
    assert run.success
    written = {e.asset_key.to_user_string() for e in run.get_asset_materialization_events()}
    assert written == {"graph/link_decisions"}
    with duckdb.connect(str(sample.warehouse), read_only=True) as con:
        stored = con.execute("SELECT site, decision FROM graph.link_decisions ORDER BY row_number").fetchall()
    assert stored == [(SAMPLE_HOST, "accept"), (SAMPLE_HOST, "reject")]

    again, _ = _tick(defs, instance, result.cursor)
    assert not again.run_requests  # the same files: nothing to do
    (folder / "review.csv").unlink()
    removed, _ = _tick(defs, instance, again.cursor)
    (request,) = removed.run_requests
    assert request.partition_key == SAMPLE_HOST and request.run_key.endswith(":none")
