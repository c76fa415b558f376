"""A deterministic generator of realistic Screaming Frog exports with topical ground truth: the bundled
sample (data/sample/) and the generated sites of the tests and benchmarks. Not part of the pipeline.

The site is an outdoor-gear shop with a blog and "[Activity] in [Place]" guides, 20 topics (its words are
in words.json). Besides its pages, a crawl holds what real crawls hold: redirects, 404s, noindex and
canonicalised URLs, utm duplicates, paginated listings, images, and titles with a branding suffix in several
spellings. The All Inlinks export has header, navigation, footer and content links, and leaves some pages
orphaned or deep (guides beyond the hub's first page, products beyond a listing's first page).

Generation is vectorised (numpy + polars), so 1M-page sites take seconds; the same seed gives the same
bytes.
"""

from interlink_pipeline.sample.site import SAMPLE_HOST, SAMPLE_PAGES, GeneratedSite, generate_site, write_site

__all__ = ["SAMPLE_HOST", "SAMPLE_PAGES", "GeneratedSite", "generate_site", "write_site"]
