"""Why a crawled row is not a page worth linking: the exclusion reasons and the detail each gives.

Every raw row ends in `staging.pages` or in `staging.excluded_pages` with the first matching reason, in this
order: invalid_url, other_host, not_html, no_response, redirect, client_error, server_error, non_200,
blocked_by_robots, noindex, canonicalised, non_indexable, paginated, parameter_url, duplicate_url, no_text.
"""

from __future__ import annotations

import polars as pl

from interlink_pipeline.core.ingest.cleaning_options import CleanedPages, CleaningOptions
from interlink_pipeline.core.urls import PAGE_NUMBER_PATTERN

# Values of the Indexability column that mean "indexable" (EN/ES/FR, DE, IT, PT).
INDEXABLE_VALUES = ("indexable", "indexierbar", "indicizzabile", "indexável", "indexavel")
# The columns of staging.excluded_pages, in order.
EXCLUDED_COLUMNS = [
    "site",
    "crawled_url",
    "url_key",
    "reason",
    "detail",
    "status_code",
    "crawl_id",
    "row_number",
]
# the pipeline's own rules a user can turn off, and how
SWITCHABLE_RULES = {
    "paginated": "the pages config drop_paginated: false",
    "parameter_url": "the pages config drop_parameter_urls: false, or keep_query_params for the parameters "
    "that make distinct pages",
}


def rule_warnings(cleaned: CleanedPages) -> list[str]:
    """A warning for each of the pipeline's own exclusion rules that dropped at least as many pages as were
    kept: real pages that merely look like pagination (`/p/123/`) or carry parameters."""
    warnings = []
    for reason, how in SWITCHABLE_RULES.items():
        dropped = cleaned.excluded.filter(pl.col("reason") == reason)
        if dropped.height and dropped.height >= cleaned.pages.height:
            warnings.append(
                f"the '{reason}' rule excluded {dropped.height:,} pages and {cleaned.pages.height:,} were "
                f"kept (e.g. {dropped['crawled_url'][0]}); if they are real pages, turn the rule off with "
                f"{how}."
            )
    return warnings


def with_reasons(
    frame: pl.DataFrame, site: str, status_known: bool, options: CleaningOptions
) -> pl.DataFrame:
    """`frame` (cleaning inputs with their URL parts) with the first reason to drop each row (null: none
    of the URL and status rules) and its detail."""
    return (
        frame.with_columns(_in_numbered_series())
        .with_columns(_first_reason(site, status_known, options))
        .with_columns(_detail())
    )


def _in_numbered_series() -> pl.Expr:
    """A URL shaped like page 2+ (`/page/3/`, `?p=3`) is one when its listing's numbers start at 2: the
    pages of a series are numbered 2, 3, …, while product URLs such as `/p/10001/` are not."""
    groups = pl.col("url_key").str.extract_groups(PAGE_NUMBER_PATTERN)
    page = pl.coalesce(groups.struct.field(g) for g in ("1", "2", "3")).cast(pl.Int64, strict=False)
    first = pl.when(pl.col("is_paginated_url")).then(page).min().over("host", "series_key")
    return (pl.col("is_paginated_url") & (first <= 2).fill_null(False)).alias("in_numbered_series")


def _first_reason(site: str, status_known: bool, options: CleaningOptions) -> pl.Expr:
    status = pl.col("status_code")
    content_type = pl.col("content_type")
    idx_status = pl.col("indexability_status").str.to_lowercase().fill_null("")
    robots = pl.concat_str(
        [pl.col("meta_robots").fill_null(""), pl.col("x_robots_tag").fill_null("")], separator=" "
    ).str.to_lowercase()
    indexability = pl.col("indexability").str.to_lowercase().str.strip_chars()
    keep = [p.lower() for p in options.keep_query_params]
    query_names = (
        pl.col("query")
        .str.split("&")
        .list.eval(pl.element().str.replace(r"=.*$", "").str.to_lowercase())
        .list.eval(pl.element().filter((pl.element() != "") & ~pl.element().is_in(keep)))
    )
    reason = (
        pl.when(~pl.col("url_valid"))
        .then(pl.lit("invalid_url"))
        .when(pl.col("host") != site)
        .then(pl.lit("other_host"))
        .when(content_type.is_not_null() & ~content_type.str.contains(r"(?i)html"))
        .then(pl.lit("not_html"))
        .when(pl.lit(status_known) & (status.is_null() | (status == 0)))
        .then(pl.lit("no_response"))
        .when(status.is_between(300, 399))
        .then(pl.lit("redirect"))
        .when(status.is_between(400, 499))
        .then(pl.lit("client_error"))
        .when(status >= 500)
        .then(pl.lit("server_error"))
        .when(status.is_not_null() & (status != 200))
        .then(pl.lit("non_200"))
        .when(idx_status.str.contains("robots"))
        .then(pl.lit("blocked_by_robots"))
        .when(idx_status.str.contains("noindex") | robots.str.contains("noindex"))
        .then(pl.lit("noindex"))
        .when(
            idx_status.str.contains("canoni|kanoni")
            | (pl.col("canonical_key").is_not_null() & (pl.col("canonical_key") != pl.col("url_key")))
        )
        .then(pl.lit("canonicalised"))
        .when(indexability.is_not_null() & ~indexability.is_in(INDEXABLE_VALUES))
        .then(pl.lit("non_indexable"))
        .when(
            pl.lit(options.drop_paginated) & (pl.col("in_numbered_series") | pl.col("rel_prev").is_not_null())
        )
        .then(pl.lit("paginated"))
        .when(pl.lit(options.drop_parameter_urls) & (query_names.list.len() > 0))
        .then(pl.lit("parameter_url"))
    )
    return reason.otherwise(None).alias("reason")


def _detail() -> pl.Expr:
    status_text = pl.concat_str(
        [
            pl.lit("status "),
            pl.col("status_code").cast(pl.String).fill_null("none"),
            pl.lit(" "),
            pl.col("status").fill_null(""),
        ]
    ).str.strip_chars()
    reason = pl.col("reason")
    return (
        pl.when(reason == "other_host")
        .then(pl.lit("host ") + pl.col("host").fill_null("?"))
        .when(reason == "not_html")
        .then(pl.col("content_type"))
        .when(reason == "redirect")
        .then(
            status_text
            + pl.when(pl.col("redirect_url").is_not_null())
            .then(pl.lit(" → ") + pl.col("redirect_url"))
            .otherwise(pl.lit(""))
        )
        .when(reason.is_in(["no_response", "client_error", "server_error", "non_200"]))
        .then(status_text)
        .when(reason == "canonicalised")
        .then(pl.lit("canonical → ") + pl.col("canonical_url").fill_null("?"))
        .when(reason.is_in(["noindex", "blocked_by_robots", "non_indexable"]))
        .then(pl.coalesce(pl.col("indexability_status"), pl.col("meta_robots"), pl.col("indexability")))
        .when(reason == "paginated")
        .then(pl.lit("page 2+ of a paginated series"))
        .when(reason == "parameter_url")
        .then(pl.lit("query ") + pl.col("query"))
        .when(reason == "invalid_url")
        .then(pl.lit("not an http(s) URL"))
        .otherwise(None)
        .alias("detail")
    )
