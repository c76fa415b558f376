"""The editor's workbench on a bench site: the report and workbook a `bench_link_quality` run's plan gives,
checked in headless Chromium as an editor uses them.

For each set, on a copy of benchmarks/.data/quality/<set>/ (the topics clustered afresh, so that their labels
are today's), the marts, exports and report are made; then the table holds the report's size (against
2 MB), probabilities printed in scientific notation in the report's text and the workbook's cells, topic
labels that repeat, the headline cards, and the page view: the page it opens on and its links (with a
sentence and a marked anchor, or a placement), the links into the most linked target, and a decisions file
made with the buttons (3 accepted, 2 rejected) that the import's own checks take.

    python -m benchmarks.bench_report --sets hugodocs sample
"""

from __future__ import annotations

import argparse
import re
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import openpyxl

from benchmarks.bench_editor_review import SITES
from benchmarks.bench_link_quality import _materialize
from benchmarks.harness import DATA, print_table

STEPS = ["topic_clusters", "marts", "spreadsheet_exports", "html_report", "published_files"]
SCIENTIFIC = re.compile(r"\d\.?\d*e-\d+", re.IGNORECASE)


def workbench(name: str, out: Path) -> list[str]:
    from playwright.sync_api import sync_playwright

    from interlink_pipeline.core.graph.decision_files import read_decisions
    from interlink_pipeline.core.graph.decisions import decision_rows
    from interlink_pipeline_tests.helpers import chromium_path

    site, work = SITES[name], Path(tempfile.mkdtemp()) / name
    shutil.copytree(DATA / "quality" / name, work)
    warehouse = work / "warehouse.duckdb"
    with duckdb.connect(str(warehouse)) as con:  # no last clustering to carry labels from
        for table in ("ml.clusters", "ml.page_clusters"):
            con.execute(f"DELETE FROM {table} WHERE site = ?", [site])
    _materialize(warehouse, work / "inbox", site, STEPS, {})
    report, workbook = (
        next(work.rglob(f"exports/{site}/{file}")) for file in ("report.html", "interlink_plan.xlsx")
    )
    with duckdb.connect(str(warehouse), read_only=True) as con:
        labels = [
            label
            for (label,) in con.execute("SELECT label FROM ml.clusters WHERE site = ?", [site]).fetchall()
        ]
        pages = con.execute("SELECT page_id FROM staging.pages WHERE site = ?", [site]).pl()["page_id"]
    book = openpyxl.load_workbook(workbook, read_only=True)
    in_book = sum(  # a text in scientific notation, or a small number shown in Excel's General format
        bool(SCIENTIFIC.search(str(cell.value)))
        if isinstance(cell.value, str)
        else isinstance(cell.value, float) and 0 < abs(cell.value) < 1e-4 and cell.number_format == "General"
        for sheet in book.worksheets for row in sheet.iter_rows() for cell in row if cell.value is not None
    )  # fmt: skip
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1300, "height": 900}, accept_downloads=True)
        page.route(
            "**/*",
            lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort(),
        )
        page.goto(report.as_uri())
        text = page.locator("body").inner_text()
        cards = " · ".join(page.locator(".kpi").all_inner_texts()).replace("\n", " ")
        actions = page.locator("#drilldown-view li.action")
        opened_on, listed = page.locator("#drilldown-view .page-url").inner_text(), actions.count()
        placed = sum(1 for i in range(listed) if actions.nth(i).locator(".sentence mark").count())
        words = ["accept"] * 3 + ["reject"] * 2
        for i, word in enumerate(words[:listed]):  # on the links to add on it, then on those into it
            actions.nth(i).get_by_label(word, exact=True).check()
        page.locator("input[name=drilldown-mode][value=in]").check()
        into = actions.count()
        for i, word in enumerate(words[listed:][:into]):
            actions.nth(i).get_by_label(word, exact=True).check()
        with page.expect_download() as downloading:
            page.locator("#decisions-download").click()
        decided = out / f"decisions-{name}.csv"
        downloading.value.save_as(decided)
        browser.close()
    rows = decision_rows(site, read_decisions(decided, site), pages, decided.name, datetime.now(UTC))
    return [
        name,
        f"{report.stat().st_size / 1e6:.2f} MB",
        f"{len(SCIENTIFIC.findall(text))} / {in_book}",
        f"{len(labels) - len(set(labels))} of {len(labels)}",
        f"{opened_on}: {placed} of {listed} placed; {into} into it",
        f"{(rows['decision'] == 'accept').sum()} / {(rows['decision'] == 'reject').sum()}",
        cards,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["hugodocs", "sample"], choices=list(SITES))
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp())
    rows = [workbench(name, out) for name in args.sets]
    header = ["set", "report", "scientific (report / workbook)", "repeated labels", "page view",
              "decisions accepted / rejected", "headline cards"]  # fmt: skip
    print_table("The editor's workbench on the bench sites", rows, header)


if __name__ == "__main__":
    main()
