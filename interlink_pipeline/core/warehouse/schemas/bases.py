"""What the tables share, declared once: strictness and a unique key, the site and page id columns, the link
pair, where a raw row came from, and the vector checks."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

SITE = "Site key: the crawl's normalised host, e.g. www.example.com (the Dagster partition)."
PAGE_ID = "Stable page id: MD5 prefix of the page's URL key; the same URL keeps its id across crawls."
PAGE_ID_LENGTH = {"min_value": 16, "max_value": 16}
MD5_LENGTH = {"min_value": 32, "max_value": 32}
UNIT_NORM_TOLERANCE = 1e-3


class Table(pa.DataFrameModel):
    """A warehouse table: no undeclared columns; `unique=(…)` on the class line names its key."""

    class Config:
        strict = True

    def __init_subclass__(cls, unique: tuple[str, ...] = (), **kwargs):
        if unique:
            cls.Config = type("Config", (cls.Config,), {"unique": list(unique), "name": cls.__name__})
        super().__init_subclass__(**kwargs)


class SiteTable(Table):
    site: str = pa.Field(description=SITE)


class PageTable(SiteTable):
    page_id: str = pa.Field(description=PAGE_ID)


class PairTable(SiteTable):
    source_page_id: str = pa.Field(description="The page the link is (or would be, or was) placed on.")
    target_page_id: str = pa.Field(description="The page the link points to.")

    @pa.dataframe_check(description="no page is paired with itself")
    def no_self_pairs(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("source_page_id") != pl.col("target_page_id"))


class FileRows(SiteTable, unique=("site", "row_number")):
    """A file as read: each row keeps which file (and which row of it) it came from."""

    crawl_id: str = pa.Field(description="Content hash (SHA-256 prefix) of the file this row came from.")
    loaded_at: pl.Datetime = pa.Field(description="When the file was loaded (UTC).")
    source_file: str = pa.Field(description="The file's name.")
    row_number: pl.Int64 = pa.Field(ge=1, description="1-based data row in the file.")


class UnitVectors(Table):
    """Checks of a `vector` column of unit-norm embeddings of length `dim`."""

    @pa.dataframe_check(description="vectors have unit norm")
    def unit_norm(cls, data) -> pl.LazyFrame:
        norm = pl.col("vector").list.eval(pl.element().cast(pl.Float64).pow(2)).list.sum().sqrt()
        return data.lazyframe.select((norm - 1).abs() <= UNIT_NORM_TOLERANCE)

    @pa.dataframe_check(description="vector length equals dim")
    def length_is_dim(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("vector").list.len() == pl.col("dim"))
