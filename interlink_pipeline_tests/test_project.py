"""Project-level promises: a pure core, a reproducible sample, a manual (README and docs/) that lists every
table and every core file."""

import ast
import fnmatch
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import polars as pl
import pytest
import yaml

from interlink_pipeline.core.warehouse import table_docs
from interlink_pipeline.core.warehouse.contract import table_columns
from interlink_pipeline.core.warehouse.schemas import TABLES
from interlink_pipeline.core.warehouse.table_docs import (
    COLUMN_DOCS,
    END,
    MARTS_DOCS,
    REFERENCE,
    SOURCES,
    START,
    column_docs,
    column_docs_markdown,
    dbt_sources,
    mart_columns,
    sources_yaml,
    tables_markdown,
)
from interlink_pipeline.sample import generate_site, write_site
from interlink_pipeline.sample.location_tree import generate_location_site
from interlink_pipeline.sample.vocabulary import TOPICS
from interlink_pipeline_tests.helpers import PROJECT_ROOT, SAMPLE_DIR

CORE = PROJECT_ROOT / "interlink_pipeline" / "core"


def test_every_file_the_package_reads_is_shipped():
    """A data file beside the code (weights, word lists) is in a built wheel only through package-data."""
    shipped = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    package = PROJECT_ROOT / "interlink_pipeline"
    data = [
        path.relative_to(package).as_posix()
        for path in package.rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc")
    ]
    assert data, "the package reads data files: this test must see them"
    missing = [f for f in data if not any(fnmatch.fnmatch(f, g) for g in shipped["interlink_pipeline"])]
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"


def test_bundled_sample_is_the_generator_output(tmp_path):
    paths = write_site(generate_site(), tmp_path)
    assert set(paths) == {"crawl", "links", "truth"}
    for path in paths.values():
        assert path.read_bytes() == (SAMPLE_DIR / path.name).read_bytes(), f"data/sample/{path.name} is stale"


def test_generator_is_deterministic_and_covers_every_topic():
    first, second = generate_site(800, seed=3), generate_site(800, seed=3)
    assert first.crawl.equals(second.crawl) and first.links.equals(second.links)
    assert not first.crawl.equals(generate_site(800, seed=4).crawl)
    truth = first.truth
    assert set(truth.filter(pl.col("topic") != "")["topic"]) == {t.slug for t in TOPICS}
    assert set(truth["page_type"]) >= {
        "home",
        "category",
        "subcategory",
        "product",
        "blog",
        "guide",
        "utility",
    }
    assert truth["url"].is_unique().all()


def test_the_location_tree_site_reuses_plan_names_across_branches_and_its_editors_link_within_them():
    site = generate_location_site(states=2, areas_per_state=1, cities_per_area=2, communities_per_city=2)
    assert site.crawl.equals(generate_location_site(states=2, areas_per_state=1, cities_per_area=2,
                                                    communities_per_city=2).crawl)  # fmt: skip
    truth = site.truth
    plans = truth.filter(pl.col("page_type") == "floor_plan").with_columns(
        pl.col("url").str.extract(r"/floor-plans/([^/]+)/$").alias("plan")
    )
    assert plans["url"].str.contains(r"/states/[^/]+/[^/]+-area/[^/]+/[^/]+/floor-plans/[^/]+/$").all()
    assert plans.height == 2 * 2 * 2 * 8 and truth["url"].is_unique().all()
    # the same plan in several communities: the template's entity repeated across branches
    assert plans.group_by("plan").len()["len"].max() > 1
    # every in-content link stays in its city (a floor plan's breadcrumb to its community included)
    content = site.links.filter(pl.col("Link Position") == "Content")
    city = truth.select("url", "city")
    joined = content.join(city.rename({"url": "Source", "city": "s"}), on="Source").join(
        city.rename({"url": "Destination", "city": "t"}), on="Destination"
    )
    assert (
        joined.filter(pl.col("s").is_not_null() & pl.col("t").is_not_null())
        .select((pl.col("s") == pl.col("t")).all())
        .item()
    )
    # the crawl counts each page's in-links whether or not the All Inlinks export is written
    unlinked = generate_location_site(states=2, areas_per_state=1, cities_per_area=2, communities_per_city=2,
                                      with_links=False)  # fmt: skip
    assert unlinked.links is None and unlinked.crawl.equals(site.crawl)
    assert (site.crawl["Unique Inlinks"].cast(pl.Int64) > 0).all()


def test_dbt_sources_are_the_contract_tables_the_models_read():
    assert SOURCES.read_text() == sources_yaml(), "dbt sources.yml is stale: run `make docs`"
    assert COLUMN_DOCS.read_text() == column_docs_markdown(), "dbt column docs are stale: run `make docs`"
    # the marts read the plan, the pages, the clusters, the metrics, the decisions and the links seen live;
    # each is a contract table
    assert set(dbt_sources()) == {
        "staging.pages",
        "ml.similarity_pairs",
        "ml.page_clusters",
        "ml.clusters",
        "graph.link_plan",
        "graph.page_metrics",
        "graph.site_metrics",
        "graph.link_decisions",
        "graph.live_links",
    }


def test_table_reference_is_current():
    assert REFERENCE == PROJECT_ROOT / "docs" / "tables.md"
    reference = REFERENCE.read_text()
    assert f"{START}\n\n{tables_markdown()}\n\n{END}" in reference, f"{REFERENCE} is stale: run `make docs`"
    for table in TABLES:
        assert f"#### `{table}`" in reference
        for column in table_columns(table):
            assert f"| `{column}` |" in reference


def _code_map() -> set[str]:
    """The paths the code map of docs/architecture.md (its Layout) names under interlink_pipeline/ (folders
    nest by indent)."""
    architecture = (PROJECT_ROOT / "docs" / "architecture.md").read_text()
    block = architecture.split("\n## Layout\n", 1)[1].split("```", 2)[1]
    named, folders = set(), []  # folders: (indent, name)
    for line in block.splitlines():
        stripped = line.lstrip()
        if not line.startswith(" "):  # a top-level folder: what follows is named from the package down
            folders = []
            continue
        indent, entry = len(line) - len(stripped), stripped.split()[0]
        if not re.fullmatch(r"[\w.]+(/|\.py|\.json)", entry):
            continue  # a description's second line
        folders = [f for f in folders if f[0] < indent]
        path = "/".join(name for _, name in folders) + ("/" if folders else "") + entry.rstrip("/")
        if entry.endswith("/"):
            folders.append((indent, entry.rstrip("/")))
        named.add(path)
    return named


def test_code_map_matches_the_code_tree():
    named = _code_map()
    package = PROJECT_ROOT / "interlink_pipeline"
    assert {p for p in named if p.startswith("core")} and all((package / p).exists() for p in named), sorted(
        p for p in named if not (package / p).exists()
    )
    core_files = {
        p.relative_to(package).as_posix()
        for p in CORE.rglob("*")
        if p.suffix in (".py", ".json") and p.name != "__init__.py"
    }
    assert not core_files - named, f"core files the code map leaves out: {sorted(core_files - named)}"


def test_readme_names_the_two_commands():
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert "make run" in readme and "make test" in readme
    assert "make test" in Path(PROJECT_ROOT / ".ci" / "run").read_text()


def _sql_statements(markdown: str) -> list[str]:
    """Every SQL statement of a page's ```sql blocks."""
    blocks = re.findall(r"```sql\n(.*?)```", markdown, re.S)
    return [statement.strip() for block in blocks for statement in block.split(";") if statement.strip()]


def test_readme_is_short_and_its_queries_and_links_are_the_manuals():
    """The README stays a summary (at most 300 lines): its example queries are statements of docs/querying.md
    (which test_marts.py runs against the sample), and every page it links to exists."""
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    documented = _sql_statements((PROJECT_ROOT / "docs" / "querying.md").read_text())
    queries = _sql_statements(readme)
    assert queries and set(queries) <= set(documented)
    links = re.findall(r"\]\((docs/[^)#\s]+)(?:#[^)]*)?\)", readme)
    assert links and not [link for link in links if not (PROJECT_ROOT / link).is_file()]


def test_the_manual_lists_every_page():
    """mkdocs.yml's nav names every page under docs/ (the strict build, in `make test`, checks the links)."""
    config = (PROJECT_ROOT / "mkdocs.yml").read_text()
    pages = {p.relative_to(PROJECT_ROOT / "docs").as_posix() for p in (PROJECT_ROOT / "docs").rglob("*.md")}
    assert pages and not [page for page in pages if f": {page}\n" not in config]


def test_the_manual_builds_and_asks_for_nothing_off_the_machine(tmp_path):
    """The strict build passes, and no page loads a font, style sheet or script from elsewhere: offline,
    the manual reads whole, with no console error."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=PROJECT_ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    fetched = re.compile(r"""<(?:script|link|img)\b[^>]*\b(?:src|href)=["']?(?:https?:)?//""", re.I)
    pages = list((tmp_path / "site").rglob("*.html"))
    texts = {page.name: page.read_text() for page in pages}
    assert pages and not [name for name, text in texts.items() if fetched.search(text) or "fonts.g" in text]


def test_mart_columns_refer_to_the_contract_rather_than_copy_it():
    """A dbt model column that passes a contract column through says {{ doc(...) }}, so it cannot drift."""
    contract = set(column_docs().values())
    models = [
        model
        for path in (MARTS_DOCS, SOURCES.with_name("staging.yml"))
        for model in yaml.safe_load(path.read_text())["models"]
    ]
    copies = [
        f"{model['name']}.{column['name']}"
        for model in models
        for column in model["columns"]
        if " ".join(column.get("description", "").split()) in contract
    ]
    assert not copies, f"dbt models copy contract descriptions; use doc(): {copies}"
    referring = mart_columns()["marts.page_scorecard"][1]
    assert referring["depth_before"] == table_columns("graph.page_metrics")["depth_before"][1]


def test_a_dbt_source_outside_the_contract_is_refused(tmp_path, monkeypatch):
    (tmp_path / "stg_typo.sql").write_text("select * from {{ source('ml', 'link_candidate') }}")
    monkeypatch.setattr(table_docs, "DBT_MODELS", tmp_path)
    with pytest.raises(ValueError, match=r"not in the contract: ml\.link_candidate$"):
        table_docs.dbt_sources()


def test_the_shared_sites_run_every_step_of_the_pipeline():
    """The session's shared sites run UP_TO_PLAN then AFTER_PLAN: together, every step of the site's job,
    each once (a step added to the pipeline and not to these would go untested on them)."""
    from interlink_pipeline.definitions import defs
    from interlink_pipeline_tests.helpers import AFTER_PLAN, UP_TO_PLAN, UPSTREAM

    steps = {  # the steps that write assets (a check on its own, like the plan's freshness, runs after them)
        assets.node_def.name
        for assets in defs.resolve_asset_graph().assets_defs
        if assets.is_executable and assets.keys
    }
    assert sorted(UP_TO_PLAN + AFTER_PLAN) == sorted(steps)
    assert UP_TO_PLAN[: len(UPSTREAM)] == UPSTREAM


def test_a_hung_test_fails_at_its_timeout_and_names_itself(tmp_path):
    """The suite runs under pytest-timeout (pyproject's `timeout`): a test that hangs fails at its limit,
    naming itself and where it hung, and the session goes on to the next test."""
    import subprocess
    import sys

    options = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert 0 < options["timeout"] <= 900  # 15 minutes at most
    (tmp_path / "test_hangs.py").write_text(
        "import time\n\n\ndef test_hangs():\n    time.sleep(600)\n\n\ndef test_after():\n    pass\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--timeout", "2", "test_hangs.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert "FAILED test_hangs.py::test_hangs - Failed: Timeout (>2.0s)" in done.stdout
    assert "time.sleep(600)" in done.stdout  # where it hung
    assert "1 failed, 1 passed" in done.stdout


def test_the_code_location_is_gathered_from_the_shell_folders():
    """definitions.py lists no asset: every table of the contract, job, schedule and sensor is found in
    the defs/<domain>/ folders, and each domain folder mirrors a core domain."""
    from interlink_pipeline.definitions import defs

    keys = {spec.key.to_user_string().replace("/", ".") for spec in defs.resolve_all_asset_specs()}
    assert set(TABLES) - {"ml.embedding_cache", "serp.cache"} <= keys
    assert {job.name for job in defs.jobs} == {
        "site_pipeline",
        "serp_refresh",
        "lake_maintenance",
        "plan_freshness",
    }
    assert {s.name for s in defs.schedules} == {"serp_refresh_schedule", "lake_maintenance_schedule"}
    assert {s.name for s in defs.sensors} == {
        "crawl_inbox_sensor",
        "run_failure_recorder",
        "plan_freshness_sensor",
    }
    shell = PROJECT_ROOT / "interlink_pipeline" / "defs"
    domains = {p.name for p in shell.iterdir() if (p / "__init__.py").exists()}
    assert domains <= {p.name for p in CORE.iterdir() if (p / "__init__.py").exists()}, domains


def test_every_asset_has_a_documented_group_a_description_owners_and_kinds():
    """The catalogue as a Dagster user expects it: groups from the documented list (docs/how-it-works/
    automation.md), each asset described (a dbt model by its schema's description, its SQL in metadata),
    owned and of some kind; the documented jobs only; schedules off until turned on, sensors on."""
    import dagster as dg

    from interlink_pipeline.definitions import defs
    from interlink_pipeline.defs.groups import GROUPS
    from interlink_pipeline.defs.settings import scheduled_by

    graph = defs.resolve_asset_graph()
    nodes = [graph.get(key) for key in graph.get_all_asset_keys()]
    groups = {group.name: group for group in GROUPS}
    documented = (PROJECT_ROOT / "docs/how-it-works/automation.md").read_text()
    rows = [f"| `{g.name}` | {g.description} | `{g.owner}` |" for g in GROUPS]
    assert [row for row in rows if row not in documented] == []  # the docs' table says what the code does
    for node in nodes:
        name = node.key.to_user_string()
        assert node.group_name in groups, name
        assert node.owners == [groups[node.group_name].owner] and node.kinds, name
        assert node.description and "Raw SQL" not in node.description, name
    dbt_models = [n for n in nodes if "dbt" in n.kinds]
    assert {n.group_name for n in dbt_models} == {"dbt_staging", "marts"}
    assert all("```sql" in n.metadata["sql"].value for n in dbt_models)
    assert all(n.metadata["dagster/column_schema"].columns for n in dbt_models)
    jobs = {job.name for job in defs.resolve_all_job_defs() if not job.name.startswith("__")}
    assert jobs == {"site_pipeline", "serp_refresh", "lake_maintenance", "plan_freshness"}
    assert all(s.default_status == dg.DefaultScheduleStatus.STOPPED for s in defs.schedules)
    assert scheduled_by("0 6 * * 1") == dg.DefaultScheduleStatus.RUNNING  # a cron variable turns one on
    assert all(s.default_status == dg.DefaultSensorStatus.RUNNING for s in defs.sensors)


def test_the_warehouse_given_to_build_defs_decides_the_writer_pool(tmp_path):
    """The warehouse kind is decided where the definitions are built, not at import: over a DuckDB file
    every writing step is in the writer pool; over a DuckLake none is, whatever the environment says; the
    two sets of definitions have the same assets, checks and jobs."""
    from interlink_pipeline.definitions import build_defs
    from interlink_pipeline.defs.tables import WRITER_POOL

    def pools(defs):
        steps = [a for a in defs.assets if getattr(a, "is_executable", False)]
        return {a.node_def.name: a.node_def.pools for a in steps}

    on_file = build_defs(duckdb_path=str(tmp_path / "warehouse.duckdb"))
    on_lake = build_defs(duckdb_path="ducklake:postgres:dbname=interlink host=localhost")
    assert set(pools(on_file)) == set(pools(on_lake))
    assert {"link_plan", "marts", "html_report"} <= set(pools(on_file))
    assert all(p == {WRITER_POOL} for p in pools(on_file).values()), pools(on_file)
    assert not any(pools(on_lake).values()), pools(on_lake)

    def ops(defs):  # everything else about each step: the same either way
        steps = [a.node_def for a in defs.assets if getattr(a, "is_executable", False)]
        return {
            op.name: (op.description, dict(op.tags), op.required_resource_keys, op.retry_policy,
                      [i.name for i in op.input_defs], [o.name for o in op.output_defs],
                      op.config_schema.as_field().config_type.key if op.config_schema else None)
            for op in steps
        }  # fmt: skip

    assert ops(on_lake) == ops(on_file)
    assert set(on_lake.resolve_all_asset_keys()) == set(on_file.resolve_all_asset_keys())
    assert on_lake.resolve_job_def("site_pipeline").asset_layer.asset_graph.get_all_asset_keys() == (
        on_file.resolve_job_def("site_pipeline").asset_layer.asset_graph.get_all_asset_keys()
    )


def _functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node.end_lineno - node.lineno + 1


# a 400 MB polars column made and dropped; the process's RSS growth printed once it is gone
_FREED = """
import interlink_pipeline, os, psutil, polars as pl
before = psutil.Process().memory_info().rss
column = pl.int_range(50_000_000, eager=True) * 2
del column
print((psutil.Process().memory_info().rss - before) // 2**20)
"""


def _held_mb(env: dict[str, str]) -> int:
    done = subprocess.run([sys.executable, "-c", _FREED], env=env, capture_output=True, text=True, check=True)
    return int(done.stdout.strip())


def test_the_memory_a_step_frees_is_returned_at_once_unless_the_user_says_otherwise():
    """The package sets polars' allocator to return freed pages at once (a step's dropped frames are the
    next step's memory, not held for 10 s); a user's own _RJEM_MALLOC_CONF stands."""
    env = {name: value for name, value in os.environ.items() if name != "_RJEM_MALLOC_CONF"}
    assert _held_mb(env) < 100
    assert _held_mb({**env, "_RJEM_MALLOC_CONF": "dirty_decay_ms:-1,muzzy_decay_ms:-1"}) > 300  # kept


def test_the_shell_is_thin_and_every_function_short():
    """No shell module over 250 lines (a longer one holds logic that belongs in the core) and no function
    over 60 lines anywhere in the package."""
    package = PROJECT_ROOT / "interlink_pipeline"
    shell = [package / "definitions.py", *(package / "defs").rglob("*.py")]
    long_modules = {
        p.relative_to(package).as_posix(): n for p in shell if (n := len(p.read_text().splitlines())) > 250
    }
    long_functions = [
        f"{p.relative_to(package)}:{name} ({lines})"
        for p in package.rglob("*.py")
        for name, lines in _functions(p)
        if lines > 60
    ]
    assert not long_modules, long_modules
    assert not long_functions, long_functions


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        (  # a lower domain reaching up: the model layer importing the ranker
            "core/ml/similarity.py",
            "from interlink_pipeline.core.relevance.link_ranker import Ranker",
            "interlink_pipeline.core.ml is not allowed to import interlink_pipeline.core.relevance",
        ),
        (  # a circle of type-only imports inside a domain
            "core/graph/plan_state.py",
            "if TYPE_CHECKING:\n    from interlink_pipeline.core.graph.structure import shorten_depth",
            "No cycles are allowed in interlink_pipeline.core.graph",
        ),
        (  # the core importing Dagster
            "core/urls.py",
            "import dagster",
            "interlink_pipeline.core is not allowed to import dagster",
        ),
    ],
    ids=["upward import", "type-only circle", "Dagster in the core"],
)
def test_the_import_contracts_catch_a_planted_import(module, planted, broken, tmp_path):
    """make lint's import contracts (pyproject.toml) fail on each kind of import they forbid."""
    import shutil
    import subprocess
    import sys

    copy = tmp_path / "interlink_pipeline"
    shutil.copytree(PROJECT_ROOT / "interlink_pipeline", copy, ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / module
    path.write_text(path.read_text() + f"\nfrom typing import TYPE_CHECKING\n\n{planted}\n")
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path)
    linted = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent)},
        capture_output=True,
        text=True,
    )
    assert linted.returncode == 1, linted.stdout[-2000:]
    assert broken in " ".join(linted.stdout.split()), linted.stdout[-2000:]
