"""serp.cache: Serper's answers, by provider and request, as they arrived; one younger than `cache_ttl_days`
is not asked for again, so a re-run pays for nothing it already has and a run that dies continues where it
stopped."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import polars as pl

from interlink_pipeline.core.serp.options import SerpOptions
from interlink_pipeline.core.serp.serper import Answer
from interlink_pipeline.core.warehouse.database import query
from interlink_pipeline.core.warehouse.store import merge_rows

RESULT = pl.List(pl.Struct({"position": pl.Int64, "link": pl.String, "title": pl.String}))


def cache_rows(answers: list[Answer], options: SerpOptions) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "provider": ["serper"] * len(answers),
            "request_key": [a.request.key(options) for a in answers],
            "query": [a.request.query for a in answers],
            "result_page": [a.request.page for a in answers],
            "fetched_at": [a.fetched_at for a in answers],
            "results": [json.dumps(a.results, ensure_ascii=False) for a in answers],
            "result_count": [len(a.results) for a in answers],
        },
        schema={
            "provider": pl.String,
            "request_key": pl.String,
            "query": pl.String,
            "result_page": pl.Int32,
            "fetched_at": pl.Datetime("us"),
            "results": pl.String,
            "result_count": pl.Int32,
        },
    )


def save_answers(warehouse: str, options: SerpOptions, answers: list[Answer]) -> None:
    merge_rows(
        warehouse, "serp.cache", cache_rows(answers, options), ["provider", "request_key"], replace=True
    )


def fresh_cutoff(options: SerpOptions) -> datetime:
    return datetime.now(UTC).replace(tzinfo=None) - timedelta(days=options.cache_ttl_days)


def fresh_keys(warehouse: str, keys: pl.DataFrame, options: SerpOptions) -> set[str]:
    """Which of the `keys` (request_key) have an answer younger than the TTL."""
    return set(
        query(
            warehouse,
            "SELECT c.request_key FROM serp.cache c JOIN wanted USING (request_key) "
            "WHERE c.provider = 'serper' AND c.fetched_at >= ?",
            [fresh_cutoff(options)],
            {"wanted": keys},
        )["request_key"]
    )


def cached_results(warehouse: str, keys: pl.DataFrame, options: SerpOptions) -> pl.DataFrame:
    """query, rank (across result pages), result_url, result_title, fetched_at: the cached answers to the
    `keys` (request_key), one result per query and rank."""
    cached = query(
        warehouse,
        "SELECT c.request_key, c.query, c.result_page, c.results, c.fetched_at FROM serp.cache c "
        "JOIN wanted USING (request_key) WHERE c.provider = 'serper'",
        [],
        {"wanted": keys},
    )
    return (
        cached.with_columns(pl.col("results").str.json_decode(RESULT).alias("hit"))
        .explode("hit")
        .drop_nulls("hit")
        .unnest("hit")
        .select(
            "query",
            ((pl.col("result_page") - 1) * options.results_per_query + pl.col("position"))
            .cast(pl.Int32)
            .alias("rank"),
            pl.col("link").alias("result_url"),
            pl.col("title").alias("result_title"),
            pl.col("fetched_at").dt.cast_time_unit("us"),
        )
        .unique(["query", "rank"], keep="first")
    )
