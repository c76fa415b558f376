"""What every table-writing asset shares: table metadata, schema checks, and the validated write."""

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from dagster import (
    AssetCheckSpec,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    TableColumn,
    TableSchema,
    multi_asset,
)

from interlink_pipeline.core.warehouse.contract import (
    duckdb_type,
    table_columns,
    table_description,
)
from interlink_pipeline.defs.groups import Group
from interlink_pipeline.defs.partitions import site_partitions

# The pool every writing step is declared in: a DuckDB file takes one writer at a time (the pool's limit
# of 1). A DuckLake takes many, so `build_defs` takes its steps out of the pool (definitions.without_pool);
# a site's steps still take turns (one run per site).
WRITER_POOL = "duckdb_writer"


def table_key(table: str) -> AssetKey:
    """A table's asset key: its schema and name (`graph.link_plan` -> graph/link_plan), as dbt's sources
    name it."""
    return AssetKey(table.split("."))


def check_name(table: str) -> str:
    return table.replace(".", "_") + "_schema"


def schema_check(table: str) -> AssetCheckSpec:
    """The table's pandera schema, validated before anything is written. Checks are per site (partitioned
    like their asset): one site's failure leaves the other sites' checks green."""
    return AssetCheckSpec(
        check_name(table),
        asset=table_key(table),
        blocking=True,
        partitions_def=site_partitions,
        description=f"{table} matches its pandera schema (types, nulls, ranges, keys); checked before "
        "the write, so a failing frame is never stored.",
    )


def table_spec(table: str, group: Group, kinds: Collection[str], deps: Sequence[str]) -> AssetSpec:
    """The table as the UI shows it: its own key, description, column schema and upstream tables."""
    columns = [
        TableColumn(name, duckdb_type(dtype), description=description)
        for name, (dtype, description) in table_columns(table).items()
    ]
    return AssetSpec(
        table_key(table),
        **group.attributes(),
        kinds=set(kinds),
        deps=[table_key(upstream) for upstream in deps],
        description=table_description(table),
        metadata={"dagster/table_name": table, "dagster/column_schema": TableSchema(columns=columns)},
    )


def site_asset(
    *tables: str,
    group: Group,
    deps: Sequence[str] = (),
    kinds: Collection[str] = frozenset({"duckdb", "polars"}),
    invariants: Mapping[str, str] | None = None,
) -> Callable[[Callable[..., Any]], AssetsDefinition]:
    """A per-site step that writes `tables`, each its own asset (key, schema, checks), from the tables it
    reads (`deps`): partitioned by site, in the writer pool (of a file), one schema check per table plus
    `invariants` ({check name: description}) that the step computes itself, on its first table. The op keeps
    the step's name: run config stays `ops: {name: ...}`."""
    own_checks = [
        # blocking: an ERROR failure stops what depends on the asset; a WARN failure never does
        AssetCheckSpec(
            name, asset=table_key(tables[0]), description=text, blocking=True, partitions_def=site_partitions
        )
        for name, text in (invariants or {}).items()
    ]

    def decorate(fn: Callable[..., Any]) -> AssetsDefinition:
        return multi_asset(
            name=fn.__name__,
            specs=[table_spec(table, group, kinds, deps) for table in tables],
            partitions_def=site_partitions,
            pool=WRITER_POOL,
            check_specs=[schema_check(table) for table in tables] + own_checks,
            description=fn.__doc__,
        )(fn)

    return decorate
