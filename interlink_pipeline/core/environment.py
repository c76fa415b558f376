"""Every environment variable the project reads, declared once and read here only (pydantic-settings): the
rest of the code is handed an Environment, so what a process runs with is one object, shown in one place.

Values stay text: each reader checks its own (a cron, a whole number of seconds) and says which variable is
wrong, so one bad variable never stops a step that does not read it. An empty variable counts as unset.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

WAREHOUSE_ENV = "INTERLINK_WAREHOUSE"
LAKE_DATA_PATH_ENV = "INTERLINK_LAKE_DATA_PATH"
PLAN_MAX_AGE_ENV = "INTERLINK_PLAN_MAX_AGE_DAYS"
INBOX_SCAN_ENV = "INTERLINK_INBOX_SCAN_SECONDS"
SERPER_KEY_ENV = "SERPER_API_KEY"
DAGSTER_HOME_ENV = "DAGSTER_HOME"
FAULT_ENV = "INTERLINK_FAULT"  # the reliability tests' kill switch (core/faults.py)


def _variable(name: str, description: str) -> Any:
    return Field(default=None, alias=name, description=description)


class Environment(BaseSettings):
    """The project's environment variables (see docs/configuration.md)."""

    model_config = SettingsConfigDict(env_ignore_empty=True, extra="ignore", frozen=True, case_sensitive=True)

    warehouse: str | None = _variable(WAREHOUSE_ENV, "The DuckDB file, or ducklake:postgres:… for a lake.")
    memory_limit: str | None = _variable(
        "INTERLINK_DUCKDB_MEMORY_LIMIT", "DuckDB's memory_limit for each connection."
    )
    memory_cap: str | None = _variable(
        "INTERLINK_MEMORY_LIMIT", "The memory a whole run may take (12GB): one estimated above it is refused."
    )
    snapshot_path: str | None = _variable(
        "INTERLINK_SNAPSHOT_PATH", "Where the analysts' snapshot is written."
    )
    lake_data_path: str | None = _variable(LAKE_DATA_PATH_ENV, "A lake's Parquet files: a folder or s3://….")
    lake_files: str | None = _variable("INTERLINK_LAKE_FILES", "A lake's models, exports and logs.")
    inbox: str | None = _variable("INTERLINK_INBOX", "The drop folder of registered crawls.")
    inbox_scan_seconds: str | None = _variable(INBOX_SCAN_ENV, "How often the sensor scans the drop folder.")
    exports_dir: str | None = _variable("INTERLINK_EXPORTS_DIR", "Where the spreadsheets and report go.")
    exports_url: str | None = _variable(
        "INTERLINK_EXPORTS_URL", "Where a web server serves the exports folder (the UI links the reports)."
    )
    embedding_model: str | None = _variable("INTERLINK_EMBEDDING_MODEL", "The sentence-transformers model.")
    embedding_device: str | None = _variable("INTERLINK_EMBEDDING_DEVICE", "cpu, cuda or auto.")
    model_cache: str | None = _variable("INTERLINK_MODEL_CACHE", "Where exported ONNX encoders are kept.")
    xdg_cache_home: str | None = _variable("XDG_CACHE_HOME", "The user's cache folder.")
    serper_api_key: str | None = _variable(SERPER_KEY_ENV, "Serper.dev's key: live SERP evidence when set.")
    serper_endpoint: str | None = _variable(
        "INTERLINK_SERPER_ENDPOINT", "Serper's URL (a proxy or a local server)."
    )
    serp_refresh_cron: str | None = _variable(
        "INTERLINK_SERP_REFRESH_CRON", "When SERP evidence is refreshed."
    )
    lake_maintenance_cron: str | None = _variable(
        "INTERLINK_LAKE_MAINTENANCE_CRON", "When the lake is maintained."
    )
    plan_max_age_days: str | None = _variable(
        PLAN_MAX_AGE_ENV, "Days after which a site's published plan counts as stale."
    )
    failure_webhook: str | None = _variable(
        "INTERLINK_FAILURE_WEBHOOK", "Where failed runs are posted (JSON)."
    )
    dagster_home: str | None = _variable(DAGSTER_HOME_ENV, "Dagster's instance folder.")
    ui_port: str | None = _variable("PORT", "The port `make dev` serves the UI on (the CLI names it).")
    fault: str | None = _variable(FAULT_ENV, "Tests only: the point where the process is killed.")
    s3_access_key_id: str | None = _variable("AWS_ACCESS_KEY_ID", "S3 key id for a lake's files.")
    s3_secret_access_key: str | None = _variable("AWS_SECRET_ACCESS_KEY", "S3 secret for a lake's files.")
    s3_region: str | None = _variable("AWS_REGION", "S3 region for a lake's files.")
    s3_endpoint: str | None = _variable("AWS_ENDPOINT_URL", "An S3-compatible store's URL (MinIO).")


_NAMES = tuple(field.alias for field in Environment.model_fields.values())


def environment() -> Environment:
    """The environment as it is now (the command line sets variables before it builds the code location),
    parsed once per distinct set of values: parsing takes milliseconds, looking the values up microseconds."""
    return _parsed(tuple(os.environ.get(name) for name in _NAMES))


@lru_cache(maxsize=8)
def _parsed(values: tuple[str | None, ...]) -> Environment:
    """The environment `values` were read from (they are the cache's key; pydantic-settings reads them)."""
    return Environment()


def use_dagster_home(default: Path) -> Path:
    """$DAGSTER_HOME, set to `default` when unset: Dagster reads the variable itself."""
    return Path(os.environ.setdefault(DAGSTER_HOME_ENV, str(default)))


def quiet_model_downloads() -> None:
    """No Hugging Face progress bars in step logs (the library reads this variable)."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
