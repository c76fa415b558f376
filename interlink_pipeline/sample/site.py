"""A generated site: its crawl export, its All Inlinks export and the topic of every page, and how they are
written to disk."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from interlink_pipeline.sample.crawl import crawl_export, junk_rows
from interlink_pipeline.sample.links import inlinks_export
from interlink_pipeline.sample.pages import content_pages, paginated_listings

SAMPLE_HOST = "www.alpinegear.example"
SAMPLE_PAGES = 1700  # content pages; the crawl adds ~18% other rows, so ~2,000 rows


MIN_PAGES = 200  # 20 topics, each with categories and pages
# the files write_site writes, by kind
SITE_FILES = {"crawl": "internal_all.csv", "truth": "ground_truth.csv", "links": "all_inlinks.csv"}
# memory a generated site takes while it is made and written (measured: 0.65 GB at 100,000 pages, 1.38 GB at
# 300,000, links included)
GENERATION_BASE_BYTES, GENERATION_BYTES_PER_PAGE = 300_000_000, 4_000


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
    if pages < MIN_PAGES:
        raise ValueError(f"generate at least {MIN_PAGES} pages (the site has 20 topics with categories)")
    rng = np.random.default_rng(seed)
    base = f"https://{host}"
    content = content_pages(pages, rng)
    content = content.with_columns((pl.lit(base) + pl.col("path")).alias("url"))
    listings = paginated_listings(content, base)
    junk = junk_rows(content, rng, base)
    # the crawler counts every page's in-links whether or not the user exports them
    links = inlinks_export(content, listings, base)
    crawl = crawl_export(content, listings, junk, links, rng)
    truth = content.select("url", "page_type", "topic")
    return GeneratedSite(host, crawl, links if with_links else None, truth)


def write_site(site: GeneratedSite, folder: Path) -> dict[str, Path]:
    """Write the exports as Screaming Frog does (UTF-8 with BOM, every field quoted)."""
    folder.mkdir(parents=True, exist_ok=True)
    kinds = [kind for kind in SITE_FILES if kind != "links" or site.links is not None]
    paths = {kind: folder / SITE_FILES[kind] for kind in kinds}
    site.crawl.write_csv(paths["crawl"], include_bom=True, quote_style="always")
    site.truth.write_csv(paths["truth"])
    if site.links is not None:
        site.links.write_csv(paths["links"], include_bom=True, quote_style="always")
    return paths
