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
MEMORY_LIMIT_ENV = "INTERLINK_DUCKDB_MEMORY_LIMIT"
SNAPSHOT_PATH_ENV = "INTERLINK_SNAPSHOT_PATH"
LAKE_DATA_PATH_ENV = "INTERLINK_LAKE_DATA_PATH"
LAKE_FILES_ENV = "INTERLINK_LAKE_FILES"
INBOX_ENV = "INTERLINK_INBOX"
INBOX_SCAN_ENV = "INTERLINK_INBOX_SCAN_SECONDS"
EXPORTS_ENV = "INTERLINK_EXPORTS_DIR"
MODEL_ENV = "INTERLINK_EMBEDDING_MODEL"
DEVICE_ENV = "INTERLINK_EMBEDDING_DEVICE"
MODEL_CACHE_ENV = "INTERLINK_MODEL_CACHE"
SERPER_KEY_ENV = "SERPER_API_KEY"
SERPER_ENDPOINT_ENV = "INTERLINK_SERPER_ENDPOINT"
SERP_REFRESH_CRON_ENV = "INTERLINK_SERP_REFRESH_CRON"
LAKE_MAINTENANCE_CRON_ENV = "INTERLINK_LAKE_MAINTENANCE_CRON"
WEBHOOK_ENV = "INTERLINK_FAILURE_WEBHOOK"
DAGSTER_HOME_ENV = "DAGSTER_HOME"
FAULT_ENV = "INTERLINK_FAULT"  # the reliability tests' kill switch (core/faults.py)
# S3 access for a lake's files (a bucket or an S3-compatible store such as MinIO): the usual AWS variables
S3_ENDPOINT_ENV = "AWS_ENDPOINT_URL"


def _variable(name: str, description: str) -> Any:
    return Field(default=None, alias=name, description=description)


class Environment(BaseSettings):
    """The project's environment variables (see docs/configuration.md)."""

    model_config = SettingsConfigDict(env_ignore_empty=True, extra="ignore", frozen=True, case_sensitive=True)

    warehouse: str | None = _variable(WAREHOUSE_ENV, "The DuckDB file, or ducklake:postgres:… for a lake.")
    memory_limit: str | None = _variable(MEMORY_LIMIT_ENV, "DuckDB's memory_limit for each connection.")
    snapshot_path: str | None = _variable(SNAPSHOT_PATH_ENV, "Where the analysts' snapshot is written.")
    lake_data_path: str | None = _variable(LAKE_DATA_PATH_ENV, "A lake's Parquet files: a folder or s3://….")
    lake_files: str | None = _variable(LAKE_FILES_ENV, "A lake's models, exports and logs.")
    inbox: str | None = _variable(INBOX_ENV, "The drop folder of registered crawls.")
    inbox_scan_seconds: str | None = _variable(INBOX_SCAN_ENV, "How often the sensor scans the drop folder.")
    exports_dir: str | None = _variable(EXPORTS_ENV, "Where the spreadsheets and report go.")
    embedding_model: str | None = _variable(MODEL_ENV, "The sentence-transformers model.")
    embedding_device: str | None = _variable(DEVICE_ENV, "cpu, cuda or auto.")
    model_cache: str | None = _variable(MODEL_CACHE_ENV, "Where exported ONNX encoders are kept.")
    xdg_cache_home: str | None = _variable("XDG_CACHE_HOME", "The user's cache folder.")
    serper_api_key: str | None = _variable(SERPER_KEY_ENV, "Serper.dev's key: live SERP evidence when set.")
    serper_endpoint: str | None = _variable(SERPER_ENDPOINT_ENV, "Serper's URL (a proxy or a local server).")
    serp_refresh_cron: str | None = _variable(SERP_REFRESH_CRON_ENV, "When SERP evidence is refreshed.")
    lake_maintenance_cron: str | None = _variable(LAKE_MAINTENANCE_CRON_ENV, "When the lake is maintained.")
    failure_webhook: str | None = _variable(WEBHOOK_ENV, "Where failed runs are posted (JSON).")
    dagster_home: str | None = _variable(DAGSTER_HOME_ENV, "Dagster's instance folder.")
    fault: str | None = _variable(FAULT_ENV, "Tests only: the point where the process is killed.")
    s3_access_key_id: str | None = _variable("AWS_ACCESS_KEY_ID", "S3 key id for a lake's files.")
    s3_secret_access_key: str | None = _variable("AWS_SECRET_ACCESS_KEY", "S3 secret for a lake's files.")
    s3_region: str | None = _variable("AWS_REGION", "S3 region for a lake's files.")
    s3_endpoint: str | None = _variable(S3_ENDPOINT_ENV, "An S3-compatible store's URL (MinIO).")


_NAMES = tuple(field.alias for field in Environment.model_fields.values())


def environment() -> Environment:
    """The environment as it is now (the command line sets variables before it builds the code location),
    parsed once per distinct set of values: parsing takes milliseconds, looking the values up microseconds."""
    return _parsed(tuple(os.environ.get(name) for name in _NAMES))


@lru_cache(maxsize=8)
def _parsed(values: tuple[str | None, ...]) -> Environment:
    return Environment()


def use_dagster_home(default: Path) -> Path:
    """$DAGSTER_HOME, set to `default` when unset: Dagster reads the variable itself."""
    return Path(os.environ.setdefault(DAGSTER_HOME_ENV, str(default)))


def quiet_model_downloads() -> None:
    """No Hugging Face progress bars in step logs (the library reads this variable)."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
