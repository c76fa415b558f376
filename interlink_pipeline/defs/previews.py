"""Previews of frames as Dagster table metadata: the UI shows them as sortable tables, with typed columns."""

from __future__ import annotations

import polars as pl
from dagster import MetadataValue, TableColumn, TableMetadataValue, TableRecord, TableSchema

from interlink_pipeline.core.numbers import significant

MAX_CELL_CHARS = 80  # longer text is cut ("…"): a preview is for a glance


def _column_type(dtype: pl.DataType) -> str:
    if dtype.is_integer():
        return "int"
    if dtype.is_float():
        return "float"
    return "bool" if dtype == pl.Boolean else "string"


def _cell(value: object) -> str | int | float | bool | None:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return significant(value)
    text = str(value).replace("\n", " ")
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


def table_preview(frame: pl.DataFrame, max_rows: int = 10) -> TableMetadataValue:
    """The first `max_rows` rows: numbers to 4 significant digits, text cut to MAX_CELL_CHARS."""
    shown = frame.head(max_rows)
    schema = TableSchema(
        columns=[TableColumn(name, _column_type(dtype)) for name, dtype in shown.schema.items()]
    )
    records = [TableRecord({k: _cell(v) for k, v in row.items()}) for row in shown.iter_rows(named=True)]
    return MetadataValue.table(records, schema)


def counts_preview(frame: pl.DataFrame, column: str, label: str = "rows") -> TableMetadataValue:
    """The value counts of `column`, largest first."""
    counts = frame.group_by(column).len(label).sort([label, column], descending=[True, False])
    return table_preview(counts, max_rows=50)
