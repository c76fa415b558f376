"""The table contract as the code reads it: each table's model, columns, DuckDB types and description, and
the validation of a frame against its model (a ContractError when it fails, before anything is written)."""

from __future__ import annotations

from dataclasses import dataclass

import pandera.polars as pa
import polars as pl

from interlink_pipeline.core.warehouse.schemas import TABLES

NO_FAILURES = pl.DataFrame(schema={"column": pl.String, "check": pl.String, "failure_case": pl.String})


class ContractError(RuntimeError):
    """A frame about to be written breaks its table's schema; nothing was written."""

    def __init__(self, reports: dict[str, ValidationReport]):
        super().__init__("\n".join(r.summary() for r in reports.values() if not r.passed))
        self.reports = reports


@dataclass(frozen=True)
class ValidationReport:
    table: str
    rows: int  # rows checked
    failures: pl.DataFrame  # pandera failure cases (empty when valid)
    stored_rows: int | None = None  # the site's rows in the table after the write, when not all were checked

    @property
    def passed(self) -> bool:
        return self.failures.is_empty()

    def summary(self, examples: int = 3) -> str:
        if self.passed:
            return f"{self.table}: {self.rows} rows match the schema."
        grouped = (
            self.failures.group_by("column", "check")
            .agg(pl.len().alias("n"), _shortened(pl.col("failure_case")).head(examples).alias("examples"))
            .sort("n", descending=True)
        )
        lines = [
            f"  - {row['column']}: {row['check']} failed for {row['n']} value(s), e.g. {row['examples']}"
            for row in grouped.iter_rows(named=True)
        ]
        return f"{self.table} breaks its schema ({self.rows} rows):\n" + "\n".join(lines)


def _shortened(cases: pl.Expr, limit: int = 100) -> pl.Expr:
    return pl.when(cases.str.len_chars() > limit).then(cases.str.slice(0, limit) + "…").otherwise(cases)


def validate(table: str, frame: pl.DataFrame) -> ValidationReport:
    model = table_model(table)
    try:
        model.validate(frame, lazy=True)
    except pa.errors.SchemaErrors as exc:
        failures = exc.failure_cases.select(
            pl.col("column").cast(pl.String),
            pl.col("check").cast(pl.String),
            pl.col("failure_case").cast(pl.String),
        )
        return ValidationReport(table, frame.height, failures)
    return ValidationReport(table, frame.height, NO_FAILURES)


def duckdb_type(dtype: pl.DataType) -> str:
    if isinstance(dtype, pl.List):
        return f"{duckdb_type(dtype.inner)}[]"
    names = {
        pl.String: "VARCHAR",
        pl.Int32: "INTEGER",
        pl.Int64: "BIGINT",
        pl.UInt32: "UINTEGER",
        pl.UInt64: "UBIGINT",
        pl.Float32: "FLOAT",
        pl.Float64: "DOUBLE",
        pl.Boolean: "BOOLEAN",
        pl.Date: "DATE",
        pl.Datetime: "TIMESTAMP",
    }
    for polars_type, sql in names.items():
        if dtype == polars_type or isinstance(dtype, polars_type):
            return sql
    raise TypeError(f"no DuckDB type for {dtype}")


def table_columns(table: str) -> dict[str, tuple[pl.DataType, str]]:
    """Column name -> (polars dtype, description) for a warehouse table."""
    schema = table_model(table).to_schema()
    return {name: (col.dtype.type, col.description or "") for name, col in schema.columns.items()}


def empty_frame(table: str) -> pl.DataFrame:
    """A frame with the table's columns and no rows."""
    return pl.DataFrame(schema={name: dtype for name, (dtype, _) in table_columns(table).items()})


def table_description(table: str) -> str:
    return (table_model(table).__doc__ or "").strip()


def table_model(table: str) -> type[pa.DataFrameModel]:
    try:
        return TABLES[table]
    except KeyError:
        raise ValueError(f"unknown warehouse table {table!r}; known: {', '.join(TABLES)}") from None
