"""A few rows of a site-sized frame (joined to it, or kept from it), in memory set by the few rows."""

from __future__ import annotations

import polars as pl


def looked_up(rows: pl.DataFrame, table: pl.DataFrame, on: list[str]) -> pl.DataFrame:
    """`rows` left-joined with `table` in their order. A left join hashes its right side, so `table` is
    first cut to the keys of `rows` (a semi join hashes `rows`): joining 50,000 planned links to a
    100,000-page site's 6M candidates took 0.6 GB more and four times as long the plain way."""
    return rows.join(table.join(rows.select(on), on=on, how="semi"), on=on, how="left", maintain_order="left")


def owned(rows: pl.DataFrame) -> pl.DataFrame:
    """`rows` in memory of their own. A few rows cut from a large frame (a slice, a filter, a join's rows)
    share its buffers, polars' strings being views into them: a candidates update that kept a chunk's
    removed keys and most probable rows, cut so, held every chunk's buffers to the end (1.3 GB more at
    100,000 pages)."""
    return rows.select(pl.all().gather(pl.int_range(pl.len()))).with_columns(
        pl.col(pl.String).cast(pl.Categorical).cast(pl.String)
    )
