"""The sample site's Internal: All export: its pages, the pages 2+ of its listings, and the rows a real crawl
also holds that are not pages to link (redirects, 404s, noindex and canonicalised URLs, utm duplicates,
images), in a crawler's breadth-first order with Screaming Frog's columns."""

from __future__ import annotations

import numpy as np
import polars as pl

from interlink_pipeline.core.urls import stable_ids
from interlink_pipeline.sample.pages import pick, url_slug
from interlink_pipeline.sample.vocabulary import BRAND, TOPICS


def junk_rows(content: pl.DataFrame, rng: np.random.Generator, base: str) -> pl.DataFrame:
    """Rows a crawl holds that are not pages to link: the cleaning step must drop each with its reason."""
    n = content.height
    products = content.filter(pl.col("page_type") == "product")
    categories = content.filter(pl.col("page_type") == "category")

    def sample(frame: pl.DataFrame, share: float, minimum: int = 3) -> pl.DataFrame:
        count = min(frame.height, max(minimum, int(n * share)))
        return frame[np.sort(rng.choice(frame.height, size=count, replace=False))]

    redirects = sample(products, 0.04).select(
        (pl.lit(base + "/old-shop/product-") + pl.col("page_number").cast(pl.String) + pl.lit(".html")).alias(
            "url"
        ),
        pl.lit("redirect").alias("kind"),
        pl.col("url").alias("target"),
    )
    missing = pl.DataFrame({"i": np.arange(max(3, n // 100))}).select(
        (pl.lit(base + "/p/discontinued-item-") + pl.col("i").cast(pl.String) + pl.lit("/")).alias("url"),
        pl.lit("not_found").alias("kind"),
        pl.lit(None, dtype=pl.String).alias("target"),
    )
    noindex = pl.DataFrame({"i": np.arange(max(3, n // 100))}).select(
        pl.when(pl.col("i") % 3 == 0)
        .then(
            pl.lit(base + "/search/?q=")
            + pick([t.category.lower().replace(" ", "+") for t in TOPICS], np.arange(max(3, n // 100)))
        )
        .when(pl.col("i") % 3 == 1)
        .then(pl.lit(base + "/account/orders/") + pl.col("i").cast(pl.String) + "/")
        .otherwise(pl.lit(base + "/wishlist/") + pl.col("i").cast(pl.String) + "/")
        .alias("url"),
        pl.lit("noindex").alias("kind"),
        pl.lit(None, dtype=pl.String).alias("target"),
    )
    sorted_listings = categories.select(
        (pl.col("url") + pl.lit("?sort=price")).alias("url"),
        pl.lit("canonicalised").alias("kind"),
        pl.col("url").alias("target"),
    )
    colour_params = sample(products, 0.015).select(
        (pl.col("url") + pl.lit("?colour=red")).alias("url"),
        pl.lit("canonicalised").alias("kind"),
        pl.col("url").alias("target"),
    )
    utm = sample(products, 0.015).select(
        (pl.col("url") + pl.lit("?utm_source=newsletter&utm_medium=email&utm_campaign=spring")).alias("url"),
        pl.lit("utm_duplicate").alias("kind"),
        pl.col("url").alias("target"),
    )
    images = sample(products, 0.05).select(
        (pl.lit(base + "/media/") + url_slug(pl.col("h1")) + pl.lit(".jpg")).alias("url"),
        pl.lit("image").alias("kind"),
        pl.lit(None, dtype=pl.String).alias("target"),
    )
    return pl.concat([redirects, missing, noindex, sorted_listings, colour_params, utm, images])


def crawl_export(
    content: pl.DataFrame,
    listings: pl.DataFrame,
    junk: pl.DataFrame,
    links: pl.DataFrame,
    rng: np.random.Generator,
) -> pl.DataFrame:
    """The export's rows, each with its in-links counted from `links` (the All Inlinks export)."""
    pages = _page_rows(content, rng)
    listing_rows = listings.select(
        "url",
        (pl.col("core") + pl.lit(f" | {BRAND}")).alias("title"),
        "h1",
        pl.lit(None, dtype=pl.String).alias("meta"),
        "depth",
        "rel_prev",
        pl.lit("text/html; charset=UTF-8").alias("content_type"),
        pl.lit(200).alias("status_code"),
        pl.lit(None, dtype=pl.String).alias("canonical"),
        pl.lit(None, dtype=pl.String).alias("robots"),
        pl.lit(None, dtype=pl.String).alias("redirect"),
    )
    junk_rows = _junk_page_rows(content, junk)
    rows = pl.concat([pages, listing_rows, junk_rows], how="vertical_relaxed")
    # interleave as a crawler's breadth-first order would, deterministically
    rows = (
        rows.with_columns(pl.Series("order", rng.permutation(rows.height)))
        .sort(["depth", "order"])
        .drop("order")
    )
    return screaming_frog_columns(with_inlinks(rows, links), rng)


def html_page_columns() -> list[pl.Expr]:
    """What a crawler records of a page that answered 200 with HTML: no pagination, canonical elsewhere,
    robots rule or redirect."""
    return [
        pl.lit(None, dtype=pl.String).alias("rel_prev"),
        pl.lit("text/html; charset=UTF-8").alias("content_type"),
        pl.lit(200).alias("status_code"),
        pl.lit(None, dtype=pl.String).alias("canonical"),
        pl.lit(None, dtype=pl.String).alias("robots"),
        pl.lit(None, dtype=pl.String).alias("redirect"),
    ]


def with_inlinks(rows: pl.DataFrame, links: pl.DataFrame) -> pl.DataFrame:
    """The crawl's rows (by `url`) with their Inlinks and Unique Inlinks counted from the links export."""
    inlinks = links.group_by("Destination").agg(
        pl.len().alias("inlinks"), pl.col("Source").n_unique().alias("unique_inlinks")
    )
    return rows.join(inlinks, left_on="url", right_on="Destination", how="left")


def _page_rows(content: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    """The site's pages, their titles with a branding suffix in several spellings (some just the brand)."""
    n = content.height
    suffixes = np.array([f" | {BRAND}", f" - {BRAND}", f" – {BRAND}"])
    suffix = suffixes[rng.choice(3, size=n, p=[0.6, 0.3, 0.1])]
    bare = (rng.random(n) < 0.04) & (content["page_type"] == "blog").to_numpy()  # title is just the brand
    return content.with_columns(
        pl.when(pl.Series(bare))
        .then(pl.lit(BRAND))
        .when(pl.col("branded"))
        .then(pl.col("core") + pl.Series(suffix))
        .otherwise(pl.col("core"))
        .alias("title"),
        *html_page_columns(),
    ).select(
        "url",
        "title",
        "h1",
        "meta",
        "depth",
        "rel_prev",
        "content_type",
        "status_code",
        "canonical",
        "robots",
        "redirect",
    )


def _junk_page_rows(content: pl.DataFrame, junk: pl.DataFrame) -> pl.DataFrame:
    """junk_rows as crawled: a duplicate carries its page's texts, an error page a stock title."""
    kind = pl.col("kind")
    targets = content.select(
        pl.col("url").alias("target"), pl.col("core").alias("title_src"), "h1", "meta", "depth"
    )
    return junk.join(targets, on="target", how="left").select(
        "url",
        pl.when(kind.is_in(["canonicalised", "utm_duplicate"]))
        .then(pl.col("title_src") + pl.lit(f" | {BRAND}"))
        .when(kind == "noindex")
        .then(pl.lit(f"My Account | {BRAND}"))
        .when(kind == "not_found")
        .then(pl.lit(f"Page Not Found | {BRAND}"))
        .otherwise(None)
        .alias("title"),
        pl.when(kind.is_in(["canonicalised", "utm_duplicate"]))
        .then(pl.col("h1"))
        .otherwise(None)
        .alias("h1"),
        pl.when(kind.is_in(["canonicalised", "utm_duplicate"]))
        .then(pl.col("meta"))
        .otherwise(None)
        .alias("meta"),
        pl.col("depth").fill_null(4).alias("depth"),
        pl.lit(None, dtype=pl.String).alias("rel_prev"),
        pl.when(kind == "image")
        .then(pl.lit("image/jpeg"))
        .when(kind == "redirect")
        .then(pl.lit(None))
        .otherwise(pl.lit("text/html; charset=UTF-8"))
        .alias("content_type"),
        pl.when(kind == "redirect")
        .then(301)
        .when(kind == "not_found")
        .then(404)
        .otherwise(200)
        .alias("status_code"),
        pl.when(kind == "canonicalised").then(pl.col("target")).otherwise(None).alias("canonical"),
        pl.when(kind == "noindex").then(pl.lit("noindex, follow")).otherwise(None).alias("robots"),
        pl.when(kind == "redirect").then(pl.col("target")).otherwise(None).alias("redirect"),
    )


def screaming_frog_columns(rows: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    """The rows under Screaming Frog's headers, with what a crawler adds (sizes, word counts, times)."""
    status = pl.col("status_code")
    non_indexable = (
        (status != 200)
        | pl.col("canonical").is_not_null()
        | pl.col("robots").is_not_null()
        | (pl.col("content_type") == "image/jpeg")
    )
    words = rng.integers(150, 2500, rows.height)
    return rows.select(
        pl.col("url").alias("Address"),
        pl.col("content_type").fill_null("").alias("Content Type"),
        status.cast(pl.String).alias("Status Code"),
        pl.when(status == 200)
        .then(pl.lit("OK"))
        .when(status == 301)
        .then(pl.lit("Moved Permanently"))
        .otherwise(pl.lit("Not Found"))
        .alias("Status"),
        pl.when(non_indexable & (pl.col("content_type") != "image/jpeg"))
        .then(pl.lit("Non-Indexable"))
        .otherwise(pl.lit("Indexable"))
        .alias("Indexability"),
        pl.when(status == 301)
        .then(pl.lit("Redirected"))
        .when(status == 404)
        .then(pl.lit("Client Error"))
        .when(pl.col("canonical").is_not_null())
        .then(pl.lit("Canonicalised"))
        .when(pl.col("robots").is_not_null())
        .then(pl.lit("noindex"))
        .otherwise(pl.lit(""))
        .alias("Indexability Status"),
        pl.col("title").fill_null("").alias("Title 1"),
        pl.col("title").str.len_chars().fill_null(0).cast(pl.String).alias("Title 1 Length"),
        pl.col("meta").fill_null("").alias("Meta Description 1"),
        pl.col("meta").str.len_chars().fill_null(0).cast(pl.String).alias("Meta Description 1 Length"),
        pl.col("h1").fill_null("").alias("H1-1"),
        pl.col("h1").str.len_chars().fill_null(0).cast(pl.String).alias("H1-1 Length"),
        pl.lit("").alias("H2-1"),
        pl.col("robots").fill_null("").alias("Meta Robots 1"),
        pl.lit("").alias("X-Robots-Tag 1"),
        pl.col("canonical")
        .fill_null(pl.when(status == 200).then(pl.col("url")).otherwise(pl.lit("")))
        .alias("Canonical Link Element 1"),
        pl.lit("").alias('rel="next" 1'),
        pl.col("rel_prev").fill_null("").alias('rel="prev" 1'),
        pl.Series(rng.integers(20_000, 180_000, rows.height)).cast(pl.String).alias("Size (bytes)"),
        pl.when(status == 200).then(pl.Series(words)).otherwise(0).cast(pl.String).alias("Word Count"),
        pl.col("depth").cast(pl.String).alias("Crawl Depth"),
        pl.col("inlinks").fill_null(0).cast(pl.String).alias("Inlinks"),
        pl.col("unique_inlinks").fill_null(0).cast(pl.String).alias("Unique Inlinks"),
        stable_ids(rows["url"], 32).alias("Hash"),
        pl.Series(np.round(rng.uniform(0.05, 1.2, rows.height), 3)).cast(pl.String).alias("Response Time"),
        pl.col("redirect").fill_null("").alias("Redirect URL"),
        pl.when(status == 301).then(pl.lit("HTTP Redirect")).otherwise(pl.lit("")).alias("Redirect Type"),
        pl.col("url").alias("URL Encoded Address"),
        pl.lit("2026-11-01 09:00:00").alias("Crawl Timestamp"),
    )
