"""Cleaning a raw crawl into the pages worth linking (`staging.pages`) and the rest with a reason.

Every raw row ends in exactly one of the two tables. The first matching reason wins, in this order:
invalid_url, other_host, not_html, no_response, redirect, client_error, server_error, non_200,
blocked_by_robots, noindex, canonicalised, non_indexable, paginated, parameter_url, duplicate_url, no_text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import polars as pl

from interlink_pipeline.core.urls import PAGE_NUMBER_PATTERN, stable_ids, url_parts

TextSource = Literal["title", "h1", "meta_description", "title_h1", "title_h1_meta", "custom"]

EXCLUSION_REASONS = (
    "invalid_url",
    "other_host",
    "not_html",
    "no_response",
    "redirect",
    "client_error",
    "server_error",
    "non_200",
    "blocked_by_robots",
    "noindex",
    "canonicalised",
    "non_indexable",
    "paginated",
    "parameter_url",
    "duplicate_url",
    "no_text",
)
# Values of the Indexability column that mean "indexable" (EN/ES/FR, DE, IT, PT).
INDEXABLE_VALUES = ("indexable", "indexierbar", "indicizzabile", "indexável", "indexavel")
# Title separators between a page's own words and the site's branding.
_SEPARATOR = r"[|\-–—:·•»~/]+"
_SUFFIX = rf"^.*\S(?:\s+{_SEPARATOR}\s*|\s*{_SEPARATOR}\s+)(.+?)\s*$"
MAX_BRAND_CHARS = 60
MAX_BRAND_WORDS = 6
MAX_TEXT_CHARS = 2000
MAX_BODY_CHARS = 20_000
# The raw columns cleaning reads (raw.crawl_pages also keeps h2, extra, load metadata, …).
CLEANING_INPUTS = [
    "site",
    "crawl_id",
    "row_number",
    "url",
    "content_type",
    "status_code",
    "status",
    "indexability",
    "indexability_status",
    "title",
    "meta_description",
    "h1",
    "canonical_url",
    "meta_robots",
    "x_robots_tag",
    "rel_prev",
    "redirect_url",
    "crawl_depth",
    "word_count",
    "main_query",
    "custom_text",
    "content_hash",
]
# Brand detection reads a fixed-seed sample: the share of titles ending in the brand is what matters.
BRAND_SAMPLE = 20_000


@dataclass(frozen=True)
class CleaningOptions:
    """How a crawl is cleaned; every field is a `pages` config setting of the same name."""

    text_source: TextSource = "title"
    branding_pattern: str | None = None  # None: detect; "": keep titles whole; else a regex to remove
    drop_parameter_urls: bool = True
    drop_paginated: bool = True  # page 2+ of a paginated listing (a series numbered from 2) is not a page
    keep_query_params: tuple[str, ...] = ()  # parameters that make distinct pages (e.g. "id")
    min_brand_share: float = 0.2  # the brand must end at least this share of titles


@dataclass(frozen=True)
class CleanedPages:
    pages: pl.DataFrame
    excluded: pl.DataFrame
    branding: str | None  # the brand detected, or the pattern used
    titles_debranded: int
    home_url: str | None


def clean_pages(
    raw: pl.DataFrame,
    site: str,
    options: CleaningOptions | None = None,
    page_text: pl.DataFrame | None = None,
) -> CleanedPages:
    """Split `raw` (a `raw.crawl_pages` frame for one site) into kept pages and excluded rows.

    `page_text` (url, text: a `raw.page_text` frame) gives the pages' body text, matched by URL key; a
    mapped custom_text column fills it for pages it does not cover."""
    options = options or CleaningOptions()
    canonical = url_parts(raw["canonical_url"])
    frame = pl.concat(
        [raw.select(CLEANING_INPUTS).rename({"url": "crawled_url"}), url_parts(raw["url"])], how="horizontal"
    ).with_columns(
        pl.when(canonical["url_valid"]).then(canonical["url_key"]).otherwise(None).alias("canonical_key")
    )
    del canonical
    status_known = raw["status_code"].is_not_null().any()
    frame = (
        frame.with_columns(_in_numbered_series())
        .with_columns(_first_reason(site, status_known, options))
        .with_columns(_detail())
    )
    excluded_columns = [
        "site",
        "crawled_url",
        "url_key",
        "reason",
        "detail",
        "status_code",
        "crawl_id",
        "row_number",
    ]
    dropped = frame.filter(pl.col("reason").is_not_null()).select(excluded_columns)

    # Among the rows still in, one per URL key: prefer the URL without tracking parameters, then the
    # shallowest, then the first crawled. Ranking a narrow key frame avoids copying every column twice.
    keys = frame.filter(pl.col("reason").is_null()).select(
        "row_number", "url_key", "crawled_url", "had_tracking_params", "crawl_depth"
    )
    winners = keys.sort(
        ["had_tracking_params", pl.col("crawl_depth").fill_null(1 << 30), "row_number"]
    ).unique("url_key", keep="first", maintain_order=True)
    duplicates = (
        keys.join(winners.select("row_number"), on="row_number", how="anti")
        .join(winners.select("url_key", pl.col("crawled_url").alias("kept_url")), on="url_key")
        .join(
            frame.select(excluded_columns).drop("reason", "detail"),
            on=["row_number", "url_key", "crawled_url"],
        )
        .with_columns(
            pl.lit("duplicate_url").alias("reason"),
            (pl.lit("same page as ") + pl.col("kept_url")).alias("detail"),
        )
    )
    keepers = frame.filter(pl.col("row_number").is_in(winners["row_number"].implode()))
    del frame, keys, winners

    brand_pattern, brand_label = _branding(keepers["title"], options)
    title = pl.col("title").str.replace_all(r"\s+", " ")
    debranded = (
        title.str.replace_all(brand_pattern, "").str.strip_chars(" " + "|-–—:·•»~/")
        if brand_pattern
        else title
    )
    keepers = keepers.with_columns(
        pl.col("title").alias("title_raw"),
        debranded.replace("", None).alias("title"),
        *(pl.col(c).str.replace_all(r"\s+", " ") for c in ("h1", "meta_description", "custom_text")),
    )
    titles_debranded = int(
        keepers.select(
            (
                pl.col("title").fill_null("")
                != pl.col("title_raw").str.replace_all(r"\s+", " ").fill_null("")
            ).sum()
        ).item()
    )
    keepers = keepers.with_columns(_text(options.text_source)).join(
        _body_texts(page_text), on="url_key", how="left"
    )
    keepers = keepers.with_columns(
        pl.coalesce("body_text", "custom_text").str.slice(0, MAX_BODY_CHARS).alias("body_text")
    )
    # near-duplicates only on strong evidence: the crawler's content hash, or the same H1 and body text
    same_content = pl.when(pl.col("body_text").is_not_null()).then(
        pl.concat_str([pl.col("h1").fill_null(""), pl.col("body_text")], separator="\n")
    )
    content = keepers.select(same_content.alias("content"))["content"]
    keepers = keepers.with_columns(
        pl.coalesce(
            pl.col("content_hash").str.strip_chars().replace("", None),
            pl.lit(stable_ids(content, 32)).alias("x"),
        ).alias("duplicate_key")
    )
    no_text = keepers.filter(pl.col("text").is_null()).with_columns(
        pl.lit("no_text").alias("reason"), pl.lit("no title, H1 or meta description").alias("detail")
    )
    pages = keepers.filter(pl.col("text").is_not_null())
    pages = _with_home(pages)
    pages = pages.with_columns(
        stable_ids(pages["url_key"]).alias("page_id"),
        stable_ids(pages["text"], 32).alias("text_hash"),
        pl.col("path").str.extract(r"^/([^/?#]+)", 1).fill_null("").alias("section"),
    ).select(
        "site",
        "page_id",
        "url",
        "url_key",
        "crawled_url",
        "is_home",
        "path",
        "section",
        "title",
        "title_raw",
        "h1",
        "meta_description",
        "body_text",
        "duplicate_key",
        "text",
        "text_source",
        "text_hash",
        "crawl_depth",
        "word_count",
        "main_query",
        "crawl_id",
        "row_number",
    )
    excluded = pl.concat(
        [dropped, duplicates.select(excluded_columns), no_text.select(excluded_columns)]
    ).sort("row_number")
    home = pages.filter(pl.col("is_home"))["url"]
    return CleanedPages(pages, excluded, brand_label, titles_debranded, home[0] if home.len() else None)


def _body_texts(page_text: pl.DataFrame | None) -> pl.DataFrame:
    empty = pl.DataFrame(schema={"url_key": pl.String, "body_text": pl.String})
    if page_text is None or page_text.is_empty():
        return empty
    texts = page_text["text"].str.replace_all(r"\s+", " ").str.strip_chars().replace("", None)
    return (
        pl.DataFrame({"url_key": url_parts(page_text["url"])["url_key"], "body_text": texts})
        .drop_nulls()
        .unique("url_key", keep="first")
    )


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


def detect_brand(titles: pl.Series, min_share: float = 0.2) -> str | None:
    """The site's branding (lower case) if enough titles end with it (or consist of it), else None.

    Counting the text after each title's last separator, and whole titles without one, finds
    " | Physics Forums", " - Light Chiropractic" and "| Light Chiropractic" alike, and nested forms
    such as " - NutriSport - Nutrisport".
    """
    clean = titles.drop_nulls().str.replace_all(r"\s+", " ").str.strip_chars()
    clean = clean.filter(clean != "")
    if clean.is_empty():
        return None
    if clean.len() > BRAND_SAMPLE:
        clean = clean.sample(BRAND_SAMPLE, seed=0)
    suffix = pl.col("t").str.extract(_SUFFIX, 1)
    candidates = pl.DataFrame({"t": clean}).select(
        pl.coalesce(suffix, pl.col("t")).str.to_lowercase().alias("c"), suffix.is_not_null().alias("suffix")
    )
    counts = candidates.group_by("c").agg(pl.len().alias("n"), pl.col("suffix").sum()).sort("n", "c")
    brand, count, as_suffix = counts.row(-1)
    needed = max(3, min_share * clean.len())
    if count < needed or len(brand) > MAX_BRAND_CHARS or len(brand.split()) > MAX_BRAND_WORDS:
        return None
    if as_suffix == 0:  # only ever a whole title: the pages share a title, not a branding suffix
        return None
    return brand


def _branding(titles: pl.Series, options: CleaningOptions) -> tuple[str | None, str | None]:
    """(regex removing the branding, what to report) from the options or detection."""
    if options.branding_pattern is not None:
        pattern = options.branding_pattern or None
        return pattern, pattern
    brand = detect_brand(titles, options.min_brand_share)
    if brand is None:
        return None, None
    escaped = re.escape(brand).replace(r"\ ", r"\s+")
    pattern = (
        rf"(?i)^\s*{escaped}\s*$"  # the whole title is the brand
        rf"|(?:\s*{_SEPARATOR}\s*{escaped}\s*)+$"  # one or more trailing brand segments
        rf"|^\s*{escaped}\s*{_SEPARATOR}\s*"  # a leading brand segment
    )
    return pattern, brand


def _text(source: TextSource) -> list[pl.Expr]:
    """The text to embed, falling back to the next field when the chosen one is empty."""
    title, h1, meta, custom = (pl.col(c) for c in ("title", "h1", "meta_description", "custom_text"))
    order = {
        "title": [("title", title), ("h1", h1), ("meta_description", meta)],
        "h1": [("h1", h1), ("title", title), ("meta_description", meta)],
        "meta_description": [("meta_description", meta), ("title", title), ("h1", h1)],
        "custom": [("custom", custom), ("title", title), ("h1", h1)],
    }
    if source in order:
        text = pl.coalesce([expr for _, expr in order[source]])
        used = pl.when(order[source][0][1].is_not_null()).then(pl.lit(order[source][0][0]))
        for name, expr in order[source][1:]:
            used = used.when(expr.is_not_null()).then(pl.lit(name))
        used = used.otherwise(None)
    else:
        parts = [title, h1] if source == "title_h1" else [title, h1, meta]
        text = (
            pl.concat_list([p.fill_null("") for p in parts])
            .list.eval(pl.element().filter(pl.element() != ""))
            .list.unique(maintain_order=True)
            .list.join(". ")
            .replace("", None)
        )
        used = pl.when(text.is_not_null()).then(pl.lit(source)).otherwise(None)
    return [text.str.slice(0, MAX_TEXT_CHARS).alias("text"), used.alias("text_source")]


def _with_home(pages: pl.DataFrame) -> pl.DataFrame:
    """Flag one home page: the root URL, else the shallowest page, else the shortest URL."""
    if pages.is_empty():
        return pages.with_columns(pl.lit(False).alias("is_home"))
    home_row = (
        pages.select(
            pl.col("row_number"),
            (pl.col("path") != "/").alias("not_root"),
            pl.col("crawl_depth").fill_null(1 << 30).alias("depth"),
            pl.col("url").str.len_chars().alias("length"),
        )
        .sort(["not_root", "depth", "length", "row_number"])
        .item(0, "row_number")
    )
    return pages.with_columns((pl.col("row_number") == home_row).alias("is_home"))
