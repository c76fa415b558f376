# The two commands in the README are `make run` and `make test`; both create the environment first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
SAMPLE_SITE := www.alpinegear.example
export DAGSTER_HOME ?= $(CURDIR)/dagster_home

.PHONY: install browser postgres redis run test test-fast test-slow dev stop lint bench screenshots docs docs-build lock clean

# Pinned install: requirements.lock constrains every transitive version (torch 2.13.0 resolves to the
# CPU wheel on machines that carry it locally, the CUDA build elsewhere on Linux). uv installs what pip
# would, from the same indexes and the wheel folder pip is given (PIP_FIND_LINKS), in seconds, not minutes.
# Bytecode is compiled once here: where PYTHONDONTWRITEBYTECODE is set (CI images, this machine) Python
# never caches it, and every command, test subprocess and dbt call compiled its imports again (half of
# `interlink status`'s 8.7 s).
UV_VERSION := 0.13.9
$(VENV)/.installed: pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c requirements.lock -e '.[dev]' \
	  $(foreach folder,$(PIP_FIND_LINKS),--find-links $(folder))
	$(BIN)/python -m compileall -q interlink_pipeline
	touch $@

# The dbt manifest is prepared here, never when the code location is imported.
DBT_MANIFEST := dbt/target/manifest.json
$(DBT_MANIFEST): $(VENV)/.installed dbt/dbt_project.yml dbt/profiles.yml $(wildcard dbt/models/*/* dbt/macros/*)
	cd dbt && ../$(BIN)/dbt parse --profiles-dir . --quiet

install: $(VENV)/.installed $(DBT_MANIFEST)

## Materialise the whole pipeline for the bundled sample site (embedded defaults, no network).
run: install
	$(BIN)/interlink demo

# A headless Chromium for the report's browser test: the system's (Debian's package where apt is at hand,
# as in CI), else Playwright's own build.
browser: install
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null \
	  || { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] \
	       && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	  || $(BIN)/python -m playwright install chromium

# A PostgreSQL server for the deployment test (an instance on PostgreSQL): Debian's package where apt is at
# hand, as in CI; elsewhere the test skips and says why.
postgres:
	@command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
	  || { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] \
	       && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } \
	  || echo "PostgreSQL is not installed: the deployment test will skip"

# A Redis server for the deployment test (Celery's broker): Debian's package where apt is at hand, as in CI
# (the redis-server wheels on PyPI stop at Python 3.9); elsewhere the test skips and says why.
redis:
	@command -v redis-server >/dev/null \
	  || { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] \
	       && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; } \
	  || echo "Redis is not installed: the deployment test will skip"

# pytest-xdist workers, one per core (on 2 cores, a third worker ran slower and the longest test past its
# timeout); tests are handed out one at a time as workers free up (--dist load --maxschedchunk 1), the
# end-to-end ones first (conftest.py).
TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
# Tests keep their scratch (warehouses, Dagster instances, PostgreSQL's data) in memory where /dev/shm has
# 4 GB free: scratch need not survive a power cut, and each commit's fsync took 2.8 ms on this machine's
# disk against 0.25 ms there. TEST_TMPDIR= (empty) keeps them on disk.
TEST_TMPDIR ?= $(shell df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 && $$4 > 4194304 {print "/dev/shm"}')
PYTEST := $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR) )$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist load \
  --maxschedchunk 1

## The test suite (what .ci/run calls): lint, the documentation site, the code location's definitions, then
## every test.
test: install browser postgres redis lint docs-build
	$(BIN)/dg check defs
	$(PYTEST) -m "not slow"

## The edit-test loop: unit, contract and single-step tests; no whole-pipeline runs, services or browsers.
test-fast: install
	$(PYTEST) -m "not slow and not e2e"

## Heavier tests: scale and fault injection.
test-slow: install
	$(PYTEST) -m slow

## Dagster UI and daemon on http://127.0.0.1:$(PORT) (sensors and schedules run while this is up): `dg dev`
## (it loads the project pyproject.toml's [tool.dg] names), stopped by Ctrl-C, `kill` or `make stop`.
export PORT ?= 3000
dev: install
	$(BIN)/python -m interlink_pipeline.cli.dev_server start -h 127.0.0.1 -p $(PORT)

## Stop the `make dev` of this Dagster home (the UI, the daemon and the code server) and wait until it has.
stop:
	$(BIN)/python -m interlink_pipeline.cli.dev_server stop

## Style, formatting, and the import contracts in pyproject.toml (layers point down, no import circles).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

## Benchmarks print tables; docs/benchmarks.md gives the sizes, what is compared and the results.
bench: install
	$(BIN)/python -m benchmarks.bench_ingest
	$(BIN)/python -m benchmarks.bench_embeddings
	$(BIN)/python -m benchmarks.bench_similarity
	$(BIN)/python -m benchmarks.bench_local_search
	$(BIN)/python -m benchmarks.bench_link_plan
	$(BIN)/python -m benchmarks.bench_link_quality
	$(BIN)/python -m benchmarks.bench_incremental
	$(BIN)/python -m benchmarks.bench_scale_out

## Make the manual's screenshots (docs/images/) again from the bundled sample's report and workbook.
screenshots: install browser
	$(BIN)/python tools/screenshots.py

# The documentation site (mkdocs.yml, docs/ -> site/): --strict fails on any warning, so a broken link or
# anchor fails the build. NO_MKDOCS_2_WARNING silences Material's banner about MkDocs 2.0.
MKDOCS_BUILD := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

## Regenerate the table reference (docs/tables.md) and dbt's sources from the schemas, then build the site.
docs: install
	$(BIN)/python -m interlink_pipeline.core.warehouse.table_docs docs/tables.md
	$(MKDOCS_BUILD)

## Build the documentation site as it stands (what `make test`, and so CI, checks).
docs-build: install
	$(MKDOCS_BUILD)

## Refresh requirements.lock from the current environment (after changing pyproject.toml).
lock: install
	$(BIN)/python -m pip freeze --exclude-editable --disable-pip-version-check \
	  | sed -e 's/^torch==\([0-9.]*\)+cpu$$/torch==\1/' > requirements.lock

clean:
	rm -rf $(VENV) data/interlink.duckdb data/interlink.duckdb.wal data/inbox data/exports data/snapshots dbt/target dbt/logs site
