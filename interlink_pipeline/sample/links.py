"""The sample site's All Inlinks export: site-wide header, navigation and footer links on every HTML page,
and the links in the content, breadcrumbs, pagination and related-product sidebars."""

from __future__ import annotations

import polars as pl

from interlink_pipeline.sample.pages import listing_members
from interlink_pipeline.sample.vocabulary import BRAND

GUIDES_HUB_SIZE = 30
Placed = tuple[pl.DataFrame, str, str]  # links (source, target, anchor), their Link Path and Link Position


def inlinks_export(content: pl.DataFrame, listings: pl.DataFrame, base: str) -> pl.DataFrame:
    """The All Inlinks export, with Screaming Frog's columns."""
    links = pl.concat(
        [
            _site_wide_links(content, listings, base),
            *(
                _positioned(frame, path, position)
                for frame, path, position in [
                    *_shop_links(content, listings, base),
                    *_editorial_links(content, base),
                ]
            ),
        ]
    ).filter(pl.col("source") != pl.col("target"))
    return as_inlinks_export(links)


def as_inlinks_export(links: pl.DataFrame) -> pl.DataFrame:
    """Links (source, target, anchor, position, link_path, alt) under Screaming Frog's All Inlinks headers."""
    return links.select(
        pl.lit("Hyperlink").alias("Type"),
        pl.col("source").alias("Source"),
        pl.col("target").alias("Destination"),
        pl.lit("0").alias("Size (Bytes)"),
        pl.col("alt").alias("Alt Text"),
        pl.col("anchor").alias("Anchor"),
        pl.lit("200").alias("Status Code"),
        pl.lit("OK").alias("Status"),
        pl.lit("true").alias("Follow"),
        pl.lit("").alias("Target"),
        pl.lit("").alias("Rel"),
        pl.lit("Root-Relative").alias("Path Type"),
        pl.col("link_path").alias("Link Path"),
        pl.col("position").alias("Link Position"),
        pl.lit("HTML").alias("Link Origin"),
    )


def _site_wide_links(content: pl.DataFrame, listings: pl.DataFrame, base: str) -> pl.DataFrame:
    """The header, navigation and footer links every HTML page has."""
    html_sources = pl.concat([content.select("url"), listings.select("url")])
    featured = content.filter(pl.col("page_type") == "category").head(2)
    site_wide = pl.DataFrame(
        {
            "target": [base + "/", base + "/blog/", *featured["url"], base + "/about/", base + "/contact/"],
            "anchor": ["", "Journal", *featured["core"], "About Us", "Contact Us"],
            "position": ["Header", "Navigation", "Navigation", "Navigation", "Footer", "Footer"],
            "link_path": [
                "//header/a",
                "//nav/ul/li[1]/a",
                "//nav/ul/li[2]/a",
                "//nav/ul/li[3]/a",
                "//footer/ul/li[1]/a",
                "//footer/ul/li[2]/a",
            ],
            "alt": [BRAND + " logo", "", "", "", "", ""],
        }
    )
    return html_sources.join(site_wide, how="cross").select(
        pl.col("url").alias("source"), "target", "anchor", "position", "link_path", "alt"
    )


def _positioned(frame: pl.DataFrame, path: str, position: str) -> pl.DataFrame:
    """Links (source, target, anchor) at one place of their pages (a Link Path, a Link Position)."""
    return frame.select(
        "source",
        "target",
        "anchor",
        pl.lit(position).alias("position"),
        pl.lit(path).alias("link_path"),
        pl.lit("").alias("alt"),
    )


def _link(source: pl.Expr, target: str = "url", anchor: pl.Expr | None = None) -> list[pl.Expr]:
    """A link's columns: from `source` to the page in column `target`, anchored by its name (`core`)."""
    anchor = pl.col("core") if anchor is None else anchor
    return [source.alias("source"), pl.col(target).alias("target"), anchor.alias("anchor")]


def _shop_links(content: pl.DataFrame, listings: pl.DataFrame, base: str) -> list[Placed]:
    """Home to categories to subcategories to products, listing pagination, breadcrumbs, related products."""
    members = listing_members(content)
    categories = content.filter(pl.col("page_type") == "category")
    home_to_categories = categories.select(_link(pl.lit(base + "/")))
    category_to_subs = (
        content.filter(pl.col("page_type") == "subcategory")
        .join(categories.select("topic", pl.col("url").alias("source")), on="topic")
        .select(_link(pl.col("source")))
    )
    listing_to_products = members.select(
        _link(
            pl.when(pl.col("listing_page") == 1)
            .then(pl.col("listing_url"))
            .otherwise(
                pl.col("listing_url") + pl.lit("page/") + pl.col("listing_page").cast(pl.String) + pl.lit("/")
            )
        )
    )
    listing_pagination = listings.select(
        _link(
            pl.col("rel_prev"),
            anchor=pl.concat_str([pl.lit("Page "), pl.col("listing_page").cast(pl.String)]),
        )
    )
    breadcrumbs = members.select(_link(pl.col("url"), "listing_url", pl.col("listing_name")))
    # "related products": the next two products of the same listing
    related = (
        members.with_columns(
            pl.col("url").shift(-1).over("listing_url").alias("next1"),
            pl.col("core").shift(-1).over("listing_url").alias("next1_name"),
        )
        .filter(pl.col("next1").is_not_null())
        .select(_link(pl.col("url"), "next1", pl.col("next1_name")))
    )
    return [
        (home_to_categories, "//main/section[2]/div/a", "Content"),
        (category_to_subs, "//main/ul[@class='subcategories']/li/a", "Content"),
        (listing_to_products, "//main/ul[@class='products']/li/a", "Content"),
        (listing_pagination, "//main/nav[@class='pagination']/a", "Navigation"),
        (breadcrumbs, "//nav[@class='breadcrumb']/a", "Navigation"),
        (related, "//aside[@class='related']/a", "Sidebar"),
    ]


def _editorial_links(content: pl.DataFrame, base: str) -> list[Placed]:
    """The blog index's first 12 posts, each post to its topic's category, the guides hub's first page."""
    blogs = content.filter(pl.col("page_type") == "blog")
    blog_index = blogs.head(12).select(_link(pl.lit(base + "/blog/")))
    blog_to_category = blogs.join(
        content.filter(pl.col("page_type") == "category").select(
            "topic", pl.col("url").alias("target"), pl.col("core").alias("anchor")
        ),
        on="topic",
    ).select(pl.col("url").alias("source"), "target", "anchor")
    guides_hub = (
        content.filter(pl.col("page_type") == "guide")
        .head(GUIDES_HUB_SIZE)
        .select(_link(pl.lit(base + "/guides/")))
    )
    return [
        (blog_index, "//main/article/h2/a", "Content"),
        (blog_to_category, "//main/article/p/a", "Content"),
        (guides_hub, "//main/ul/li/a", "Content"),
    ]
