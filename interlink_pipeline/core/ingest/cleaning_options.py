"""What cleaning takes and gives: its settings and its result, apart from the steps that use them (the
exclusion rules and the branding read the settings; the pages step returns the result)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from interlink_pipeline.core.ingest.page_text import TextSource
from interlink_pipeline.core.settings import rust_regexes, setting


@dataclass(frozen=True)
class CleaningOptions:
    """How a crawl is cleaned (the `pages` step's config is derived from these settings)."""

    text_source: TextSource = setting(
        "title", "Field that represents a page (embedded, searched); falls back to the next field when empty."
    )
    branding_pattern: str | None = setting(
        None,
        "Regex removed from titles (Rust regex syntax). Unset: detect the site's branding suffix; '' "
        "keeps titles whole.",
        check=rust_regexes,
    )
    drop_parameter_urls: bool = setting(True, "Drop URLs with non-tracking query parameters.")
    drop_paginated: bool = setting(
        True,
        "Drop page 2+ of paginated listings (URLs like /page/3/ or ?p=3 in a series numbered from 2, or "
        "with rel=prev).",
    )
    keep_query_params: tuple[str, ...] = setting(
        (), "Query parameters that identify distinct pages (e.g. 'id')."
    )
    min_brand_share: float = setting(
        0.2, "Share of titles a detected branding suffix must end.", ge=0.0, le=1.0
    )


@dataclass(frozen=True)
class CleanedPages:
    pages: pl.DataFrame
    excluded: pl.DataFrame
    branding: str | None  # the brand detected, or the pattern used
    titles_debranded: int
    home_url: str | None
