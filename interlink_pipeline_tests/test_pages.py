"""Cleaning a crawl into pages: real crawls, the generated sample against its truth, options."""

import polars as pl
import pytest

from interlink_pipeline.core.ingest.branding import detect_brand
from interlink_pipeline.core.ingest.cleaning_options import CleaningOptions
from interlink_pipeline.core.ingest.crawl_exports import read_crawl_export
from interlink_pipeline.core.ingest.pages import clean_pages
from interlink_pipeline.core.warehouse.contract import validate
from interlink_pipeline.core.warehouse.vocabularies import EXCLUSION_REASONS
from interlink_pipeline.sample import SAMPLE_HOST
from interlink_pipeline_tests.helpers import LIGHT, NUTRI, SAMPLE_DIR, SF_HEADER, sf_row, write_export

SITE = "www.example.com"


def _clean(tmp_path, rows, options=None, header=SF_HEADER):
    raw = read_crawl_export(write_export(tmp_path / "internal_html.csv", header, rows), SITE).frame
    return raw, clean_pages(raw, SITE, options)


def _assert_partition(raw, cleaned):
    """Every raw row is in exactly one of the two tables, and both match their schemas."""
    kept_rows = set(cleaned.pages["row_number"])
    dropped_rows = set(cleaned.excluded["row_number"])
    assert not kept_rows & dropped_rows
    assert kept_rows | dropped_rows == set(raw["row_number"])
    assert validate("staging.pages", cleaned.pages).passed
    assert validate("staging.excluded_pages", cleaned.excluded).passed


def test_lightchiropractic(crawls):
    raw = read_crawl_export(crawls / "lightchiropractic/internal_all.csv", LIGHT).frame
    cleaned = clean_pages(raw, LIGHT)
    _assert_partition(raw, cleaned)
    # 102 indexable HTML pages, of which 5 are /blog/page/N/ listings
    assert cleaned.pages.height == 97
    reasons = dict(cleaned.excluded.group_by("reason").len().iter_rows())
    assert reasons == {"not_html": 233, "redirect": 6, "paginated": 5, "noindex": 3}
    assert (
        cleaned.excluded.filter(pl.col("reason") == "paginated")["crawled_url"]
        .str.contains("/blog/page/")
        .all()
    )
    assert cleaned.branding == "light chiropractic"  # " - Light Chiropractic" and " | Light Chiropractic"
    assert cleaned.home_url == "https://www.lightchiropractic.sg/"
    titles = dict(cleaned.pages.select("url", "title").iter_rows())
    assert titles["https://www.lightchiropractic.sg/"] == "Top Rated Singapore Chiropractor"
    assert not cleaned.pages["title"].drop_nulls().str.contains("(?i)light chiropractic$").any()
    redirect = cleaned.excluded.filter(pl.col("reason") == "redirect")["detail"][0]
    assert redirect.startswith("status 30") and "→ https://" in redirect


def test_nutrisport_utm_duplicates_and_h1_fallback(crawls):
    raw = read_crawl_export(crawls / "nutrisport/internal_html.csv", NUTRI).frame
    cleaned = clean_pages(raw, NUTRI)
    _assert_partition(raw, cleaned)
    truth = pl.read_csv(crawls / "nutrisport/ground_truth_url_sections.csv")
    fate = truth.join(cleaned.excluded, left_on="Address", right_on="crawled_url", how="left")
    with_query = fate.filter(pl.col("page_type") == "product-with-query")
    # utm links to products that were also crawled clean: duplicates of the clean URL, not new pages
    assert with_query.filter(pl.col("reason") == "duplicate_url").height == 81
    detail = with_query.filter(pl.col("reason") == "duplicate_url")["detail"][0]
    assert detail.startswith("same page as https://nutrisport.es/") and "utm_" not in detail
    # four pages were crawled only with utm parameters: kept, under their clean URL
    kept_utm = cleaned.pages.filter(pl.col("crawled_url").str.contains("utm_"))
    assert kept_utm.height == 4 and not kept_utm["url"].str.contains(r"\?").any()
    assert cleaned.branding == "nutrisport"
    # blog posts are titled just "Nutrisport": their text comes from the H1
    blog = cleaned.pages.filter(pl.col("url").str.contains("/web/"))
    assert blog.filter(pl.col("text_source") == "h1").height >= 330
    assert not cleaned.pages["text"].str.to_lowercase().is_in(["nutrisport"]).any()
    assert cleaned.excluded.filter(pl.col("reason") == "canonicalised").height == 10
    assert set(cleaned.excluded["reason"]) <= set(EXCLUSION_REASONS)
    assert cleaned.pages.height == 566


def test_generated_sample_recovers_its_ground_truth():
    raw = read_crawl_export(SAMPLE_DIR / "internal_all.csv", SAMPLE_HOST).frame
    cleaned = clean_pages(raw, SAMPLE_HOST)
    _assert_partition(raw, cleaned)
    truth = pl.read_csv(SAMPLE_DIR / "ground_truth.csv")
    assert sorted(cleaned.pages["url"]) == sorted(truth["url"])
    reasons = set(cleaned.excluded["reason"])
    assert {
        "redirect",
        "client_error",
        "noindex",
        "canonicalised",
        "duplicate_url",
        "not_html",
        "paginated",
    } <= reasons
    assert cleaned.branding == "alpine gear"
    assert not cleaned.pages["title"].drop_nulls().str.contains("Alpine Gear$").any()


def test_detect_brand_needs_a_real_share():
    titles = pl.Series(["Tents | Acme", "Boots - Acme", "Acme", "Stoves | ACME", "Random page", "Other"])
    assert detect_brand(titles) == "acme"
    assert detect_brand(pl.Series(["A | x", "B | y", "C | z", "D | w"])) is None
    assert detect_brand(pl.Series([None, ""], dtype=pl.String)) is None


def test_branding_override_and_off(tmp_path):
    rows = [sf_row(f"https://www.example.com/p{i}", f"Product {i} ~ ShopName") for i in range(5)]
    rows.insert(0, sf_row("https://www.example.com/", "ShopName Home", depth="0"))
    _, auto = _clean(tmp_path, rows)
    assert auto.pages.filter(~pl.col("is_home"))["title"].to_list() == [f"Product {i}" for i in range(5)]
    _, off = _clean(tmp_path, rows, CleaningOptions(branding_pattern=""))
    assert off.pages["title"][1] == "Product 0 ~ ShopName" and off.branding is None
    _, custom = _clean(tmp_path, rows, CleaningOptions(branding_pattern=r"^Product\s+"))
    assert custom.pages["title"][1] == "0 ~ ShopName"


def test_exclusion_reasons_and_precedence(tmp_path):
    u = "https://www.example.com"
    rows = [
        sf_row(f"{u}/", "Home", depth="0"),
        sf_row("https://other.example.com/x", "Elsewhere"),
        sf_row(f"{u}/a.pdf", "", content_type="application/pdf"),
        sf_row(f"{u}/gone", "Gone", status="404", indexability="Non-Indexable", reason="Client Error"),
        sf_row(f"{u}/boom", "Boom", status="503"),
        sf_row(f"{u}/timeout", "", status="0", indexability="Non-Indexable", reason="No Response"),
        sf_row(f"{u}/private", "Private", indexability="Non-Indexable", reason="noindex"),
        sf_row(f"{u}/blocked", "", indexability="Non-Indexable", reason="Blocked by robots.txt"),
        sf_row(f"{u}/dup-canonical", "Dup", canonical=f"{u}/tents"),
        sf_row(f"{u}/tents", "Tents", canonical=f"{u}/tents"),
        sf_row(f"{u}/tents/", "Tents again"),
        sf_row(f"{u}/tents?utm_source=mail", "Tents via mail"),
        sf_row(f"{u}/tents?page=2", "Tents page 2"),
        sf_row(f"{u}/search?q=tent", "Search"),
        sf_row(f"{u}/empty", ""),
        sf_row("javascript:void(0)", "Not a URL"),
    ]
    raw, cleaned = _clean(tmp_path, rows)
    _assert_partition(raw, cleaned)
    by_url = dict(cleaned.excluded.select("crawled_url", "reason").iter_rows())
    assert by_url == {
        "https://other.example.com/x": "other_host",
        f"{u}/a.pdf": "not_html",
        f"{u}/gone": "client_error",
        f"{u}/boom": "server_error",
        f"{u}/timeout": "no_response",
        f"{u}/private": "noindex",
        f"{u}/blocked": "blocked_by_robots",
        f"{u}/dup-canonical": "canonicalised",
        f"{u}/tents/": "duplicate_url",
        f"{u}/tents?utm_source=mail": "duplicate_url",
        f"{u}/tents?page=2": "paginated",
        f"{u}/search?q=tent": "parameter_url",
        f"{u}/empty": "no_text",
        "javascript:void(0)": "invalid_url",
    }
    assert cleaned.pages["url"].to_list() == [f"{u}/", f"{u}/tents"]


def test_keep_query_params_and_parameter_urls(tmp_path):
    rows = [
        sf_row("https://www.example.com/", "Home", depth="0"),
        sf_row("https://www.example.com/item?id=7", "Item 7"),
        sf_row("https://www.example.com/item?id=7&sort=asc", "Item 7 sorted"),
    ]
    _, default = _clean(tmp_path, rows)
    assert default.pages.height == 1
    _, kept = _clean(tmp_path, rows, CleaningOptions(keep_query_params=("id",)))
    assert kept.pages["url"].to_list() == ["https://www.example.com/", "https://www.example.com/item?id=7"]
    _, everything = _clean(tmp_path, rows, CleaningOptions(drop_parameter_urls=False))
    assert everything.pages.height == 3


@pytest.mark.parametrize(
    ("source", "expected", "used"),
    [
        ("title", "Tents", "title"),
        ("h1", "All tents", "h1"),
        ("meta_description", "Every tent we sell", "meta_description"),
        ("title_h1", "Tents. All tents", "title_h1"),
        ("title_h1_meta", "Tents. All tents. Every tent we sell", "title_h1_meta"),
    ],
)
def test_text_sources(tmp_path, source, expected, used):
    rows = [sf_row("https://www.example.com/", "Tents", h1="All tents", meta="Every tent we sell", depth="0")]
    _, cleaned = _clean(tmp_path, rows, CleaningOptions(text_source=source, branding_pattern=""))
    assert cleaned.pages.select("text", "text_source").row(0) == (expected, used)


def test_text_falls_back_when_title_is_only_the_brand(tmp_path):
    rows = [sf_row(f"https://www.example.com/{i}", "Brand", h1=f"Guide {i}") for i in range(4)]
    rows.insert(0, sf_row("https://www.example.com/", "Home | Brand", depth="0"))
    _, cleaned = _clean(tmp_path, rows)
    posts = cleaned.pages.filter(~pl.col("is_home"))
    assert posts["title"].is_null().all()
    assert posts.select("text", "text_source").rows() == [(f"Guide {i}", "h1") for i in range(4)]


def test_home_page_fallback_when_root_is_missing(tmp_path):
    rows = [
        sf_row("https://www.example.com/shop/tents", "Tents", depth="2"),
        sf_row("https://www.example.com/shop/", "Shop", depth="1"),
        sf_row("https://www.example.com/shop/boots", "Boots", depth="2"),
    ]
    _, cleaned = _clean(tmp_path, rows)
    assert cleaned.home_url == "https://www.example.com/shop/"
    assert cleaned.pages["is_home"].sum() == 1


def test_other_crawler_without_indexability_columns(tmp_path):
    header = ["URL", "Title", "Canonical", "Meta Robots"]
    rows = [
        ["https://www.example.com/", "Home", "", ""],
        ["https://www.example.com/a", "A", "https://www.example.com/b", ""],
        ["https://www.example.com/b", "B", "", ""],
        ["https://www.example.com/c", "C", "", "noindex,follow"],
    ]
    raw, cleaned = _clean(tmp_path, rows, header=header)
    _assert_partition(raw, cleaned)
    assert dict(cleaned.excluded.select("crawled_url", "reason").iter_rows()) == {
        "https://www.example.com/a": "canonicalised",
        "https://www.example.com/c": "noindex",
    }
