"""A site's title branding (" | Physics Forums"): detecting it, and removing it from the pages' titles."""

from __future__ import annotations

import re

import polars as pl

from interlink_pipeline.core.ingest.cleaning_options import CleaningOptions

# Title separators between a page's own words and the site's branding.
_SEPARATOR = r"[|\-–—:·•»~/]+"
_SUFFIX = rf"^.*\S(?:\s+{_SEPARATOR}\s*|\s*{_SEPARATOR}\s+)(.+?)\s*$"
MAX_BRAND_CHARS = 60
MAX_BRAND_WORDS = 6
# Brand detection reads a fixed-seed sample: the share of titles ending in the brand is what matters.
BRAND_SAMPLE = 20_000


def debranded_titles(pages: pl.DataFrame, options: CleaningOptions) -> tuple[pl.DataFrame, str | None, int]:
    """(`pages` with title_raw as crawled and title whitespace-collapsed, branding removed (null when
    nothing is left); the brand detected or the pattern used; how many titles lost their branding)."""
    brand_pattern, brand_label = _branding(pages["title"], options)
    title = pl.col("title").str.replace_all(r"\s+", " ")
    debranded = (
        title.str.replace_all(brand_pattern, "").str.strip_chars(" " + "|-–—:·•»~/")
        if brand_pattern
        else title
    )
    pages = pages.with_columns(pl.col("title").alias("title_raw"), debranded.replace("", None).alias("title"))
    titles_debranded = int(
        pages.select(
            (
                pl.col("title").fill_null("")
                != pl.col("title_raw").str.replace_all(r"\s+", " ").fill_null("")
            ).sum()
        ).item()
    )
    return pages, brand_label, titles_debranded


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
