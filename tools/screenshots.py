"""The manual's screenshots (docs/images/), made again from the bundled sample so that they never go stale:
`make screenshots` runs the demo into a temporary folder, opens its report in headless Chromium and shoots
the header and cards, the page-by-page view, the topics table and the plan table; the workbook's `to_do`
sheet is drawn from the file's own cells (values, fills, links, the decision dropdown) as a spreadsheet
shows it, since no spreadsheet application runs here.

    python tools/screenshots.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import html
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from interlink_pipeline.sample import SAMPLE_HOST  # noqa: E402
from interlink_pipeline_tests.helpers import chromium_path  # noqa: E402

WIDTH = 1300
SHEET_ROWS = 18  # the to_do rows drawn


def run_demo(folder: Path) -> Path:
    """The sample through every step into `folder`; its exports folder."""
    home = folder / "home"
    home.mkdir()
    shutil.copyfile(ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "INTERLINK_WAREHOUSE": str(folder / "warehouse" / "interlink.duckdb"),
        "INTERLINK_INBOX": str(folder / "inbox"),
    }
    subprocess.run([str(Path(sys.executable).parent / "interlink"), "demo"], env=env, check=True)
    return folder / "warehouse" / "exports" / SAMPLE_HOST


def sheet_as_html(workbook: Path, sheet: str, rows: int) -> str:
    """The first `rows` rows of a sheet as a spreadsheet shows them: header, fills, links, the dropdown."""
    import openpyxl

    book = openpyxl.load_workbook(workbook)
    cells = book[sheet]
    rules = cells.data_validations.dataValidation
    dropdowns = {str(rule.sqref).split(":")[0].rstrip("0123456789") for rule in rules}
    lines = []
    for r, row in enumerate(cells.iter_rows(max_row=rows + 1), start=1):
        tds = []
        for cell in row:
            value = "" if cell.value is None else cell.value
            text = f"{value:.1%}" if cell.number_format == "0.0%" and isinstance(value, float) else str(value)
            fill = cell.fill.fgColor.rgb if cell.fill and cell.fill.fill_type == "solid" else None
            style = f' style="background:#{str(fill)[-6:]}"' if fill and r > 1 else ""
            shown = html.escape(text[:70] + ("…" if len(text) > 70 else ""))
            if cell.hyperlink is not None:
                shown = f'<u style="color:#0563c1">{shown}</u>'
            if r > 1 and cell.column_letter in dropdowns:
                shown += ' <span class="drop">▾</span>'
            tds.append(f"<{'th' if r == 1 else 'td'}{style}>{shown}</{'th' if r == 1 else 'td'}>")
        lines.append("<tr>" + "".join(tds) + "</tr>")
    tabs = "".join(
        f'<span class="{"on" if tab == sheet else ""}">{html.escape(tab)}</span>' for tab in book.sheetnames
    )
    return f"""<!doctype html><meta charset="utf-8"><style>
body {{ font: 12px Calibri, Arial, sans-serif; margin: 0; }} table {{ border-collapse: collapse; }}
th {{ background: #e8eef4; font-weight: bold; }} th, td {{ border: 1px solid #d4d4d4; padding: 2px 6px;
white-space: nowrap; }} .drop {{ color: #777; }} .tabs span {{ display: inline-block; padding: 3px 12px;
border: 1px solid #ccc; margin-right: 2px; }} .tabs .on {{ background: #fff; border-top: 2px solid #217346;
font-weight: bold; }} .tabs {{ background: #f3f3f3; padding: 4px; }}
</style><table>{"".join(lines)}</table><div class="tabs">{tabs}</div>"""


def shoot(exports: Path, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    shots = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": WIDTH, "height": 900})
        page.goto((exports / "report.html").as_uri())
        page.wait_for_selector("#depth-chart")

        def element(selector: str, name: str, height: int = 1000) -> None:
            """The element's top, at most `height` pixels of it."""
            found = page.locator(selector).first
            found.scroll_into_view_if_needed()
            box = found.bounding_box()  # in the viewport: the page's own coordinates add its scroll
            top = box["y"] + page.evaluate("window.scrollY")
            clip = {**box, "y": top, "height": min(box["height"], height)}
            page.screenshot(path=str(out / name), clip=clip, full_page=True)
            shots.append(out / name)

        page.screenshot(path=str(out / "report.png"), clip={"x": 0, "y": 0, "width": WIDTH, "height": 900})
        shots.append(out / "report.png")
        element("#topics", "report_topics.png")
        page.locator("#plan_wrapper input[type=search]").fill("orphan rescue")
        element("#plan_wrapper", "report_plan_table.png")
        actions = page.locator("#drilldown-view li.action")
        actions.nth(0).get_by_label("accept", exact=True).check()
        actions.nth(1).get_by_label("reject", exact=True).check()
        element("#drilldown", "report_page_view.png")
        sheet = out / "workbook_to_do.html"
        sheet.write_text(sheet_as_html(exports / "interlink_plan.xlsx", "to_do", SHEET_ROWS))
        page.goto(sheet.as_uri())
        page.locator("body").screenshot(path=str(out / "workbook_to_do.png"))
        shots.append(out / "workbook_to_do.png")
        sheet.unlink()
        browser.close()
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        exports = run_demo(Path(folder))
        for shot in shoot(exports, args.out):
            print(f"wrote {shot.relative_to(ROOT) if shot.is_relative_to(ROOT) else shot}")


if __name__ == "__main__":
    main()
