"""The sample site's pages: home, utility, category, subcategory, product, blog and guide pages, and the
pages 2+ of each product listing."""

from __future__ import annotations

import numpy as np
import polars as pl

from interlink_pipeline.sample.vocabulary import (
    BLOG_TEMPLATES,
    BRAND,
    BRANDS,
    COLOURS,
    GUIDE_THEMES,
    MODEL_SUFFIXES,
    MODELS,
    PLACES,
    TOPICS,
    UTILITY_PAGES,
)

LISTING_PAGE_SIZE = 24


def pick(values: tuple[str, ...] | list[str], index: np.ndarray) -> pl.Series:
    return pl.Series(list(values), dtype=pl.String).gather(pl.Series(index.astype(np.int64) % len(values)))


def url_slug(expr: pl.Expr) -> pl.Expr:
    return (
        expr.str.to_lowercase()
        .str.replace_all("ê", "e")
        .str.replace_all("°", "")
        .str.replace_all(r"[^a-z0-9]+", "-")
        .str.strip_chars("-")
    )


def _fixed_pages() -> pl.DataFrame:
    """The pages every size of the site has: home, hubs, utility pages, categories and subcategories."""
    return (
        pl.DataFrame(_hub_pages() + _category_pages(), infer_schema_length=None)
        .with_columns(
            pl.when(pl.col("page_type") == "subcategory")
            .then(pl.col("path") + url_slug(pl.col("sub")) + pl.lit("/"))
            .otherwise(pl.col("path"))
            .alias("path")
        )
        .drop("sub")
    )


def _hub_pages() -> list[dict]:
    """Home, the blog and guide hubs, and the utility pages."""
    hubs: list[dict] = [
        {
            "path": "/",
            "page_type": "home",
            "topic": "",
            "core": f"{BRAND} | Outdoor Gear Shop, Guides & Advice",
            "h1": "Outdoor Gear for Every Adventure",
            "meta": "Shop hiking, camping, climbing and ski touring gear "
            "with expert advice from Alpine Gear.",
            "depth": 0,
            "branded": False,
        },
        {
            "path": "/blog/",
            "page_type": "blog_index",
            "topic": "",
            "core": "The Alpine Gear Journal",
            "h1": "The Journal",
            "meta": "Gear guides, reviews and trip reports from our team.",
            "depth": 1,
            "branded": True,
        },
        {
            "path": "/guides/",
            "page_type": "guides_index",
            "topic": "",
            "core": "Adventure Guides by Destination",
            "h1": "Adventure Guides",
            "meta": "Where to hike, climb, camp and ski: routes and gear lists.",
            "depth": 1,
            "branded": True,
        },
    ]
    return hubs + [
        {
            "path": page.path,
            "page_type": "utility",
            "topic": "",
            "core": page.title,
            "h1": page.title,
            "meta": page.meta,
            "depth": 1,
            "branded": True,
        }
        for page in UTILITY_PAGES
    ]


def _category_pages() -> list[dict]:
    """A category per topic, with three subcategories (their paths get the name's slug)."""
    pages: list[dict] = []
    for topic in TOPICS:
        name, activities = topic.category, topic.activities
        pages.append(
            {
                "path": f"/c/{topic.slug}/",
                "page_type": "category",
                "topic": topic.slug,
                "core": name,
                "h1": name,
                "meta": f"Browse {name.lower()} from top brands, with expert advice on choosing "
                f"{topic.nouns[0][1].lower()} for {activities[0].lower()}.",
                "depth": 1,
                "branded": True,
            }
        )
        for sub in (f"Men's {name}", f"Women's {name}", f"{topic.features[0]} {name}"):
            pages.append(
                {
                    "path": f"/c/{topic.slug}/",
                    "page_type": "subcategory",
                    "topic": topic.slug,
                    "core": sub,
                    "h1": sub,
                    "meta": f"Shop {sub.lower()} for {activities[1].lower()} and {activities[2].lower()}.",
                    "depth": 2,
                    "branded": True,
                    "sub": sub,
                }
            )
    return pages


def content_pages(total: int, rng: np.random.Generator) -> pl.DataFrame:
    """About `total` pages: the fixed ones, then products, blog posts and guides in fixed shares."""
    head = _fixed_pages()
    remaining = total - head.height
    n_guides = min(int(remaining * 0.13), len(TOPICS) * 3 * len(PLACES) * len(GUIDE_THEMES) // 2)
    n_blog = int(remaining * 0.22)
    n_products = remaining - n_guides - n_blog
    return pl.concat(
        [
            head,
            _products(n_products, rng),
            _blog_posts(n_blog, rng),
            _guides(n_guides, rng),
        ],
        how="diagonal_relaxed",
    ).with_row_index("page_number")


def _topic_columns(topic_idx: np.ndarray, rng: np.random.Generator) -> dict[str, pl.Series]:
    noun_idx = rng.integers(0, 3, topic_idx.size)
    other_idx = (noun_idx + 1 + rng.integers(0, 2, topic_idx.size)) % 3
    flat_singular = [n[0] for t in TOPICS for n in t.nouns]
    flat_plural = [n[1] for t in TOPICS for n in t.nouns]
    flat_features = [f for t in TOPICS for f in t.features]
    flat_activities = [a for t in TOPICS for a in t.activities]
    return {
        "topic": pick([t.slug for t in TOPICS], topic_idx),
        "singular": pick(flat_singular, topic_idx * 3 + noun_idx),
        "plural": pick(flat_plural, topic_idx * 3 + noun_idx),
        "other": pick(flat_plural, topic_idx * 3 + other_idx),
        "feature": pick(flat_features, topic_idx * 6 + rng.integers(0, 6, topic_idx.size)),
        "activity": pick(flat_activities, topic_idx * 3 + rng.integers(0, 3, topic_idx.size)),
    }


def _products(n: int, rng: np.random.Generator) -> pl.DataFrame:
    topic_idx = rng.integers(0, len(TOPICS), n)
    cols = _topic_columns(topic_idx, rng)
    frame = pl.DataFrame(
        {
            **cols,
            "brand": pick(BRANDS, rng.integers(0, len(BRANDS), n)),
            "model": pick(MODELS, rng.integers(0, len(MODELS), n)),
            "msuffix": pick(MODEL_SUFFIXES, rng.integers(0, len(MODEL_SUFFIXES), n)),
            "colour": pick(COLOURS, rng.integers(0, len(COLOURS), n)),
            "variant": rng.random(n) < 0.15,
            "sub_index": rng.integers(0, 3, n),
            "serial": np.arange(n),
        }
    )
    name = pl.concat_str([pl.col("brand"), pl.lit(" "), pl.col("model"), pl.col("msuffix")])
    core = pl.concat_str([name, pl.lit(" "), pl.col("feature"), pl.lit(" "), pl.col("singular")])
    # colour variants share a templated title: near-duplicates a per-target cap must keep from flooding
    core = pl.when(pl.col("variant")).then(core + pl.lit(" - ") + pl.col("colour")).otherwise(core)
    return frame.select(
        (
            pl.lit("/p/")
            + url_slug(pl.concat_str([name, pl.lit(" "), pl.col("singular")]))
            + pl.lit("-")
            + pl.col("serial").cast(pl.String)
            + pl.lit("/")
        ).alias("path"),
        pl.lit("product").alias("page_type"),
        pl.col("topic"),
        core.alias("core"),
        pl.concat_str([name, pl.lit(" "), pl.col("singular")]).alias("h1"),
        pl.concat_str(
            [
                pl.lit("Shop the "),
                name,
                pl.lit(" "),
                pl.col("singular").str.to_lowercase(),
                pl.lit(": "),
                pl.col("feature").str.to_lowercase(),
                pl.lit(" design for "),
                pl.col("activity").str.to_lowercase(),
                pl.lit(". Free delivery and 60-day returns."),
            ]
        ).alias("meta"),
        pl.lit(3).alias("depth"),
        pl.lit(True).alias("branded"),
        pl.col("sub_index"),
    )


def _blog_posts(n: int, rng: np.random.Generator) -> pl.DataFrame:
    topic_idx = rng.integers(0, len(TOPICS), n)
    cols = _topic_columns(topic_idx, rng)
    template = rng.integers(0, len(BLOG_TEMPLATES), n)
    frame = pl.DataFrame(
        {
            **cols,
            "template": template,
            "n": rng.integers(3, 16, n),
            "year": rng.integers(2019, 2027, n),
            "serial": np.arange(n),
        }
    )
    core = pl.lit(None, dtype=pl.String)
    for index, text in enumerate(BLOG_TEMPLATES):
        parts: list[pl.Expr] = []
        rest = text
        while "{" in rest:
            before, _, after = rest.partition("{")
            key, _, rest = after.partition("}")
            parts += [pl.lit(before), pl.col(key).cast(pl.String)]
        parts.append(pl.lit(rest))
        core = pl.when(pl.col("template") == index).then(pl.concat_str(parts)).otherwise(core)
    return frame.select(
        (
            pl.lit("/blog/") + url_slug(core) + pl.lit("-") + pl.col("serial").cast(pl.String) + pl.lit("/")
        ).alias("path"),
        pl.lit("blog").alias("page_type"),
        pl.col("topic"),
        core.alias("core"),
        core.alias("h1"),
        pl.concat_str(
            [
                pl.lit("Our experts on "),
                core.str.to_lowercase(),
                pl.lit(". Read before your next "),
                pl.col("activity").str.to_lowercase(),
                pl.lit(" trip."),
            ]
        ).alias("meta"),
        pl.lit(2).alias("depth"),
        pl.lit(True).alias("branded"),
    )


def _guides(n: int, rng: np.random.Generator) -> pl.DataFrame:
    # distinct (activity, place, theme) triples, drawn without replacement
    flat_activities = [(a, t) for t in range(len(TOPICS)) for a in TOPICS[t].activities]
    space = len(flat_activities) * len(PLACES) * len(GUIDE_THEMES)
    combo = rng.choice(space, size=n, replace=False)
    activity_idx = combo // (len(PLACES) * len(GUIDE_THEMES))
    place_idx = (combo // len(GUIDE_THEMES)) % len(PLACES)
    theme_idx = combo % len(GUIDE_THEMES)
    frame = pl.DataFrame(
        {
            "activity": pick([a for a, _ in flat_activities], activity_idx),
            "topic": pick([TOPICS[t].slug for _, t in flat_activities], activity_idx),
            "place": pick(PLACES, place_idx),
            "theme": pick(GUIDE_THEMES, theme_idx),
        }
    )
    # "[Activity] in [Place]" boilerplate: the templated pages that flood naive similarity lists
    core = pl.concat_str([pl.col("activity"), pl.lit(" in "), pl.col("place"), pl.lit(": "), pl.col("theme")])
    return frame.select(
        (
            pl.lit("/guides/")
            + url_slug(
                pl.concat_str(
                    [pl.col("activity"), pl.lit(" in "), pl.col("place"), pl.lit(" "), pl.col("theme")]
                )
            )
            + pl.lit("/")
        ).alias("path"),
        pl.lit("guide").alias("page_type"),
        pl.col("topic"),
        core.alias("core"),
        core.alias("h1"),
        pl.concat_str(
            [
                pl.lit("Plan "),
                pl.col("activity").str.to_lowercase(),
                pl.lit(" in "),
                pl.col("place"),
                pl.lit(": routes, gear and local tips."),
            ]
        ).alias("meta"),
        pl.lit(2).alias("depth"),
        pl.lit(True).alias("branded"),
    )


def listing_members(content: pl.DataFrame) -> pl.DataFrame:
    """Products per subcategory listing, in listing order, with their page of the listing."""
    subcats = (
        content.filter(pl.col("page_type") == "subcategory")
        .with_columns((pl.int_range(pl.len()).over("topic")).alias("sub_index"))
        .select(
            "topic", "sub_index", pl.col("url").alias("listing_url"), pl.col("core").alias("listing_name")
        )
    )
    products = content.filter(pl.col("page_type") == "product").select("url", "core", "topic", "sub_index")
    return products.join(subcats, on=["topic", "sub_index"]).with_columns(
        (pl.int_range(pl.len()).over("listing_url") // LISTING_PAGE_SIZE + 1).alias("listing_page")
    )


def paginated_listings(content: pl.DataFrame, base: str) -> pl.DataFrame:
    """Page 2+ of each subcategory listing (rel=prev set: Screaming Frog reports them indexable)."""
    members = listing_members(content)
    pages = members.group_by("listing_url", "listing_name").agg(pl.col("listing_page").max().alias("last"))
    pages = pages.with_columns(pl.int_ranges(2, pl.col("last") + 1).alias("n")).explode("n").drop_nulls("n")
    return pages.select(
        (pl.col("listing_url") + pl.lit("page/") + pl.col("n").cast(pl.String) + pl.lit("/")).alias("url"),
        (pl.col("listing_name") + pl.lit(" - Page ") + pl.col("n").cast(pl.String)).alias("core"),
        pl.col("listing_name").alias("h1"),
        pl.when(pl.col("n") == 2)
        .then(pl.col("listing_url"))
        .otherwise(pl.col("listing_url") + pl.lit("page/") + (pl.col("n") - 1).cast(pl.String) + pl.lit("/"))
        .alias("rel_prev"),
        (pl.lit(2) + pl.col("n")).alias("depth"),
        pl.col("n").alias("listing_page"),
        pl.col("listing_url"),
    ).sort("url")
