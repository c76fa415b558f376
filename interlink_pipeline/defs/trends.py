"""A site's own trend of the figures worth one: Dagster's Plots tab draws a partitioned asset's figures on
one line across every site (by run time, or one point per site), never one site's runs on their own, so the
step shows that site's last runs beside its figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import polars as pl
from dagster import AssetExecutionContext, AssetKey, AssetRecordsFilter, TableMetadataValue

from interlink_pipeline.defs.previews import table_preview

TREND_RUNS = 10  # this run and the site's nine before it


def site_trend(
    context: AssetExecutionContext, asset: AssetKey, metadata: Mapping[str, Any], figures: Sequence[str]
) -> TableMetadataValue:
    """The `figures` of this run's `metadata` over the same figures of the site's earlier materialisations
    of `asset`, newest first (a figure a run did not record as a number is blank)."""
    records = context.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=asset, asset_partitions=[context.partition_key]), limit=TREND_RUNS - 1
    ).records
    runs = [("this run", metadata)] + [
        (
            datetime.fromtimestamp(record.timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC"),
            record.asset_materialization.metadata,
        )
        for record in records
    ]
    rows = [{"run": when, **{name: _number(shown.get(name)) for name in figures}} for when, shown in runs]
    return table_preview(pl.DataFrame(rows, infer_schema_length=None), TREND_RUNS)


def _number(value: Any) -> int | float | None:
    """A metadata entry's number (bare or a metadata value); None for text such as "no previous plan"."""
    value = getattr(value, "value", value)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None
