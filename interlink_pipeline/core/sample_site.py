"""A deterministic generator of realistic Screaming Frog exports with topical ground truth.

The site is an outdoor-gear shop with a blog and "[Activity] in [Place]" guides, 20 topics. Besides its
pages, a crawl holds what real crawls hold: redirects, 404s, noindex and canonicalised URLs, utm
duplicates, paginated listings, images, and titles with a branding suffix in several spellings. The
All Inlinks export has header, navigation, footer and content links, and leaves some pages orphaned or
deep (guides beyond the hub's first page, products beyond a listing's first page).

Generation is vectorised (numpy + polars), so 1M-page sites take seconds; the same seed gives the same
bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from interlink_pipeline.core.urls import stable_ids

SAMPLE_HOST = "www.alpinegear.example"
BRAND = "Alpine Gear"
SAMPLE_PAGES = 1700  # content pages; the crawl adds ~18% other rows, so ~2,000 rows

# slug, category name, (singular, plural) nouns, features, activities
TOPICS: tuple[tuple[str, str, tuple[tuple[str, str], ...], tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "hiking-boots",
        "Hiking Boots",
        (
            ("Hiking Boot", "Hiking Boots"),
            ("Walking Boot", "Walking Boots"),
            ("Trekking Boot", "Trekking Boots"),
        ),
        ("Waterproof", "Gore-Tex", "Leather", "Lightweight", "Mid-Cut", "Vibram-Soled"),
        ("Hiking", "Hillwalking", "Long-Distance Walking"),
    ),
    (
        "trail-running-shoes",
        "Trail Running Shoes",
        (
            ("Trail Running Shoe", "Trail Running Shoes"),
            ("Fell Running Shoe", "Fell Running Shoes"),
            ("Trail Shoe", "Trail Shoes"),
        ),
        ("Grippy", "Cushioned", "Zero-Drop", "Rock-Plate", "Lightweight", "Waterproof"),
        ("Trail Running", "Fell Running", "Ultra Running"),
    ),
    (
        "tents",
        "Tents",
        (
            ("Backpacking Tent", "Backpacking Tents"),
            ("Dome Tent", "Dome Tents"),
            ("Tunnel Tent", "Tunnel Tents"),
        ),
        ("2-Person", "3-Season", "4-Season", "Freestanding", "Ultralight", "Family"),
        ("Wild Camping", "Backpacking", "Festival Camping"),
    ),
    (
        "sleeping-bags",
        "Sleeping Bags",
        (
            ("Down Sleeping Bag", "Down Sleeping Bags"),
            ("Synthetic Sleeping Bag", "Synthetic Sleeping Bags"),
            ("Mummy Sleeping Bag", "Mummy Sleeping Bags"),
        ),
        ("-10°C", "3-Season", "Compact", "Lightweight", "Winter", "Summer"),
        ("Winter Camping", "Bivvying", "Hut-to-Hut Trekking"),
    ),
    (
        "sleeping-mats",
        "Sleeping Mats",
        (
            ("Inflatable Sleeping Pad", "Inflatable Sleeping Pads"),
            ("Foam Sleeping Mat", "Foam Sleeping Mats"),
            ("Self-Inflating Mat", "Self-Inflating Mats"),
        ),
        ("Insulated", "R-Value 4", "Wide", "Ultralight", "Short", "Double"),
        ("Car Camping", "Bikepacking", "Family Camping"),
    ),
    (
        "backpacks",
        "Backpacks",
        (
            ("Hiking Backpack", "Hiking Backpacks"),
            ("Daypack", "Daypacks"),
            ("Trekking Rucksack", "Trekking Rucksacks"),
        ),
        ("30L", "45L", "65L", "Ventilated", "Women's", "Rain-Covered"),
        ("Trekking", "Thru-Hiking", "Day Hiking"),
    ),
    (
        "rain-jackets",
        "Waterproof Jackets",
        (
            ("Rain Jacket", "Rain Jackets"),
            ("Hardshell Jacket", "Hardshell Jackets"),
            ("Packable Waterproof Shell", "Packable Waterproof Shells"),
        ),
        ("Gore-Tex", "3-Layer", "Breathable", "Hooded", "Packable", "Stretch"),
        ("Rainy-Day Walking", "Coastal Walking", "Hillwalking in Wet Weather"),
    ),
    (
        "insulated-jackets",
        "Insulated Jackets",
        (
            ("Down Jacket", "Down Jackets"),
            ("Puffer Jacket", "Puffer Jackets"),
            ("Synthetic Insulated Jacket", "Synthetic Insulated Jackets"),
        ),
        ("800-Fill", "Hooded", "Lightweight", "Expedition", "Packable", "Hydrophobic"),
        ("Winter Walking", "Alpine Starts", "Cold-Weather Hiking"),
    ),
    (
        "base-layers",
        "Base Layers",
        (
            ("Merino Base Layer", "Merino Base Layers"),
            ("Thermal Top", "Thermal Tops"),
            ("Thermal Leggings", "Thermal Leggings"),
        ),
        ("Merino Wool", "Quick-Dry", "Long-Sleeve", "Zip-Neck", "Seamless", "Midweight"),
        ("Layering for Winter", "Cold-Weather Running", "Winter Hiking"),
    ),
    (
        "camping-stoves",
        "Camping Stoves",
        (
            ("Gas Camping Stove", "Gas Camping Stoves"),
            ("Multi-Fuel Stove", "Multi-Fuel Stoves"),
            ("Integrated Stove System", "Integrated Stove Systems"),
        ),
        ("Compact", "Wind-Resistant", "Piezo-Ignition", "Lightweight", "Two-Burner", "Expedition"),
        ("Camp Cooking", "Backcountry Cooking", "Expedition Cooking"),
    ),
    (
        "cookware",
        "Camp Cookware",
        (
            ("Titanium Cooking Pot", "Titanium Cooking Pots"),
            ("Camping Cook Set", "Camping Cook Sets"),
            ("Insulated Camping Mug", "Insulated Camping Mugs"),
        ),
        ("Non-Stick", "Nesting", "Titanium", "Anodised", "Collapsible", "Two-Person"),
        ("Campfire Cooking", "Camp Coffee", "Trail Meals"),
    ),
    (
        "headlamps",
        "Headlamps",
        (
            ("Headlamp", "Headlamps"),
            ("Head Torch", "Head Torches"),
            ("Rechargeable Headlamp", "Rechargeable Headlamps"),
        ),
        ("400-Lumen", "USB-C", "Red-Light", "Waterproof", "Motion-Sensor", "Lightweight"),
        ("Night Hiking", "Night Running", "Caving"),
    ),
    (
        "trekking-poles",
        "Trekking Poles",
        (
            ("Trekking Pole", "Trekking Poles"),
            ("Walking Pole", "Walking Poles"),
            ("Carbon Trekking Pole", "Carbon Trekking Poles"),
        ),
        ("Folding", "Cork-Grip", "Telescopic", "Carbon", "Aluminium", "Shock-Absorbing"),
        ("Nordic Walking", "Steep Descents", "Scrambling"),
    ),
    (
        "climbing-ropes",
        "Climbing Ropes",
        (
            ("Dynamic Climbing Rope", "Dynamic Climbing Ropes"),
            ("Single Rope", "Single Ropes"),
            ("Half Rope", "Half Ropes"),
        ),
        ("9.5mm", "Dry-Treated", "60m", "70m", "Bi-Pattern", "Static"),
        ("Sport Climbing", "Trad Climbing", "Multi-Pitch Climbing"),
    ),
    (
        "climbing-shoes",
        "Climbing Shoes",
        (
            ("Climbing Shoe", "Climbing Shoes"),
            ("Bouldering Shoe", "Bouldering Shoes"),
            ("Sport Climbing Shoe", "Sport Climbing Shoes"),
        ),
        ("Aggressive", "Velcro", "Lace-Up", "Downturned", "Flat", "Soft"),
        ("Bouldering", "Indoor Climbing", "Slab Climbing"),
    ),
    (
        "harnesses",
        "Climbing Harnesses",
        (
            ("Climbing Harness", "Climbing Harnesses"),
            ("Sport Climbing Harness", "Sport Climbing Harnesses"),
            ("Alpine Harness", "Alpine Harnesses"),
        ),
        ("Adjustable", "Lightweight", "Padded", "Four-Loop", "Women's", "Kids'"),
        ("Via Ferrata", "Top-Rope Climbing", "Abseiling"),
    ),
    (
        "navigation",
        "GPS & Navigation",
        (
            ("Handheld GPS", "Handheld GPS Units"),
            ("Baseplate Compass", "Baseplate Compasses"),
            ("Map Case", "Map Cases"),
        ),
        ("Topographic", "Waterproof", "Sighting", "Solar", "Satellite", "Mirror"),
        ("Orienteering", "Map Reading", "Hill Navigation"),
    ),
    (
        "water-filters",
        "Water Filters",
        (
            ("Water Filter Bottle", "Water Filter Bottles"),
            ("Water Purifier", "Water Purifiers"),
            ("Squeeze Water Filter", "Squeeze Water Filters"),
        ),
        ("0.1-Micron", "UV", "Gravity", "Hollow-Fibre", "Pump", "Collapsible"),
        ("Canoe Touring", "Wilderness Trekking", "Desert Hiking"),
    ),
    (
        "ski-touring",
        "Ski Touring",
        (
            ("Touring Ski", "Touring Skis"),
            ("Climbing Skin", "Climbing Skins"),
            ("Touring Binding", "Touring Bindings"),
        ),
        ("Pin-Tech", "Lightweight", "Wide", "Carbon", "Freeride", "Race"),
        ("Ski Touring", "Ski Mountaineering", "Splitboarding"),
    ),
    (
        "avalanche-safety",
        "Avalanche Safety",
        (
            ("Avalanche Transceiver", "Avalanche Transceivers"),
            ("Avalanche Probe", "Avalanche Probes"),
            ("Snow Shovel", "Snow Shovels"),
        ),
        ("3-Antenna", "Carbon", "Aluminium", "Compact", "Telescopic", "Digital"),
        ("Off-Piste Skiing", "Freeride Skiing", "Winter Mountaineering"),
    ),
)
BRANDS = (
    "Ridgeline",
    "Nordwand",
    "Cairnworks",
    "Summit Forge",
    "Tarn & Fell",
    "Boulderline",
    "Glacier Co.",
    "Vantage",
    "Highroute",
    "Scree Labs",
    "Larchwood",
    "Cirque",
    "Alpenlicht",
    "Kestrel",
    "Moraine",
    "Basecamp Supply",
    "Corrie",
    "Ptarmigan",
    "Fjellborn",
    "Talus",
    "Arête",
    "Coldspring",
    "Wayfarer",
    "Pinnacle Works",
    "Trailsmith",
    "Northfall",
    "Granite Loop",
    "Skyline",
    "Bergmann",
    "Eastwall",
)
MODELS = (
    "Aero",
    "Apex",
    "Vector",
    "Ridge",
    "Storm",
    "Zenith",
    "Nimbus",
    "Flux",
    "Atlas",
    "Cirrus",
    "Helix",
    "Talon",
    "Orbit",
    "Vertex",
    "Summit",
    "Drift",
    "Ember",
    "Frost",
    "Glide",
    "Horizon",
    "Quest",
    "Rover",
    "Sierra",
    "Tundra",
    "Vista",
    "Wander",
    "Alto",
    "Boreal",
    "Comet",
    "Delta",
    "Echo",
    "Falcon",
    "Granite",
    "Harbor",
    "Icefall",
    "Juniper",
    "Kite",
    "Lumen",
    "Meridian",
    "Nova",
    "Onyx",
    "Pioneer",
    "Quartz",
    "Raven",
    "Solstice",
    "Tempest",
    "Umbra",
    "Voyager",
    "Willow",
    "Yukon",
)
MODEL_SUFFIXES = ("", " II", " III", " Pro", " Lite", " GTX", " Plus", " 2.0", " X", " Elite", " 45", " 30")
COLOURS = ("Red", "Blue", "Black", "Green", "Orange", "Grey", "Yellow", "Navy", "Olive", "Teal")
PLACES = (
    "Snowdonia",
    "the Lake District",
    "the Scottish Highlands",
    "the Peak District",
    "the Dolomites",
    "Chamonix",
    "the Pyrenees",
    "Patagonia",
    "Yosemite",
    "the Swiss Alps",
    "Fontainebleau",
    "Kalymnos",
    "the Tatras",
    "Lofoten",
    "Iceland",
    "the Rockies",
    "Zermatt",
    "Innsbruck",
    "the Picos de Europa",
    "the Sierra Nevada",
    "the Cairngorms",
    "Dartmoor",
    "the Brecon Beacons",
    "Glencoe",
    "the Isle of Skye",
    "Mallorca",
    "Madeira",
    "Corsica",
    "the Julian Alps",
    "Tenerife",
    "Jotunheimen",
    "Sarek",
    "Tasmania",
    "Fiordland",
    "the Annapurna Region",
    "the Atlas Mountains",
    "the High Tatras",
    "the Vosges",
    "the Black Forest",
    "the Jura",
    "Triglav",
    "Ben Nevis",
    "Cadair Idris",
    "the Yorkshire Dales",
    "Northumberland",
    "the Ardennes",
    "the Eifel",
    "Saxon Switzerland",
    "the Allgäu",
    "the Engadin",
    "Val Gardena",
    "Lake Garda",
    "Arco",
    "Siurana",
    "Margalef",
    "Céüse",
    "Verdon",
    "the Écrins",
    "Gran Paradiso",
    "Cortina",
)
GUIDE_THEMES = (
    "Best Routes",
    "A Beginner's Guide",
    "Gear Checklist",
    "Weekend Itinerary",
    "Where to Stay",
    "Best Time to Go",
    "Safety Tips",
    "Hidden Gems",
)
BLOG_TEMPLATES = (
    "How to Choose {plural} for {activity}",
    "The {n} Best {plural} of {year}, Tested in the Field",
    "{plural} Buying Guide: Fit, Weight and Features Explained",
    "How to Clean and Care for Your {plural}",
    "{plural} vs {other}: Which Is Right for You?",
    "Beginner's Guide to {activity}: Which {plural} You Need",
    "{n} Mistakes to Avoid When Buying {plural}",
    "Are {feature} {plural} Worth It?",
    "Packing List for {activity}: {plural} and More",
    "Expert Tips: Getting the Most from Your {plural}",
)
UTILITY_PAGES = (
    ("/about/", "About Us", "Who we are: outdoor specialists since 1998."),
    ("/contact/", "Contact Us", "Call, email or visit one of our stores."),
    ("/delivery/", "Delivery Information", "Free UK delivery on orders over £50."),
    ("/returns/", "Returns & Refunds", "60-day returns on unused gear."),
    ("/privacy-policy/", "Privacy Policy", "How we handle your personal data."),
)
LISTING_PAGE_SIZE = 24
GUIDES_HUB_SIZE = 30


@dataclass(frozen=True)
class GeneratedSite:
    host: str
    crawl: pl.DataFrame  # Internal: All export, Screaming Frog headers
    links: pl.DataFrame | None  # All Inlinks export
    truth: pl.DataFrame  # url, page_type, topic for every page meant to be linked


def generate_site(
    pages: int = SAMPLE_PAGES, *, seed: int = 7, host: str = SAMPLE_HOST, with_links: bool = True
) -> GeneratedSite:
    """A site with about `pages` linkable pages (plus the non-linkable rows a crawl also holds)."""
    if pages < 200:
        raise ValueError("generate at least 200 pages (the site has 20 topics with categories)")
    rng = np.random.default_rng(seed)
    base = f"https://{host}"
    content = _content_pages(pages, rng)
    content = content.with_columns((pl.lit(base) + pl.col("path")).alias("url"))
    listings = _paginated_listings(content, base)
    junk = _junk_rows(content, rng, base)
    links = _links(content, listings, base) if with_links else None
    crawl = _crawl_frame(content, listings, junk, links, rng)
    truth = content.select("url", "page_type", "topic")
    return GeneratedSite(host, crawl, links, truth)


def write_site(site: GeneratedSite, folder: Path) -> dict[str, Path]:
    """Write the exports as Screaming Frog does (UTF-8 with BOM, every field quoted)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"crawl": folder / "internal_all.csv", "truth": folder / "ground_truth.csv"}
    site.crawl.write_csv(paths["crawl"], include_bom=True, quote_style="always")
    site.truth.write_csv(paths["truth"])
    if site.links is not None:
        paths["links"] = folder / "all_inlinks.csv"
        site.links.write_csv(paths["links"], include_bom=True, quote_style="always")
    return paths


def _topic_frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "topic_index": list(range(len(TOPICS))),
            "topic": [t[0] for t in TOPICS],
            "category": [t[1] for t in TOPICS],
        }
    )


def _pick(values: tuple[str, ...] | list[str], index: np.ndarray) -> pl.Series:
    return pl.Series(list(values), dtype=pl.String).gather(pl.Series(index.astype(np.int64) % len(values)))


def _slug(expr: pl.Expr) -> pl.Expr:
    return (
        expr.str.to_lowercase()
        .str.replace_all("ê", "e")
        .str.replace_all("°", "")
        .str.replace_all(r"[^a-z0-9]+", "-")
        .str.strip_chars("-")
    )


def _content_pages(total: int, rng: np.random.Generator) -> pl.DataFrame:
    """Home, utility, category, subcategory, hub, product, blog and guide pages."""
    n_topics = len(TOPICS)
    fixed: list[dict] = [
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
    fixed += [
        {
            "path": path,
            "page_type": "utility",
            "topic": "",
            "core": title,
            "h1": title,
            "meta": meta,
            "depth": 1,
            "branded": True,
        }
        for path, title, meta in UTILITY_PAGES
    ]
    for slug, name, nouns, features, activities in TOPICS:
        fixed.append(
            {
                "path": f"/c/{slug}/",
                "page_type": "category",
                "topic": slug,
                "core": name,
                "h1": name,
                "meta": f"Browse {name.lower()} from top brands, with expert advice on choosing "
                f"{nouns[0][1].lower()} for {activities[0].lower()}.",
                "depth": 1,
                "branded": True,
            }
        )
        for sub in (f"Men's {name}", f"Women's {name}", f"{features[0]} {name}"):
            fixed.append(
                {
                    "path": f"/c/{slug}/",
                    "page_type": "subcategory",
                    "topic": slug,
                    "core": sub,
                    "h1": sub,
                    "meta": f"Shop {sub.lower()} for {activities[1].lower()} and {activities[2].lower()}.",
                    "depth": 2,
                    "branded": True,
                    "sub": sub,
                }
            )
    head = (
        pl.DataFrame(fixed, infer_schema_length=None)
        .with_columns(
            pl.when(pl.col("page_type") == "subcategory")
            .then(pl.col("path") + _slug(pl.col("sub")) + pl.lit("/"))
            .otherwise(pl.col("path"))
            .alias("path")
        )
        .drop("sub")
    )

    remaining = total - head.height
    n_guides = min(int(remaining * 0.13), n_topics * 3 * len(PLACES) * len(GUIDE_THEMES) // 2)
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
    flat_singular = [n[0] for t in TOPICS for n in t[2]]
    flat_plural = [n[1] for t in TOPICS for n in t[2]]
    flat_features = [f for t in TOPICS for f in t[3]]
    flat_activities = [a for t in TOPICS for a in t[4]]
    return {
        "topic": _pick([t[0] for t in TOPICS], topic_idx),
        "singular": _pick(flat_singular, topic_idx * 3 + noun_idx),
        "plural": _pick(flat_plural, topic_idx * 3 + noun_idx),
        "other": _pick(flat_plural, topic_idx * 3 + other_idx),
        "feature": _pick(flat_features, topic_idx * 6 + rng.integers(0, 6, topic_idx.size)),
        "activity": _pick(flat_activities, topic_idx * 3 + rng.integers(0, 3, topic_idx.size)),
    }


def _products(n: int, rng: np.random.Generator) -> pl.DataFrame:
    topic_idx = rng.integers(0, len(TOPICS), n)
    cols = _topic_columns(topic_idx, rng)
    frame = pl.DataFrame(
        {
            **cols,
            "brand": _pick(BRANDS, rng.integers(0, len(BRANDS), n)),
            "model": _pick(MODELS, rng.integers(0, len(MODELS), n)),
            "msuffix": _pick(MODEL_SUFFIXES, rng.integers(0, len(MODEL_SUFFIXES), n)),
            "colour": _pick(COLOURS, rng.integers(0, len(COLOURS), n)),
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
            + _slug(pl.concat_str([name, pl.lit(" "), pl.col("singular")]))
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
        (pl.lit("/blog/") + _slug(core) + pl.lit("-") + pl.col("serial").cast(pl.String) + pl.lit("/")).alias(
            "path"
        ),
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
    flat_activities = [(a, t) for t in range(len(TOPICS)) for a in TOPICS[t][4]]
    space = len(flat_activities) * len(PLACES) * len(GUIDE_THEMES)
    combo = rng.choice(space, size=n, replace=False)
    activity_idx = combo // (len(PLACES) * len(GUIDE_THEMES))
    place_idx = (combo // len(GUIDE_THEMES)) % len(PLACES)
    theme_idx = combo % len(GUIDE_THEMES)
    frame = pl.DataFrame(
        {
            "activity": _pick([a for a, _ in flat_activities], activity_idx),
            "topic": _pick([TOPICS[t][0] for _, t in flat_activities], activity_idx),
            "place": _pick(PLACES, place_idx),
            "theme": _pick(GUIDE_THEMES, theme_idx),
        }
    )
    # "[Activity] in [Place]" boilerplate: the templated pages that flood naive similarity lists
    core = pl.concat_str([pl.col("activity"), pl.lit(" in "), pl.col("place"), pl.lit(": "), pl.col("theme")])
    return frame.select(
        (
            pl.lit("/guides/")
            + _slug(
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


def _listing_members(content: pl.DataFrame) -> pl.DataFrame:
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


def _paginated_listings(content: pl.DataFrame, base: str) -> pl.DataFrame:
    """Page 2+ of each subcategory listing (rel=prev set: Screaming Frog reports them indexable)."""
    members = _listing_members(content)
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


def _junk_rows(content: pl.DataFrame, rng: np.random.Generator, base: str) -> pl.DataFrame:
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
            + _pick([t[1].lower().replace(" ", "+") for t in TOPICS], np.arange(max(3, n // 100)))
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
        (pl.lit(base + "/media/") + _slug(pl.col("h1")) + pl.lit(".jpg")).alias("url"),
        pl.lit("image").alias("kind"),
        pl.lit(None, dtype=pl.String).alias("target"),
    )
    return pl.concat([redirects, missing, noindex, sorted_listings, colour_params, utm, images])


def _links(content: pl.DataFrame, listings: pl.DataFrame, base: str) -> pl.DataFrame:
    """The All Inlinks export: site-wide header/navigation/footer links plus content links."""
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
    chrome = html_sources.join(site_wide, how="cross").select(
        pl.col("url").alias("source"), "target", "anchor", "position", "link_path", "alt"
    )
    members = _listing_members(content)
    by_type = {
        t: content.filter(pl.col("page_type") == t)
        for t in ("category", "subcategory", "product", "blog", "guide")
    }

    def content_links(frame: pl.DataFrame, path: str, position: str = "Content") -> pl.DataFrame:
        return frame.select(
            "source",
            "target",
            "anchor",
            pl.lit(position).alias("position"),
            pl.lit(path).alias("link_path"),
            pl.lit("").alias("alt"),
        )

    home_to_categories = by_type["category"].select(
        pl.lit(base + "/").alias("source"), pl.col("url").alias("target"), pl.col("core").alias("anchor")
    )
    category_to_subs = (
        by_type["subcategory"]
        .join(by_type["category"].select("topic", pl.col("url").alias("source")), on="topic")
        .select("source", pl.col("url").alias("target"), pl.col("core").alias("anchor"))
    )
    listing_to_products = members.select(
        pl.when(pl.col("listing_page") == 1)
        .then(pl.col("listing_url"))
        .otherwise(
            pl.col("listing_url") + pl.lit("page/") + pl.col("listing_page").cast(pl.String) + pl.lit("/")
        )
        .alias("source"),
        pl.col("url").alias("target"),
        pl.col("core").alias("anchor"),
    )
    listing_pagination = listings.select(
        pl.col("rel_prev").alias("source"),
        pl.col("url").alias("target"),
        pl.concat_str([pl.lit("Page "), pl.col("listing_page").cast(pl.String)]).alias("anchor"),
    )
    breadcrumbs = members.select(
        pl.col("url").alias("source"),
        pl.col("listing_url").alias("target"),
        pl.col("listing_name").alias("anchor"),
    )
    # "related products": the next two products of the same listing
    related = (
        members.with_columns(
            pl.col("url").shift(-1).over("listing_url").alias("next1"),
            pl.col("core").shift(-1).over("listing_url").alias("next1_name"),
        )
        .filter(pl.col("next1").is_not_null())
        .select(
            pl.col("url").alias("source"),
            pl.col("next1").alias("target"),
            pl.col("next1_name").alias("anchor"),
        )
    )
    blog_index = (
        by_type["blog"]
        .head(12)
        .select(
            pl.lit(base + "/blog/").alias("source"),
            pl.col("url").alias("target"),
            pl.col("core").alias("anchor"),
        )
    )
    blog_to_category = (
        by_type["blog"]
        .join(
            by_type["category"].select(
                "topic", pl.col("url").alias("target"), pl.col("core").alias("anchor")
            ),
            on="topic",
        )
        .select(pl.col("url").alias("source"), "target", "anchor")
    )
    guides_hub = (
        by_type["guide"]
        .head(GUIDES_HUB_SIZE)
        .select(
            pl.lit(base + "/guides/").alias("source"),
            pl.col("url").alias("target"),
            pl.col("core").alias("anchor"),
        )
    )
    links = pl.concat(
        [
            chrome,
            content_links(home_to_categories, "//main/section[2]/div/a"),
            content_links(category_to_subs, "//main/ul[@class='subcategories']/li/a"),
            content_links(listing_to_products, "//main/ul[@class='products']/li/a"),
            content_links(listing_pagination, "//main/nav[@class='pagination']/a", "Navigation"),
            content_links(breadcrumbs, "//nav[@class='breadcrumb']/a", "Navigation"),
            content_links(related, "//aside[@class='related']/a", "Sidebar"),
            content_links(blog_index, "//main/article/h2/a"),
            content_links(blog_to_category, "//main/article/p/a"),
            content_links(guides_hub, "//main/ul/li/a"),
        ]
    ).filter(pl.col("source") != pl.col("target"))
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


def _crawl_frame(
    content: pl.DataFrame,
    listings: pl.DataFrame,
    junk: pl.DataFrame,
    links: pl.DataFrame | None,
    rng: np.random.Generator,
) -> pl.DataFrame:
    n = content.height
    suffixes = np.array([f" | {BRAND}", f" - {BRAND}", f" – {BRAND}"])
    suffix = suffixes[rng.choice(3, size=n, p=[0.6, 0.3, 0.1])]
    bare = (rng.random(n) < 0.04) & (content["page_type"] == "blog").to_numpy()  # title is just the brand
    pages = content.with_columns(
        pl.when(pl.Series(bare))
        .then(pl.lit(BRAND))
        .when(pl.col("branded"))
        .then(pl.col("core") + pl.Series(suffix))
        .otherwise(pl.col("core"))
        .alias("title"),
        pl.lit(None, dtype=pl.String).alias("rel_prev"),
        pl.lit("text/html; charset=UTF-8").alias("content_type"),
        pl.lit(200).alias("status_code"),
        pl.lit(None, dtype=pl.String).alias("canonical"),
        pl.lit(None, dtype=pl.String).alias("robots"),
        pl.lit(None, dtype=pl.String).alias("redirect"),
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
    kind = pl.col("kind")
    targets = content.select(
        pl.col("url").alias("target"), pl.col("core").alias("title_src"), "h1", "meta", "depth"
    )
    junk_rows = junk.join(targets, on="target", how="left").select(
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
    rows = pl.concat([pages, listing_rows, junk_rows], how="vertical_relaxed")
    # interleave as a crawler's breadth-first order would, deterministically
    rows = (
        rows.with_columns(pl.Series("order", rng.permutation(rows.height)))
        .sort(["depth", "order"])
        .drop("order")
    )
    if links is not None:
        inlinks = links.group_by("Destination").agg(
            pl.len().alias("inlinks"), pl.col("Source").n_unique().alias("unique_inlinks")
        )
        rows = rows.join(inlinks, left_on="url", right_on="Destination", how="left")
    else:
        rows = rows.with_columns(
            pl.lit(None, dtype=pl.UInt32).alias("inlinks"),
            pl.lit(None, dtype=pl.UInt32).alias("unique_inlinks"),
        )
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
