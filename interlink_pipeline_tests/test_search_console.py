"""The Search Console export (Performance > Pages): read as Search Console writes it in any language,
refused with a message that says what to do (the earlier registration kept), stored as raw.search_console,
and the pages in striking distance it names raised as the plan's targets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.graph.link_plan import striking_distance
from interlink_pipeline.core.graph.plan_options import PlanOptions
from interlink_pipeline.core.ingest.inbox import register_crawl, site_folder
from interlink_pipeline.core.ingest.search_console import read_search_console
from interlink_pipeline.core.urls import url_parts
from interlink_pipeline.core.warehouse.store import read_site
from interlink_pipeline_tests.helpers import LIGHT, failure_message, materialization_metadata, run_site

HOST = f"https://{LIGHT}"
# the Pages table as Search Console exports it (English), one page listed twice (a merged export)
PAGES_CSV = f"""Top pages,Clicks,Impressions,CTR,Position
{HOST}/treatment/neck-pain/,"1,204","23,118",5.21%,7.3
{HOST}/treatment/lower-back-pain/,310,"12,040",2.57%,11.8
{HOST}/conditions-scoliosis/,12,"1,010",1.19%,14.6
{HOST}/about/,0,15,0%,41
{HOST}/treatment/neck-pain/,3,40,7.5%,3.1
"""
# the same export from a Spanish account: decimal commas, percentages written "3,5 %"
PAGES_ES = f"""Páginas principales,Clics,Impresiones,CTR,Posición
{HOST}/treatment/neck-pain/,1.204,23.118,"5,21 %","7,3"
{HOST}/conditions-scoliosis/,12,1.010,"1,19 %","14,6"
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_an_export_is_read_as_search_console_writes_it_in_any_language(tmp_path):
    loaded = read_search_console(_write(tmp_path, "pages.csv", PAGES_CSV), LIGHT)
    rows = loaded.frame.select("url", "clicks", "impressions", "ctr", "position").rows()
    assert rows == [
        (f"{HOST}/treatment/neck-pain/", 1204, 23118, 0.0521, 7.3),
        (f"{HOST}/treatment/lower-back-pain/", 310, 12040, 0.0257, 11.8),
        (f"{HOST}/conditions-scoliosis/", 12, 1010, 0.0119, 14.6),
        (f"{HOST}/about/", 0, 15, 0.0, 41.0),
    ]
    assert loaded.warning == (
        "pages.csv: 1 rows list a page already listed; the row with the most impressions of each page is "
        "kept."
    )
    # rows of another host (a merged property) are left out and counted
    merged = PAGES_CSV + "https://shop.example.com/cart/,9,90,10%,2\n"
    mixed = read_search_console(_write(tmp_path, "merged.csv", merged), LIGHT)
    assert mixed.frame.height == 4 and mixed.warning.startswith(
        "merged.csv: 1 rows of another host are left out (row 6: https://shop.example.com/cart/); 1 rows list"
    )
    spanish = read_search_console(_write(tmp_path, "paginas.csv", PAGES_ES), LIGHT).frame
    assert spanish.select("clicks", "impressions", "ctr", "position").rows() == [
        (1204, 23118, pytest.approx(0.0521), 7.3),
        (12, 1010, pytest.approx(0.0119), 14.6),
    ]


BAD = {
    "another site's pages": (
        "Top pages,Clicks,Impressions,CTR,Position\nhttps://gohugo.io/a/,1,10,1%,3\nhttps://gohugo.io/b/,1,10,1%,4\n",
        "this Search Console export is not for site 'www.lightchiropractic.sg'",
    ),
    "an empty file": ("", "the file is empty (0 bytes)"),
    "a header and no rows": ("Top pages,Clicks,Impressions,CTR,Position\n", "there are no data rows"),
    "a position that is no number": (
        f"Top pages,Clicks,Impressions,CTR,Position\n{HOST}/treatment/neck-pain/,1,10,1%,n/a\n",
        "1 of 1 rows have no number for impressions or position (row 1",
    ),
    "no impressions column": (
        f"Top pages,Clicks\n{HOST}/treatment/neck-pain/,1\n",
        "Impressions",
    ),
    # issue 70: each of these was read as something else (1e5 as 15, a CTR of 1.5, positions kept)
    "impressions written 1e5": (
        f"Top pages,Clicks,Impressions,CTR,Position\n{HOST}/treatment/neck-pain/,1,1e5,1%,3\n",
        "1 of 1 rows have no number for impressions or position (row 1",
    ),
    "clicks written 1e5": (
        f"Top pages,Clicks,Impressions,CTR,Position\n{HOST}/a/,1,10,1%,3\n{HOST}/b/,1e5,10,1%,3\n",
        "1 of 2 rows have clicks that are no whole count (row 2",
    ),
    "a CTR of 150%": (
        f"Top pages,Clicks,Impressions,CTR,Position\n{HOST}/treatment/neck-pain/,1,10,150%,3\n",
        "1 of 1 rows have a CTR over 100% (row 1",
    ),
    "a position of -5": (
        f"Top pages,Clicks,Impressions,CTR,Position\n{HOST}/treatment/neck-pain/,1,10,1%,-5\n",
        "1 of 1 rows have an average position under 1 (the first result is position 1) (row 1",
    ),
    "a position of 0": (
        f"Top pages,Clicks,Impressions,CTR,Position\n{HOST}/treatment/neck-pain/,1,10,1%,0\n",
        "1 of 1 rows have an average position under 1",
    ),
    "the Queries table": (
        "Top queries,Clicks,Impressions,CTR,Position\nneck pain singapore,12,340,3.5%,6.1\n",
        "this is the Queries table of Search Console's Performance report (a query per row, no page). Export "
        "Search Console's Performance report, Pages table.",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_export_is_refused_and_the_earlier_one_kept(case, tmp_path, crawls):
    inbox = tmp_path / "inbox"
    crawl = crawls / "lightchiropractic/internal_all.csv"
    good = _write(tmp_path, "pages.csv", PAGES_CSV)
    register_crawl(inbox, LIGHT, crawl, search_console_src=good)
    folder = site_folder(inbox, LIGHT)
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    text, message = BAD[case]
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        register_crawl(
            inbox, LIGHT, crawl, search_console_src=_write(tmp_path, "search_console_new.csv", text)
        )
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before


def test_the_pages_in_striking_distance_are_those_ranked_5_to_20_with_the_median_impressions_or_more():
    pages = pl.DataFrame({"url": [f"{HOST}/{p}/" for p in "abcde"]})
    pages = pages.with_columns(url_parts(pages["url"])["url_key"])
    console = pl.DataFrame(
        {
            "url": [f"{HOST}/{p}/" for p in "abcde"],
            "impressions": [900, 100, 5000, 400, 800],
            "position": [3.0, 8.0, 12.0, 15.0, 40.0],
        }
    )
    # b, c, d are within 5-20; their median impressions (400) leaves b out; a ranks too well, e too far
    assert striking_distance(pages, console, PlanOptions()).tolist() == [False, False, True, True, False]
    assert striking_distance(pages, console.head(0), PlanOptions()) is None


def test_the_export_is_stored_and_the_plan_raises_the_pages_in_striking_distance(tmp_path, instance, crawls):
    inbox, warehouse = tmp_path / "inbox", tmp_path / "warehouse.duckdb"
    crawl = crawls / "lightchiropractic/internal_all.csv"
    register_crawl(inbox, LIGHT, crawl, crawls / "lightchiropractic/all_inlinks.csv")
    steps = ["raw_crawl", "raw_search_console"]
    result = run_site(warehouse, inbox, instance, LIGHT, steps=steps)
    assert result.success
    assert materialization_metadata(result, "raw_search_console")["source_file"].startswith("none")
    register_crawl(inbox, LIGHT, crawl, search_console_src=_write(tmp_path, "pages.csv", PAGES_CSV))
    result = run_site(warehouse, inbox, instance, LIGHT, steps=steps)
    stored = read_site(warehouse, "raw.search_console", LIGHT)
    assert stored.height == 4 and stored["impressions"].sum() == 23118 + 12040 + 1010 + 15
    metadata = materialization_metadata(result, "raw_search_console")
    assert metadata["impressions"] == 36183 and metadata["source_file"].endswith("search_console.csv")
    assert np.isclose(metadata["median_position"], 13.2)
    # pages the crawl never found are left out and counted; an export none of whose pages is crawled
    # (another property's, 3,000,000 rows in issue 70) is refused, and the stored rows stay
    uncrawled = PAGES_CSV + "".join(f"{HOST}/never-crawled-{i}/,0,5,0%,30\n" for i in range(3))
    register_crawl(inbox, LIGHT, crawl, search_console_src=_write(tmp_path, "pages.csv", uncrawled))
    result = run_site(warehouse, inbox, instance, LIGHT, steps=steps)
    assert read_site(warehouse, "raw.search_console", LIGHT).height == 4
    assert (
        "3 of its 7 pages are not in the crawl and are left out."
        in materialization_metadata(result, "raw_search_console")["warning"]
    )
    elsewhere = "".join(f"{HOST}/old-site/{i}/,0,5,0%,30\n" for i in range(5))
    register_crawl(
        inbox,
        LIGHT,
        crawl,
        search_console_src=_write(
            tmp_path, "pages.csv", "Top pages,Clicks,Impressions,CTR,Position\n" + elsewhere
        ),
    )
    failed = run_site(warehouse, inbox, instance, LIGHT, steps=steps)
    assert not failed.success and "none of its 5 pages is in the site's crawl" in failure_message(failed)
    assert read_site(warehouse, "raw.search_console", LIGHT).height == 4
