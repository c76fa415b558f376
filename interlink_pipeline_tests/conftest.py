"""Fixtures: the real crawls beside the checkout, sites materialised once for the session, temporary
warehouses and drop folders, the model, one PostgreSQL server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

if os.environ.get("PYTEST_XDIST_WORKER"):
    # one BLAS/OpenMP thread per xdist worker (and the runs it starts): two workers on two cores, not four
    # threads fighting for them; set before numpy, torch or scikit-learn load
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = "1"

import dagster as dg
import pytest

from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import (
    AFTER_PLAN,
    DBT_DIR,
    LIGHT,
    NUTRI,
    PROJECT_ROOT,
    SAMPLE_DIR,
    SHARED_CRAWLS,
    UP_TO_PLAN,
    UPSTREAM,
    failure_message,
    register_lightchiropractic,
    run_site,
)
from interlink_pipeline_tests.services import create_database, postgres_server
from interlink_pipeline_tests.site_runs import SiteFolder, SiteRun, materialise_once, shared_root


def pytest_configure(config):
    """Prepare the dbt manifest as `make install` does (outside `dagster dev` the code location never
    parses dbt on import): dbt's partial parsing makes an unchanged project quick. Once, before any
    pytest-xdist worker starts."""
    if hasattr(config, "workerinput"):
        return
    dbt = Path(sys.executable).with_name("dbt")
    subprocess.run(
        [str(dbt), "parse", "--profiles-dir", ".", "--quiet"], cwd=DBT_DIR, check=True, capture_output=True
    )


# Fixtures that make a test end-to-end: a whole pipeline materialised, or a service started.
E2E_FIXTURES = {"sample_site", "light_and_nutri", "planned_site", "postgres_port", "dev_server"}


def pytest_itemcollected(item):
    """Marks `e2e` every test that uses an E2E_FIXTURES fixture (the others carry the mark themselves)."""
    if E2E_FIXTURES & set(item.fixturenames):
        item.add_marker(pytest.mark.e2e)


def pytest_collection_modifyitems(items):
    """The `e2e` tests first (in file order), the short ones after: xdist hands each worker one test at a
    time (`--maxschedchunk 1` in the Makefile), so the short tests fill in while the other worker ends its
    last long one, and neither waits at the end (with the UI tests last and only then the short ones
    handed out, one worker idled 4 minutes)."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is None)


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory) -> Path:
    """Exported ONNX graphs go to a per-session folder, not the user's cache (one for every xdist worker:
    an export is written atomically)."""
    folder = _sites_root(tmp_path_factory) / "model-cache"
    folder.mkdir(exist_ok=True)
    previous = os.environ.get("INTERLINK_MODEL_CACHE")
    os.environ["INTERLINK_MODEL_CACHE"] = str(folder)
    yield folder
    if previous is None:
        del os.environ["INTERLINK_MODEL_CACHE"]
    else:
        os.environ["INTERLINK_MODEL_CACHE"] = previous


@pytest.fixture(scope="session", autouse=True)
def openpyxl_finds_relationships_by_id() -> Iterator[None]:
    """openpyxl binds each hyperlink of a sheet it opens for editing by a linear search of the sheet's
    relationships: the sample's workbook (48,670 links on similar_pages) opened in 45 s, 4 s with them
    indexed. The tests edit workbooks as an editor would; the product reads them read-only (no binding)."""
    from openpyxl.packaging.relationship import RelationshipList

    def by_id(relationships: RelationshipList, key: str):
        known = relationships.__dict__.get("by_id")
        if known is None or len(known) != len(relationships):
            known = relationships.__dict__["by_id"] = {r.Id: r for r in relationships}
        if key not in known:
            raise KeyError(f"Unknown relationship: {key}")
        return known[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RelationshipList, "get", by_id)
        yield


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


@pytest.fixture(scope="session")
def empty_instance(tmp_path_factory) -> Path:
    """An empty Dagster instance's folder, made once: creating its SQLite storages takes a second or
    more, a copy a fifth of that."""
    folder = tmp_path_factory.mktemp("empty-instance")
    with dg.instance_for_test(temp_dir=str(folder), set_dagster_home=False):
        pass
    return folder


@pytest.fixture()
def instance(empty_instance, tmp_path_factory):
    """A Dagster instance of the test's own (a copy of the empty one), $DAGSTER_HOME while it runs."""
    folder = tmp_path_factory.mktemp("instance")
    shutil.copytree(empty_instance, folder, dirs_exist_ok=True)
    with dg.instance_for_test(temp_dir=str(folder)) as test_instance:
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


@pytest.fixture(scope="session")
def postgres_port() -> Iterator[int]:
    """A throwaway PostgreSQL server for the session (the tests skip, saying why, where PostgreSQL is not
    installed); each test makes databases of its own on it (`new_database`)."""
    with postgres_server() as port:
        yield port


@pytest.fixture()
def new_database(postgres_port) -> Callable[[str], str]:
    """Makes an empty database on the session's server, named after its purpose and unique: its name."""

    def make(purpose: str) -> str:
        name = f"{purpose}_{uuid.uuid4().hex[:12]}"
        create_database(postgres_port, name)
        return name

    return make


@pytest.fixture()
def lake(postgres_port, new_database, tmp_path, monkeypatch) -> str:
    """A DuckLake warehouse (catalog in a database of its own, Parquet in a temporary folder), set in the
    environment as a deployment sets it (dbt and child processes read it there)."""
    location = (
        f"ducklake:postgres:dbname={new_database('lake')} host=127.0.0.1 port={postgres_port} user=postgres"
    )
    monkeypatch.setenv("INTERLINK_WAREHOUSE", location)
    monkeypatch.setenv("INTERLINK_LAKE_DATA_PATH", str(tmp_path / "lake-data"))
    monkeypatch.setenv("INTERLINK_LAKE_FILES", str(tmp_path / "lake-files"))
    return location


@pytest.fixture()
def small_disk(tmp_path):
    """A tmpfs of a few MB (mounting needs root, as in CI); unmounted afterwards."""
    mount_point = tmp_path / "small_disk"
    mount_point.mkdir()

    def mount(size_kb: int, *options: str) -> None:
        flags = ",".join([f"size={size_kb}k", *options])
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", flags, "tmpfs", str(mount_point)], capture_output=True
        )
        if done.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")

    def remount_read_only() -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(mount_point)], check=True)

    yield mount_point, mount, remount_read_only
    subprocess.run(["umount", str(mount_point)], capture_output=True)


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


# --- sites materialised once for the session ---------------------------------------------------------


def _sites_root(tmp_path_factory) -> Path:
    return shared_root(tmp_path_factory, os.environ.get("PYTEST_XDIST_WORKER", "master"))


def _steps(site: str, steps: list[str] | None = None):
    """A phase of a shared site: `steps` (default: all) for `site`, which must succeed."""

    def run(folder: SiteFolder, instance: dg.DagsterInstance) -> list[str]:
        result = run_site(folder.warehouse, folder.inbox, instance, site, steps=steps)
        assert result.success, failure_message(result)
        return [result.run_id]

    return run


def _registered(register: Callable[[Path], object], then: Callable):
    def run(folder: SiteFolder, instance: dg.DagsterInstance) -> list[str]:
        register(folder.inbox)
        return then(folder, instance)

    return run


@pytest.fixture(scope="session")
def sample_site(tmp_path_factory) -> SiteRun:
    """The bundled sample (crawl and links) through every step, once for the session. Read it as it is;
    copy it (`.folder.copy`) to write. `.phases["plan"]` is the folder as it stood after the steps up to
    the plan (nothing measured or published yet)."""
    from interlink_pipeline.core.ingest.inbox import register_crawl

    def sample(inbox: Path) -> None:
        register_crawl(inbox, SAMPLE_HOST, SAMPLE_DIR / "internal_all.csv", SAMPLE_DIR / "all_inlinks.csv")

    return materialise_once(
        _sites_root(tmp_path_factory),
        "sample",
        [
            ("plan", _registered(sample, _steps(SAMPLE_HOST, UP_TO_PLAN))),
            (None, _steps(SAMPLE_HOST, AFTER_PLAN)),
        ],
    )


@pytest.fixture(scope="session")
def light_and_nutri(tmp_path_factory, crawls) -> SiteRun:
    """lightchiropractic (crawl and All Inlinks) and then nutrisport (a crawl without links) through every
    step into one warehouse, once for the session. `.for_site(site)` reads one site's runs;
    `.phases["upstream"]` is the folder as it stood after lightchiropractic's steps up to the topics."""
    from interlink_pipeline.core.ingest.inbox import register_crawl

    def nutrisport(inbox: Path) -> None:
        register_crawl(inbox, NUTRI, crawls / "nutrisport/internal_html.csv")

    after_upstream = [step for step in UP_TO_PLAN + AFTER_PLAN if step not in UPSTREAM]
    return materialise_once(
        _sites_root(tmp_path_factory),
        "light-and-nutri",
        [
            (
                "upstream",
                _registered(lambda inbox: register_lightchiropractic(inbox, crawls), _steps(LIGHT, UPSTREAM)),
            ),
            (None, _steps(LIGHT, after_upstream)),
            (None, _registered(nutrisport, _steps(NUTRI))),
        ],
    )
