"""Shared fixtures: the real crawls beside the checkout, temporary warehouses, SF-shaped test files."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from interlink_pipeline.sample import SAMPLE_HOST

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DIR = PROJECT_ROOT / "data" / "sample"
SHARED_CRAWLS = Path(
    os.environ.get("INTERLINK_SHARED_CRAWLS", PROJECT_ROOT.parent / "shared" / "data" / "crawls")
)
LIGHT = "www.lightchiropractic.sg"
NUTRI = "nutrisport.es"
DBT_DIR = PROJECT_ROOT / "dbt"


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


def write_export(
    path: Path,
    header: list[str],
    rows: list[list[str]],
    *,
    encoding: str = "utf-8",
    delimiter: str = ",",
    preamble: str | None = None,
) -> Path:
    """Write a Screaming Frog-shaped CSV (every field quoted) in a given encoding and delimiter."""
    buffer = io.StringIO()
    if preamble is not None:
        buffer.write(f'"{preamble}"\r\n')
    writer = csv.writer(buffer, delimiter=delimiter, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue().encode(encoding))
    return path


SF_HEADER = [
    "Address",
    "Content Type",
    "Status Code",
    "Status",
    "Indexability",
    "Indexability Status",
    "Title 1",
    "Meta Description 1",
    "H1-1",
    "Canonical Link Element 1",
    "Crawl Depth",
]


def sf_row(
    url: str,
    title: str,
    *,
    status: str = "200",
    indexability: str = "Indexable",
    reason: str = "",
    h1: str = "",
    meta: str = "",
    canonical: str = "",
    depth: str = "1",
    content_type: str = "text/html; charset=UTF-8",
) -> list[str]:
    return [
        url,
        content_type,
        status,
        "OK" if status == "200" else "",
        indexability,
        reason,
        title,
        meta,
        h1,
        canonical,
        depth,
    ]


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


def chromium_path() -> str | None:
    """A Chromium on this machine ($INTERLINK_CHROMIUM, then PATH); None: Playwright's own build."""
    import shutil

    candidates = [os.environ.get("INTERLINK_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"]
    return next((shutil.which(c) for c in candidates if c and shutil.which(c)), None)


def register_lightchiropractic(inbox_root: Path, crawls: Path, crawl: Path | None = None) -> None:
    """lightchiropractic's crawl (or a variant of it) and its All Inlinks export, in the drop folder."""
    from interlink_pipeline.core.ingest.inbox import register_crawl

    links = crawls / "lightchiropractic/all_inlinks.csv"
    register_crawl(inbox_root, LIGHT, crawl or crawls / "lightchiropractic/internal_all.csv", links)


def run_site(
    warehouse_path: Path,
    inbox_root: Path,
    instance,
    site: str,
    run_config: dict | None = None,
    asset_selection: list[str] | None = None,
):
    """The site_pipeline job (or its `asset_selection`) for one site, in process (failures returned, not
    raised)."""
    from interlink_pipeline.definitions import build_defs

    defs = build_defs(str(warehouse_path), str(inbox_root))
    instance.add_dynamic_partitions("sites", [site])
    return defs.resolve_job_def("site_pipeline").execute_in_process(
        partition_key=site,
        instance=instance,
        raise_on_error=False,
        run_config=run_config,
        asset_selection=[dg.AssetKey(a) for a in asset_selection] if asset_selection else None,
    )


@pytest.fixture()
def cli_env(tmp_path):
    """The environment of an `interlink` command with its own Dagster home (configured, as the project's
    is), warehouse and drop folder."""
    (tmp_path / "home").mkdir()
    shutil.copyfile(PROJECT_ROOT / "dagster_home/dagster.yaml", tmp_path / "home" / "dagster.yaml")
    return {
        **os.environ,
        "DAGSTER_HOME": str(tmp_path / "home"),
        "INTERLINK_DUCKDB_PATH": str(tmp_path / "w.duckdb"),
        "INTERLINK_INBOX": str(tmp_path / "inbox"),
    }


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """`interlink ARGS` as a user runs it: a subprocess in the project folder."""
    return subprocess.run(
        [sys.executable, "-m", "interlink_pipeline.cli", *args],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def changed_light_crawl(crawls: Path, tmp_path: Path) -> Path:
    """lightchiropractic's export without one of its pages: a new crawl of the same site."""
    export = pl.read_csv(crawls / "lightchiropractic/internal_all.csv", infer_schema=False)
    changed = tmp_path / "internal_all.csv"
    export.filter(pl.col("Address") != "https://www.lightchiropractic.sg/conditions-scoliosis/").write_csv(
        changed
    )
    return changed
