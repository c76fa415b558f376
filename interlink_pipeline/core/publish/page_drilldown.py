"""The report's page-by-page view, where an editor works: pick a page (by URL or title) and see the links
the plan adds on it — each in its sentence with the anchor marked, or in its named place — or the links it
gets from other pages, each with its target's in-links and clicks from home before and after, its
confidence, and accept / reject buttons whose choices download as a decisions file that `interlink
decisions import` takes; below, the in-content links into and out of the page today, with their anchors.

The report's template holds the view: its data as one JSON element, read by templates/drilldown.js, which
builds the view with DOM text nodes: a title, URL or sentence is never parsed as markup.
"""

from __future__ import annotations

import polars as pl

DRILL_DOWN_PAGES = 25_000  # pages one can pick: those the plan changes most first (the file stays a few MB)
PAGE_FIGURES = (  # page_scorecard columns shown as before → after
    ("clicks from home", "depth_before", "depth_after"),
    ("links in (navigation too)", "inlinks_before", "inlinks_after"),
    ("links out (navigation too)", "outlinks_before", "outlinks_after"),
)
# where a link not placed in a sentence goes, as the editor reads it
PLACEMENT_WORDS = {
    "related": "add to the page's related links",
    "home": "add to the home page's links to its sections",
    "listing": "add to the page's list",
}


def drilldown_data(
    pages: pl.DataFrame,
    links: pl.DataFrame,
    plan: pl.DataFrame,
    live: pl.DataFrame | None = None,
    site: str = "",
) -> dict:
    """The view's data: `pages` (page_id, url, title and the PAGE_FIGURES columns), the in-content links the
    site has (`links`: source_page_id, target_page_id, anchor), the plan (marts.link_opportunities rows in
    words: plan_table.plan_in_words, with each link's status and confidence) and the links of a plan a crawl
    has shown live (`live`: graph.live_links rows), with pages as row numbers. The page the plan adds most
    links to or on comes first (the view opens on it). Past DRILL_DOWN_PAGES, those pages are kept, and
    only the links between kept pages are listed (the counts stay whole)."""
    touched = pl.concat([plan["source_page_id"], plan["target_page_id"]]).value_counts(name="planned")
    kept = (
        pages.join(touched.rename({"source_page_id": "page_id"}), on="page_id", how="left")
        .with_columns(pl.col("planned").fill_null(0))
        .sort(["planned", "url"], descending=[True, False])
        .head(DRILL_DOWN_PAGES)
        .with_row_index("row")
    )
    row_of = kept.select("page_id", pl.col("row").cast(pl.Int64))

    def as_rows(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.join(row_of.rename({"page_id": "source_page_id", "row": "s"}), on="source_page_id").join(
            row_of.rename({"page_id": "target_page_id", "row": "t"}), on="target_page_id"
        )

    figures = [column for _, *columns in PAGE_FIGURES for column in columns]
    planned = as_rows(plan)
    return {
        "site": site,
        "pages": kept.select("url", pl.col("title").fill_null(""), *figures).rows(),
        "now": as_rows(links).select("s", "t", "anchor").rows(),
        "live": as_rows(live).select("s", "t").rows() if live is not None else [],
        # in the order templates/drilldown.js reads them
        "planned": planned.select(
            "s",
            "t",
            pl.col("anchor_text").fill_null(""),
            "why",
            "confidence_note",
            "probability",
            "status",
            "link_id",
            pl.col("sentence").fill_null(""),
            pl.col("placement").fill_null(""),
        ).rows(),
        "placements": PLACEMENT_WORDS,
        "figures": [name for name, *_ in PAGE_FIGURES],
        "shown": kept.height,
        "of": pages.height,
    }
