"""What is searched: each page's query (a queries file's top query, its main query, else its title, else its
text) and the search string the query template makes of it (`site:{host} {query}`; a path after the host
narrows it)."""

from __future__ import annotations

import re

import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.urls import url_parts

# Where a page's query comes from, first present first: column -> what query_source calls it.
QUERY_SOURCES = {
    "supplied": "queries file",
    "main_query": "main_query column",
    "title": "title",
    "text": "text",
}


def search_scope(template: str, host: str) -> tuple[str, str]:
    """(template, path prefix) after validating the template's placeholders."""
    fields = re.findall(r"{(\w*)}", template)
    if fields.count("query") != 1:
        raise InputError(f"query_template '{template}' needs exactly one {{query}} placeholder.")
    unknown = sorted(set(fields) - {"query", "host"})
    if unknown:
        raise InputError(
            f"query_template '{template}' has unknown placeholders {unknown}; use {{host}} and {{query}}."
        )
    scope = re.search(r"site:\{host\}(\S*)", template)
    return template, scope.group(1) if scope else ""


def page_queries(
    pages: pl.DataFrame, site: str, template: str, main_queries: pl.DataFrame | None = None
) -> pl.DataFrame:
    """page_id, base query (main query, else title, else text) and the search string for each page."""
    search_scope(template, site)
    before, _, after = template.replace("{host}", site).partition("{query}")
    frame = pages.select("page_id", "url_key", "title", "text", "main_query")
    if main_queries is not None and main_queries.height:
        frame = frame.join(
            main_queries.select("url_key", pl.col("query").alias("supplied")), on="url_key", how="left"
        )
    else:
        frame = frame.with_columns(pl.lit(None, dtype=pl.String).alias("supplied"))
    source = pl.coalesce(
        pl.when(pl.col(column).is_not_null()).then(pl.lit(label)) for column, label in QUERY_SOURCES.items()
    )
    return frame.select(
        "page_id",
        pl.coalesce(*QUERY_SOURCES).str.strip_chars().alias("base_query"),
        source.fill_null(QUERY_SOURCES["text"]).alias("query_source"),
    ).with_columns(pl.concat_str([pl.lit(before), pl.col("base_query"), pl.lit(after)]).alias("query"))


def top_queries(frame: pl.DataFrame) -> pl.DataFrame:
    """url_key -> query: the top query per page of a queries file (most clicks, then impressions)."""
    ranked = frame.with_columns(url_parts(frame["url"]).select("url_key", "url_valid"))
    ranked = ranked.filter(pl.col("url_valid") & pl.col("query").is_not_null() & (pl.col("query") != ""))
    order = [c for c in ("clicks", "impressions") if c in ranked.columns]
    if order:
        ranked = ranked.sort(order, descending=True, nulls_last=True)
    return ranked.unique("url_key", keep="first", maintain_order=True).select("url_key", "query")
