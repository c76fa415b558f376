"""Spreadsheet exports: CSV and XLSX that open safely and readably in Excel, LibreOffice and Sheets.

A cell that starts with = + - @ (or a tab or carriage return) is a formula to a spreadsheet — a page title
such as "=HYPERLINK(…)" from a crawled site would run when an analyst opens the file. Such text is prefixed
with an apostrophe (OWASP's advice), which spreadsheets show as the literal text.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from interlink_pipeline.core.files import replaced_atomically
from interlink_pipeline.core.numbers import SIGNIFICANT_DIGITS

FORMULA_START = r"^[=+\-@\t\r]"  # what makes a spreadsheet read text as a formula
XLSX_MAX_ROWS = 1_048_575  # Excel's sheet limit, less the header row
XLSX_MAX_CELL_CHARS = 32_767  # the most characters a workbook cell holds
MAX_COLUMN_WIDTH = 60
DIGESTS_FILE = ".export_digests.json"  # what each file was written from, beside the files

# what the workbook's read_me sheet says of each sheet and of the columns people ask about
READ_ME = {
    "read_me": "This sheet: what the others hold, and how to send your decisions back.",
    "link_plan": "Every link the plan adds, one row each, with its standing decision. Write accept or reject "
    "in `decision` (a dropdown), here or in to_do or new_since_review, and import the file: interlink "
    "decisions import interlink_plan.xlsx --site SITE. The next plan keeps what you accepted and never plans "
    "what you rejected. To decide in bulk, filter a sheet (source_url: a page's links; target_url: the links "
    "into a page; how or placement: a list's additions) and fill the first decision down.",
    "to_do": "The same links as a work list, page by page (every other page shaded), in reading order on the "
    "page; rejected links left out. `how` says where each goes, `status` what was decided; a decision and "
    "note you write here stand over link_plan's for the same link.",
    "similar_pages": "Each page's most similar pages (by the embeddings of their text).",
    "topics": "The topics the pages were grouped into, with their size and depth.",
    "new_since_review": "The links planned since your last decisions, newest first, each with why it is new "
    "(added_because). Decide them here (the workbook's import reads every sheet with a decision column), "
    "or fill in new_since_review.csv and import it. A page you reviewed takes at most "
    "new_links_per_reviewed_page new links until you decide them.",
    "changes_since_last_run": "Links added and removed since the last plan, and why.",
    "for_an_editor": "Pages the plan left for you rather than link them anyway: an orphan or a page too "
    "deep whose related pages could not link it (its best candidate sources and why each was passed over: "
    "write a link by hand, or give the page a place in a section), and near-duplicate orphans (merge, "
    "redirect or canonicalise one of the two).",
    "anchor_text": "The words to link: a phrase the source's text already uses (in `sentence`), else the "
    "target's name for the page's related links.",
    "confidence": "high / medium / low: a topical link's by the site's own ranker; a hub's, a section's or a "
    "structural link's by how often links of its kind were the site's editors' own in the backtest (the "
    "plan rebuilt without a fifth of them); not scored: no probability and not measured.",
    "confidence_note": "The confidence in a sentence, with what the backtest measured of it.",
    "probability": "The site's ranker's estimate that its editors would write the link.",
    "target_inlinks": "In-links the target has before the plan (navigation too): fewer means the link "
    "matters more.",
    "in_navigation": "The source already links the target in a menu or sidebar; the plan adds it in the "
    "text.",
    "reason": "hub, section, topical, orphan-rescue, component-bridge, depth-shortcut: why the link "
    "is planned; a weak structural link is one no page is a likely place for.",
}


def neutralise(frame: pl.DataFrame) -> pl.DataFrame:
    """Text cells that a spreadsheet would read as a formula, prefixed with an apostrophe."""
    text = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    return frame.with_columns(
        pl.when(pl.col(name).str.contains(FORMULA_START))
        .then("'" + pl.col(name))
        .otherwise(pl.col(name))
        .alias(name)
        for name in text
    )


def _printable(frame: pl.DataFrame) -> pl.DataFrame:
    """Lists and other nested values as text (neither CSV nor XLSX holds them), and floats to 4 significant
    digits: 32-bit ones first as the decimals they print as (widened as they are, 0.0931 would show as
    0.09309999644756317). The warehouse keeps full precision."""
    nested = [n for n, t in frame.schema.items() if isinstance(t, (pl.List, pl.Array, pl.Struct))]
    floats = {n: t for n, t in frame.schema.items() if t in (pl.Float32, pl.Float64)}
    widened = {
        n: pl.col(n).cast(pl.String).cast(pl.Float64) if t == pl.Float32 else pl.col(n)
        for n, t in floats.items()
    }
    return frame.with_columns(
        *(pl.col(n).cast(pl.List(pl.String)).list.join(", ") for n in nested),
        *(column.round_sig_figs(SIGNIFICANT_DIGITS).alias(n) for n, column in widened.items()),
    )


def write_csv(frame: pl.DataFrame, path: Path) -> Path:
    """UTF-8 with a byte-order mark (so Excel reads accents right), header row, formulas neutralised."""
    with replaced_atomically(path) as partial:
        neutralise(_printable(frame)).write_csv(partial, include_bom=True)
    return path


def write_xlsx(sheets: dict[str, pl.DataFrame], path: Path) -> tuple[dict[str, int], int]:
    """One sheet per frame (continued on "name (2)", … past Excel's row limit) with a bold frozen header,
    a filter and column widths fitted to the content. Returns the sheets written and their rows, and how
    many text cells were cut to a cell's limit (a 44,000-character crawled URL made the workbook fail).

    Written by rust_xlsxwriter from the frames' Arrow columns (rustpy-xlsxwriter): 12x faster than
    xlsxwriter's cell-by-cell Python loop (1.6 s against 18 s for 200,000 rows of 8 columns). Text is
    written as text, never as a formula or a link."""
    import rustpy_xlsxwriter

    header = rustpy_xlsxwriter.Format().set_bold().set_background_color("#E8EEF4").set_border("thin")
    parts: list[tuple[str, pl.DataFrame]] = []
    cut = 0
    for name, frame in sheets.items():
        frame, cut_here = _within_cell_limit(neutralise(_printable(frame)))
        cut += cut_here
        for first in range(0, max(frame.height, 1), XLSX_MAX_ROWS):
            title = name if first == 0 else f"{name} ({first // XLSX_MAX_ROWS + 1})"
            parts.append((title[:31], frame.slice(first, XLSX_MAX_ROWS)))
    percent = rustpy_xlsxwriter.Format().set_num_format("0.0%")
    whole = rustpy_xlsxwriter.Format().set_num_format("0")  # the writer stores 3 as 3.0: shown as 3
    with replaced_atomically(path) as partial:
        rustpy_xlsxwriter.write_worksheets(
            parts,
            str(partial),
            freeze_panes={"general": {"row": 1, "col": 0}},
            header_format={"general": header},
            autofilter={"general": True},
            column_widths={title: _widths(chunk) for title, chunk in parts},
            float_format="0.000",  # never 1.6E-06: a probability reads as a percentage, the rest to 3 places
            column_formats={title: _number_formats(part, percent, whole) for title, part in parts},
            url_columns={title: urls for title, chunk in parts if (urls := _linked_urls(chunk))},
            data_validations={title: DECISION_DROPDOWN for title, chunk in parts if "decision" in chunk},
            row_formats={title: _page_blocks(chunk) for title, chunk in parts if PAGE_BLOCK in chunk},
        )
    return {title: chunk.height for title, chunk in parts}, cut


MAX_LINKS_PER_SHEET = 65_000  # Excel keeps at most 65,530 hyperlinks on a worksheet
DECISION_DROPDOWN = {
    "decision": {
        "type": "list", "values": ["accept", "reject"], "ignore_blank": True,
        "input_title": "Your decision", "input_message": "accept or reject; leave blank to decide later",
        "error_title": "accept or reject",
        "error_message": "Write accept or reject, or leave the cell blank.",
        "error_style": "warning",
    }
}  # fmt: skip
PAGE_BLOCK = "source_url"  # the column whose runs of one value are a page's block (shaded every other one)


def _number_formats(frame: pl.DataFrame, percent, whole) -> dict[str, object]:
    """A probability as a percentage, an integer as an integer (other floats take the sheet's 0.000)."""
    formats = {name: whole for name, dtype in frame.schema.items() if dtype.is_integer()}
    return formats | ({"probability": percent} if "probability" in frame.columns else {})


def _linked_urls(frame: pl.DataFrame) -> list[str]:
    """The URL columns to write as links a click opens, while the sheet stays within Excel's link limit."""
    urls = [name for name in frame.columns if name.endswith("url") and frame.schema[name] == pl.String]
    return urls if frame.height * len(urls) <= MAX_LINKS_PER_SHEET else []


def _page_blocks(frame: pl.DataFrame) -> dict[int, object]:
    """Every other page's rows shaded (sheet rows, the header being 0): a work list read page by page."""
    import rustpy_xlsxwriter

    shade = rustpy_xlsxwriter.Format().set_background_color("#F3F6F9")
    block = (frame[PAGE_BLOCK] != frame[PAGE_BLOCK].shift(1)).fill_null(True).cum_sum()
    return {row + 1: shade for row in (block % 2 == 0).arg_true().to_list()}


def _within_cell_limit(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """Text longer than a workbook cell holds, cut (ending "…"), and how many cells were."""
    text = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    too_long = {name: frame[name].str.len_chars() > XLSX_MAX_CELL_CHARS for name in text}
    cut = sum(int(mask.sum()) for mask in too_long.values())
    if not cut:
        return frame, 0
    return frame.with_columns(
        pl.when(too_long[name])
        .then(pl.col(name).str.slice(0, XLSX_MAX_CELL_CHARS - 1) + "…")
        .otherwise(pl.col(name))
        for name in text
    ), cut


def _widths(frame: pl.DataFrame, sample: int = 2000) -> dict[str, float]:
    """Column widths in characters: the longest of the header and the first rows' values, capped."""
    head = frame.head(sample)
    widths = {}
    for name in frame.columns:
        longest = head[name].cast(pl.String).str.len_chars().max() or 0
        widths[name] = float(min(MAX_COLUMN_WIDTH, max(len(name), longest) + 2))
    return widths


@dataclass
class ExportRun:
    """What `write_exports` wrote and what it left as it was (its inputs had not changed)."""

    files: dict[str, Path]  # table name (or "workbook") -> path
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    sheets: dict[str, int] = field(default_factory=dict)  # the workbook's sheets and rows, when written
    cut_cells: int = 0  # text cells cut to a workbook cell's limit (the CSV files keep them whole)


def frame_digest(frame: pl.DataFrame) -> str:
    """A digest of a frame's columns, types and rows, in order (polars' row hashes, with its version)."""
    rows = frame.hash_rows(seed=0).to_numpy().tobytes() if frame.height else b""
    header = json.dumps([pl.__version__, list(map(str, frame.schema.items()))]).encode()
    return hashlib.sha256(header + rows).hexdigest()


def write_exports(folder: Path, tables: dict[str, pl.DataFrame], workbook: str, into: Path) -> ExportRun:
    """One CSV per table and one workbook of them all, for `folder`: each written (into `into`, the run's
    staging folder, published with the run) only when what it is written from changed since the files in
    `folder` were (or the file is gone). `files` are the paths in `folder`."""
    into.mkdir(parents=True, exist_ok=True)
    saved = _saved_digests(folder)
    digests = {name: frame_digest(frame) for name, frame in tables.items()}
    digests["workbook"] = hashlib.sha256("".join(digests.values()).encode()).hexdigest()
    run = ExportRun({**{name: folder / f"{name}.csv" for name in tables}, "workbook": folder / workbook})
    for name, path in run.files.items():
        if saved.get(name) == digests[name] and path.is_file():
            run.unchanged.append(name)
            continue
        if name == "workbook":
            guide = pl.DataFrame({"sheet or column": list(READ_ME), "what it means": list(READ_ME.values())})
            run.sheets, run.cut_cells = write_xlsx({"read_me": guide, **tables}, into / path.name)
        else:
            write_csv(tables[name], into / path.name)
        run.written.append(name)
    with replaced_atomically(into / DIGESTS_FILE) as partial:
        partial.write_text(json.dumps(digests, indent=1))
    return run


def _saved_digests(folder: Path) -> dict[str, str]:
    try:
        saved = json.loads((folder / DIGESTS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return saved if isinstance(saved, dict) else {}
