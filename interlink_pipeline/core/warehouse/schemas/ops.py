"""ops.*: what the pipeline records about its own runs."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from interlink_pipeline.core.warehouse.schemas.bases import Table


class RunFailure(Table):
    """ops.run_failures: every failed pipeline run, as the run-failure sensor saw it."""

    run_id: str = pa.Field(unique=True, description="Dagster run id.")
    job: str = pa.Field(description="The job that failed.")
    site: str = pa.Field(nullable=True, description="The run's site (partition), when it had one.")
    failed_at: pl.Datetime = pa.Field(description="When the failure was recorded (UTC).")
    step: str = pa.Field(nullable=True, description="The step (asset) that failed first, when known.")
    message: str = pa.Field(description="The failure's message.")
    notified: bool = pa.Field(description="Whether the webhook accepted the alert.")
