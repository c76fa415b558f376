"""The DuckDB warehouse: validated, per-site, all-or-nothing writes on a real file."""

import os
import socket
import subprocess
import sys
import time

import duckdb
import polars as pl
import pytest

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
from interlink_pipeline.core.ingest.pages import clean_pages
from interlink_pipeline.core.warehouse.contract import ContractError, duckdb_type, table_columns
from interlink_pipeline.core.warehouse.database import connect, ensure_tables
from interlink_pipeline.core.warehouse.schemas import TABLES
from interlink_pipeline.core.warehouse.store import SpilledRows, read_site, replace_site_rows
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import SAMPLE_DIR


@pytest.fixture(scope="module")
def sample_frames():
    raw = read_crawl_export(SAMPLE_DIR / "internal_all.csv", SAMPLE_HOST).frame
    cleaned = clean_pages(raw, SAMPLE_HOST)
    return {
        "raw.crawl_pages": raw,
        "staging.pages": cleaned.pages,
        "staging.excluded_pages": cleaned.excluded,
    }


def _counts(path) -> dict[tuple[str, str], int]:
    with duckdb.connect(str(path), read_only=True) as con:
        return {
            (table, site): n
            for table in ("raw.crawl_pages", "staging.pages", "staging.excluded_pages")
            for site, n in con.execute(f"SELECT site, count(*) FROM {table} GROUP BY site").fetchall()
        }


def _as_site(frames, site):
    return {t: f.with_columns(pl.lit(site).alias("site")) for t, f in frames.items()}


def test_replace_is_idempotent_and_per_site(warehouse_path, sample_frames):
    replace_site_rows(warehouse_path, SAMPLE_HOST, sample_frames)
    replace_site_rows(warehouse_path, "other.example.com", _as_site(sample_frames, "other.example.com"))
    first = _counts(warehouse_path)
    replace_site_rows(warehouse_path, SAMPLE_HOST, sample_frames)
    assert _counts(warehouse_path) == first
    assert first[("staging.pages", SAMPLE_HOST)] == 1700
    smaller = {t: f.head(10) for t, f in sample_frames.items() if t == "raw.crawl_pages"}
    replace_site_rows(warehouse_path, SAMPLE_HOST, smaller)
    after = _counts(warehouse_path)
    assert after[("raw.crawl_pages", SAMPLE_HOST)] == 10
    assert after[("raw.crawl_pages", "other.example.com")] == first[("raw.crawl_pages", "other.example.com")]
    assert after[("staging.pages", SAMPLE_HOST)] == 1700  # tables not written keep their rows


def test_contract_violation_writes_nothing(warehouse_path, sample_frames):
    replace_site_rows(warehouse_path, SAMPLE_HOST, sample_frames)
    before = _counts(warehouse_path)
    broken = dict(sample_frames)
    broken["staging.pages"] = sample_frames["staging.pages"].with_columns(pl.lit(False).alias("is_home"))
    broken["staging.excluded_pages"] = sample_frames["staging.excluded_pages"].with_columns(
        pl.lit("because").alias("reason")
    )
    with pytest.raises(ContractError) as error:
        replace_site_rows(warehouse_path, SAMPLE_HOST, broken)
    message = str(error.value)
    assert "staging.pages breaks its schema" in message and "one_home_page" in message
    assert "staging.excluded_pages breaks its schema" in message and "reason: isin" in message
    assert error.value.reports["raw.crawl_pages"].passed
    assert _counts(warehouse_path) == before


def test_spilled_rows_are_written_whole_or_not_at_all(warehouse_path, sample_frames, tmp_path):
    """Rows spilled a chunk at a time (a large site's candidates) replace the site's rows as the frame
    written at once would; a chunk that breaks the schema, or a key two chunks repeat, writes nothing,
    and the spill folder goes either way."""
    replace_site_rows(warehouse_path, SAMPLE_HOST, sample_frames)
    before = _counts(warehouse_path)
    raw = sample_frames["raw.crawl_pages"].drop("site")
    shown = raw.head(500)

    def spilled_write(*chunks):
        with SpilledRows("raw.crawl_pages", SAMPLE_HOST, tmp_path / "spill") as spilled:
            for chunk in chunks:
                spilled.add(chunk)
            assert sorted(spilled.folder.iterdir()) == spilled.files  # a chunk that broke was not kept
            return replace_site_rows(warehouse_path, SAMPLE_HOST, {"raw.crawl_pages": spilled})

    broken = shown.slice(300, 100).with_columns(pl.lit(0, dtype=pl.Int64).alias("row_number"))
    with pytest.raises(ContractError, match="row_number: greater_than_or_equal_to"):
        spilled_write(shown.slice(0, 300), broken, shown.slice(400, 100))
    with pytest.raises(ContractError, match="100 duplicated keys"):
        spilled_write(shown.slice(0, 300), shown.slice(200, 300))
    assert _counts(warehouse_path) == before
    assert not list((tmp_path / "spill").iterdir())

    report = spilled_write(shown.slice(0, 200), shown.slice(200, 0), shown.slice(200, 300))
    assert report["raw.crawl_pages"].rows == 500 and report["raw.crawl_pages"].passed
    stored = read_site(warehouse_path, "raw.crawl_pages", SAMPLE_HOST).sort("row_number")
    assert stored.drop("site").equals(shown)
    assert _counts(warehouse_path) == {**before, ("raw.crawl_pages", SAMPLE_HOST): 500}
    assert not list((tmp_path / "spill").iterdir())


def test_a_killed_process_spill_is_removed_by_the_next(tmp_path):
    """A run killed while spilling leaves its folder; the next spill on the host removes it, and never a
    running process's."""
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    host = socket.gethostname()
    abandoned = tmp_path / f"{host}-{int(ended.stdout)}-ml.link_candidates-x1"
    running = tmp_path / f"{host}-{os.getpid()}-ml.link_candidates-x2"
    elsewhere = tmp_path / f"other-host-{int(ended.stdout)}-ml.link_candidates-x3"
    for folder in (abandoned, running, elsewhere):
        folder.mkdir()
        (folder / "00000.parquet").write_bytes(b"rows")
    with SpilledRows("ml.link_candidates", SAMPLE_HOST, tmp_path) as spilled:
        assert spilled.folder.name.startswith(f"{host}-{os.getpid()}-ml.link_candidates-")
        assert sorted(tmp_path.iterdir()) == sorted([running, elsewhere, spilled.folder])
    assert sorted(tmp_path.iterdir()) == sorted([running, elsewhere])


def test_failure_inside_the_transaction_rolls_back(warehouse_path, sample_frames):
    replace_site_rows(warehouse_path, SAMPLE_HOST, sample_frames)
    before = _counts(warehouse_path)
    columns = ", ".join(f'"{n}" {duckdb_type(t)}' for n, (t, _) in table_columns("staging.pages").items())
    with connect(warehouse_path) as con:  # a column the insert cannot fill makes the second table fail
        con.execute("CREATE TABLE keep AS SELECT * FROM staging.pages")
        con.execute(f"CREATE OR REPLACE TABLE staging.pages ({columns}, must_have INTEGER NOT NULL)")
        con.execute("INSERT INTO staging.pages SELECT *, 1 FROM keep")
    with pytest.raises(duckdb.ConstraintException):
        replace_site_rows(warehouse_path, SAMPLE_HOST, sample_frames)
    assert _counts(warehouse_path) == before  # raw.crawl_pages was deleted and re-inserted, then rolled back


def test_tables_carry_comments_and_gain_new_columns(warehouse_path):
    with connect(warehouse_path) as con:
        con.execute("CREATE SCHEMA staging")
        con.execute("CREATE TABLE staging.pages (site VARCHAR, page_id VARCHAR)")
        ensure_tables(con)
        columns = [
            r[0]
            for r in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE schema_name='staging' AND table_name='pages'"
            ).fetchall()
        ]
        comment = con.execute(
            "SELECT comment FROM duckdb_columns() WHERE schema_name='raw' AND table_name='crawl_pages' "
            "AND column_name='crawl_id'"
        ).fetchone()[0]
    assert columns[:2] == ["site", "page_id"] and set(columns) == set(table_columns("staging.pages"))
    assert comment.startswith("Content hash")
    assert set(TABLES) >= {"raw.crawl_pages", "raw.crawl_links", "staging.pages", "staging.excluded_pages"}


def test_read_site_returns_typed_empty_frames(warehouse_path):
    frame = read_site(warehouse_path, "staging.pages", "nothing.example.com")
    assert (
        frame.is_empty() and frame.schema["is_home"] == pl.Boolean and frame.schema["crawl_depth"] == pl.Int32
    )


HOLD_LOCK = """
import duckdb, sys, time
con = duckdb.connect(sys.argv[1])
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def _hold_lock(path, seconds):
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_writer_waits_for_another_process_lock(warehouse_path, sample_frames):
    holder = _hold_lock(warehouse_path, 1.5)
    started = time.monotonic()
    replace_site_rows(warehouse_path, SAMPLE_HOST, sample_frames, lock_timeout_s=30)
    assert time.monotonic() - started >= 0.5
    holder.wait(timeout=10)
    assert _counts(warehouse_path)[("staging.pages", SAMPLE_HOST)] == 1700


def test_a_lock_held_too_long_gives_a_clear_error(warehouse_path, sample_frames):
    holder = _hold_lock(warehouse_path, 5)
    try:
        with pytest.raises(InputError, match=r"cannot open the warehouse .*interlink\.duckdb: .*lock"):
            replace_site_rows(warehouse_path, SAMPLE_HOST, sample_frames, lock_timeout_s=0.5)
    finally:
        holder.kill()
        holder.wait()


def test_read_only_open_of_a_missing_file(tmp_path):
    with (
        pytest.raises(InputError, match="no warehouse file yet"),
        connect(tmp_path / "none.duckdb", read_only=True),
    ):
        pass


def test_a_snapshot_is_never_published_over_the_warehouse(tmp_path):
    """A run configured to publish its snapshot at the warehouse's own path (or a link to it) stops in a
    sentence, and the warehouse keeps every byte."""
    from interlink_pipeline.core.warehouse.snapshot import publish_snapshot

    warehouse = tmp_path / "w.duckdb"
    with duckdb.connect(str(warehouse)) as con:
        con.execute("CREATE TABLE kept AS SELECT 42 AS answer")
    (tmp_path / "link.duckdb").symlink_to(warehouse)
    before = warehouse.read_bytes()
    for snapshot in (warehouse, tmp_path / "link.duckdb"):
        with pytest.raises(
            InputError, match=r"is the warehouse itself: publishing would replace the warehouse"
        ):
            publish_snapshot(warehouse, snapshot)
    assert warehouse.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "link.duckdb",
        "w.duckdb",
    ]
