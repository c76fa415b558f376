"""Fixtures: the real crawls beside the checkout, temporary warehouses and drop folders, the model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import DBT_DIR, LIGHT, PROJECT_ROOT, SAMPLE_DIR, SHARED_CRAWLS
from interlink_pipeline_tests.services import create_database, postgres_server


def pytest_configure(config):
    """Prepare the dbt manifest as `make install` does (outside `dagster dev` the code location never
    parses dbt on import): dbt's partial parsing makes an unchanged project quick."""
    dbt = Path(sys.executable).with_name("dbt")
    subprocess.run(
        [str(dbt), "parse", "--profiles-dir", ".", "--quiet"], cwd=DBT_DIR, check=True, capture_output=True
    )


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory) -> Path:
    """Exported ONNX graphs go to a per-session folder, not the user's cache."""
    folder = tmp_path_factory.mktemp("model-cache")
    previous = os.environ.get("INTERLINK_MODEL_CACHE")
    os.environ["INTERLINK_MODEL_CACHE"] = str(folder)
    yield folder
    if previous is None:
        del os.environ["INTERLINK_MODEL_CACHE"]
    else:
        os.environ["INTERLINK_MODEL_CACHE"] = previous


@pytest.fixture(scope="session")
def encoder():
    """The default encoder (bundled model, ONNX on CPU), loaded once for the session."""
    from interlink_pipeline.core.ml.encoders import EncoderSettings, load_encoder

    return load_encoder(EncoderSettings())


@pytest.fixture(scope="session")
def crawls() -> Path:
    """../shared/data/crawls: read in place, never copied into the repo."""
    if not (SHARED_CRAWLS / "PROVENANCE.md").exists():
        pytest.fail(f"real crawl exports not found at {SHARED_CRAWLS}; set INTERLINK_SHARED_CRAWLS")
    return SHARED_CRAWLS


@pytest.fixture()
def warehouse_path(tmp_path: Path) -> Path:
    return tmp_path / "warehouse" / "interlink.duckdb"


@pytest.fixture()
def inbox_root(tmp_path: Path) -> Path:
    root = tmp_path / "inbox"
    root.mkdir()
    return root


@pytest.fixture()
def instance():
    with dg.instance_for_test() as test_instance:
        yield test_instance


@pytest.fixture()
def sample_inbox(inbox_root: Path) -> Path:
    """The bundled sample registered in a temporary drop folder."""
    from interlink_pipeline.core.ingest.inbox import register_crawl

    register_crawl(inbox_root, SAMPLE_HOST, SAMPLE_DIR / "internal_all.csv", SAMPLE_DIR / "all_inlinks.csv")
    return inbox_root


@pytest.fixture()
def light_pages(crawls):
    """lightchiropractic's cleaned pages."""
    from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
    from interlink_pipeline.core.ingest.pages import clean_pages

    raw = read_crawl_export(crawls / "lightchiropractic/internal_all.csv", LIGHT).frame
    return clean_pages(raw, LIGHT).pages


@pytest.fixture()
def light_inbox(inbox_root, crawls):
    """lightchiropractic's crawl (without its links export) in the drop folder."""
    from interlink_pipeline.core.ingest.inbox import register_crawl

    register_crawl(inbox_root, LIGHT, crawls / "lightchiropractic/internal_all.csv")
    return inbox_root


@pytest.fixture()
def postgres_port() -> Iterator[int]:
    """A throwaway PostgreSQL server (the test skips, saying why, where PostgreSQL is not installed)."""
    with postgres_server() as port:
        yield port


@pytest.fixture()
def postgres_url(postgres_port) -> str:
    create_database(postgres_port, "dagster")
    return f"postgresql://postgres@127.0.0.1:{postgres_port}/dagster"


@pytest.fixture()
def lake(postgres_port, tmp_path, monkeypatch) -> str:
    """A DuckLake warehouse (catalog in a throwaway PostgreSQL, Parquet in a temporary folder), set in the
    environment as a deployment sets it (dbt and child processes read it there)."""
    create_database(postgres_port, "lake")
    location = f"ducklake:postgres:dbname=lake host=127.0.0.1 port={postgres_port} user=postgres"
    monkeypatch.setenv("INTERLINK_WAREHOUSE", location)
    monkeypatch.setenv("INTERLINK_LAKE_DATA_PATH", str(tmp_path / "lake-data"))
    monkeypatch.setenv("INTERLINK_LAKE_FILES", str(tmp_path / "lake-files"))
    return location


@pytest.fixture()
def cli_env(tmp_path):
    """The environment of an `interlink` command with its own Dagster home (configured, as the project's
    is), warehouse and drop folder."""
    (tmp_path / "home").mkdir()
    shutil.copyfile(PROJECT_ROOT / "dagster_home/dagster.yaml", tmp_path / "home" / "dagster.yaml")
    return {
        **os.environ,
        "DAGSTER_HOME": str(tmp_path / "home"),
        "INTERLINK_WAREHOUSE": str(tmp_path / "w.duckdb"),
        "INTERLINK_INBOX": str(tmp_path / "inbox"),
    }
