"""Spreadsheet exports: CSV and XLSX that open safely and readably in Excel, LibreOffice and Sheets.

A cell that starts with = + - @ (or a tab or carriage return) is a formula to a spreadsheet — a page title
such as "=HYPERLINK(…)" from a crawled site would run when an analyst opens the file. Such text is prefixed
with an apostrophe (OWASP's advice), which spreadsheets show as the literal text.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from interlink_pipeline.core.files import replaced_atomically

FORMULA_START = r"^[=+\-@\t\r]"  # what makes a spreadsheet read text as a formula
XLSX_MAX_ROWS = 1_048_575  # Excel's sheet limit, less the header row
MAX_COLUMN_WIDTH = 60


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
    """Lists and other nested values as text (neither CSV nor XLSX holds them), and 32-bit floats as the
    decimals they print as: widened as they are, 0.0931 would show as 0.09309999644756317."""
    nested = [n for n, t in frame.schema.items() if isinstance(t, (pl.List, pl.Array, pl.Struct))]
    singles = [n for n, t in frame.schema.items() if t == pl.Float32]
    return frame.with_columns(
        *(pl.col(n).cast(pl.List(pl.String)).list.join(", ") for n in nested),
        *(pl.col(n).cast(pl.String).cast(pl.Float64) for n in singles),
    )


def write_csv(frame: pl.DataFrame, path: Path) -> Path:
    """UTF-8 with a byte-order mark (so Excel reads accents right), header row, formulas neutralised."""
    with replaced_atomically(path) as partial:
        neutralise(_printable(frame)).write_csv(partial, include_bom=True)
    return path


def write_xlsx(sheets: dict[str, pl.DataFrame], path: Path) -> dict[str, int]:
    """One sheet per frame (continued on "name (2)", … past Excel's row limit) with a bold frozen header,
    a filter and column widths fitted to the content. Returns the sheets written and their rows."""
    import xlsxwriter

    written: dict[str, int] = {}
    with replaced_atomically(path) as partial:
        workbook = xlsxwriter.Workbook(
            str(partial), {"constant_memory": True, "strings_to_formulas": False, "strings_to_urls": False}
        )
        header = workbook.add_format({"bold": True, "bg_color": "#E8EEF4", "border": 1})
        for name, frame in sheets.items():
            frame = neutralise(_printable(frame))
            chunks = [frame.slice(i, XLSX_MAX_ROWS) for i in range(0, max(frame.height, 1), XLSX_MAX_ROWS)]
            for part, chunk in enumerate(chunks, start=1):
                title = name if part == 1 else f"{name} ({part})"
                sheet = workbook.add_worksheet(title[:31])
                for col, (column, width) in enumerate(_widths(chunk).items()):
                    sheet.set_column(col, col, width)
                    sheet.write_string(0, col, column, header)
                for row, values in enumerate(chunk.iter_rows(), start=1):
                    for col, value in enumerate(values):
                        if value is None:
                            continue
                        if isinstance(value, str):
                            sheet.write_string(row, col, value)
                        elif isinstance(value, bool):
                            sheet.write_boolean(row, col, value)
                        else:
                            sheet.write(row, col, value)
                sheet.freeze_panes(1, 0)
                sheet.autofilter(0, 0, chunk.height, max(chunk.width - 1, 0))
                written[title[:31]] = chunk.height
        workbook.close()
    return written


def _widths(frame: pl.DataFrame, sample: int = 2000) -> dict[str, float]:
    """Column widths in characters: the longest of the header and the first rows' values, capped."""
    head = frame.head(sample)
    widths = {}
    for name in frame.columns:
        longest = head[name].cast(pl.String).str.len_chars().max() or 0
        widths[name] = float(min(MAX_COLUMN_WIDTH, max(len(name), longest) + 2))
    return widths
