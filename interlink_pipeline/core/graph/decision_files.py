"""Decisions files: the plan's CSV or workbook with its `decision` column filled in (or any file with the same
columns), read and checked before any decision is stored.

A file is refused whole, with every row that is wrong named, when it is for another site, says something
other than accept or reject, gives a decision without both URLs, or is a workbook whose cells hold
formulas (their values are what the editor's spreadsheet last computed, not what the editor typed), or
has no table with the columns. A blank decision is no decision. A workbook is read on every sheet with the
columns: an editor decides in link_plan, to_do or new_since_review, and a work sheet's decision stands over
link_plan's for the same link.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.crawl_columns import Field, fold_header
from interlink_pipeline.core.ingest.crawl_exports import MIN_SITE_SHARE, host_counts
from interlink_pipeline.core.ingest.tabular_files import (
    XLSX_SUFFIXES,
    NoDataRows,
    NoHeaderRow,
    NotUnicodeText,
    TableFile,
    detect_encoding,
    mapped_positions,
    open_table,
    read_columns,
    sheet_names,
)
from interlink_pipeline.core.warehouse.vocabularies import DECISIONS

DECISION_FIELDS = (
    Field("source_url", ("source_url", "Source URL", "Source", "From"), required=True),
    Field("target_url", ("target_url", "Target URL", "Target", "To"), required=True),
    Field("decision", ("decision", "Decision"), required=True),
    Field("link_id", ("link_id", "Link ID", "Link")),
    Field("note", ("note", "Note", "Notes", "Comment", "Comments")),
)
# the words a decision cell may hold (any case), and the decision each means
DECISION_WORDS = {
    **{word: "accept" for word in ("accept", "accepted", "yes", "y")},
    **{word: "reject" for word in ("reject", "rejected", "no", "n")},
}
SHOWN = 10  # rows named in an error, at most
PLAN_SHEET = "link_plan"  # the plan's sheet in its workbook (core/publish/exports), with standing decisions
FILL_IN = (
    "a decisions file is the plan's link_plan.csv (or to_do.csv, new_since_review.csv), or its workbook "
    "(sheets link_plan, to_do, new_since_review), with the decision column filled in (accept, reject or "
    "blank) and its source_url and target_url columns kept."
)
NOT_DECISIONS = "no header row with the source_url, target_url and decision columns {where}: " + FILL_IN
assert set(DECISION_WORDS.values()) == set(DECISIONS)


def read_decisions(path: Path, site: str) -> pl.DataFrame:
    """row_number, at (the row in words), link_id, source_url, target_url, decision, note: the rows of a
    decisions file that say accept or reject, checked (see the module's docstring); InputError naming every
    wrong row else. A workbook's every sheet with the columns is read (link_plan, to_do, new_since_review:
    an editor works in any), a work sheet's decision standing over link_plan's for the same link (link_plan
    is exported with the standing decisions filled in, the work sheets blank)."""
    path = Path(path)
    if path.suffix.lower() in XLSX_SUFFIXES:
        _refuse_formulas(path)
    elif path.is_file():
        try:
            detect_encoding(path)
        except NotUnicodeText as exc:
            raise InputError(
                f"{path.name}: {exc.problem}: save it from the spreadsheet as CSV UTF-8 (or import the "
                "workbook itself)."
            ) from None
    rows = _file_rows(_decision_tables(path))
    _check_site(rows, site, path)
    decided = rows.filter(pl.col("decision").is_not_null()).with_columns(
        pl.col("decision").str.to_lowercase().replace_strict(DECISION_WORDS, default=None).alias("meaning")
    )
    unknown = decided.filter(pl.col("meaning").is_null())
    if unknown.height:
        raise InputError(
            f"{path.name}: a decision is accept or reject (or blank for none), not "
            + listed(unknown, lambda r: f"{r['at']}: '{r['decision']}'")
        )
    decided = decided.with_columns(pl.col("meaning").alias("decision")).drop("meaning")
    missing = decided.filter(pl.col("source_url").is_null() | pl.col("target_url").is_null())
    if missing.height:
        raise InputError(
            f"{path.name}: a decision needs both the source and the target URL: "
            + listed(missing, lambda r: r["at"])
        )
    return _work_sheets_first(decided).select(
        "row_number", "at", "link_id", "source_url", "target_url", "decision", "note"
    )


def _decision_tables(path: Path) -> list[TableFile]:
    """The file's tables of decisions: in a workbook, every sheet with the columns, link_plan's first;
    refused in a decisions file's terms, showing none of the file's content."""
    if path.suffix.lower() not in XLSX_SUFFIXES:
        return [_with_columns(_opened(path, None), path)]
    tables, refused = [], None
    for name in sorted(sheet_names(path), key=lambda name: not name.startswith(PLAN_SHEET)):
        try:
            tables.append(_with_columns(_opened(path, name), path))
        except NoDecisionColumns as exc:
            refused = refused or exc
        except NoHeaderRow:
            continue
    if not tables:
        raise refused or InputError(f"{path.name}: {NOT_DECISIONS.format(where='on any sheet')}")
    return tables


class NoDecisionColumns(InputError):
    """A table with a URL column but not every column of a decisions file."""


def _opened(path: Path, sheet: str | None) -> TableFile:
    try:
        return open_table(path, DECISION_FIELDS[0], sheet=sheet)
    except NoHeaderRow:
        if sheet is not None:
            raise
        raise InputError(f"{path.name}: {NOT_DECISIONS.format(where='in its first rows')}") from None


def _with_columns(table: TableFile, path: Path) -> TableFile:
    found = {fold_header(header) for header in table.headers}
    missing = [
        field.name
        for field in DECISION_FIELDS
        if field.required and not found & {fold_header(alias) for alias in field.aliases}
    ]
    if missing:
        where = f"on sheet '{table.sheet}'" if table.sheet else "in its header row"
        raise NoDecisionColumns(f"{path.name}: no {' or '.join(missing)} column {where}: {FILL_IN}")
    return table


def _file_rows(tables: list[TableFile]) -> pl.DataFrame:
    """The rows of a file's tables; a workbook's sheet with no rows (no link new since the review) adds
    none, and the file is refused only when none has a row."""
    rows, empty = [], None
    for table in tables:
        try:
            rows.append(_table_rows(table))
        except NoDataRows as exc:
            empty = empty or exc
    if not rows:
        raise empty
    return pl.concat(rows, how="vertical_relaxed")


def _table_rows(table: TableFile) -> pl.DataFrame:
    """A table's rows, numbered, each with where it is in words (a sheet's name in a workbook)."""
    rows = read_columns(table, mapped_positions(table, DECISION_FIELDS, None))
    rows = rows.with_row_index("row_number", offset=1).with_columns(pl.col("row_number").cast(pl.Int64))
    for name in ("link_id", "note"):
        if name not in rows.columns:
            rows = rows.with_columns(pl.lit(None, dtype=pl.String).alias(name))
    at = f"{table.sheet} row " if table.sheet else "row "
    return rows.select(
        "row_number",
        (pl.lit(at) + pl.col("row_number").cast(pl.String)).alias("at"),
        pl.lit(bool(table.sheet) and not table.sheet.startswith(PLAN_SHEET)).alias("work_sheet"),
        "link_id",
        "source_url",
        "target_url",
        "decision",
        "note",
    )


def _work_sheets_first(decided: pl.DataFrame) -> pl.DataFrame:
    """Decided rows without the plan sheet's rows for links a work sheet decides: those the editor typed."""
    pair = ["source_url", "target_url"]
    typed = decided.filter("work_sheet").select(pair).unique()
    return pl.concat(
        [decided.filter(~pl.col("work_sheet")).join(typed, on=pair, how="anti"), decided.filter("work_sheet")]
    )


def _refuse_formulas(path: Path) -> None:
    """A workbook whose cells hold formulas is refused: the stored values are the editor's spreadsheet's
    last computation, not what was typed (and a decision cell =IF(…) is no decision)."""
    import openpyxl

    try:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=False)
    except Exception as exc:  # openpyxl raises many types for damaged workbooks
        raise InputError(f"{path.name}: not a readable XLSX workbook: {exc}") from None
    try:
        formulas = [
            f"{sheet.title}!{cell.coordinate}"
            for sheet in workbook.worksheets
            for row in sheet.iter_rows()
            for cell in row
            if cell.data_type == "f"
        ]
    finally:
        workbook.close()
    if formulas:
        raise InputError(
            f"{path.name}: {len(formulas)} cell(s) hold formulas ({', '.join(formulas[:SHOWN])}"
            f"{', …' if len(formulas) > SHOWN else ''}); decisions are read as typed: paste them as values "
            "(Paste Special > Values) and save again."
        )


def _check_site(rows: pl.DataFrame, site: str, path: Path) -> None:
    found, on_site, top = host_counts(pl.concat([rows["source_url"], rows["target_url"]]), site)
    if not found:
        raise InputError(f"{path.name}: none of its URLs is an http(s) URL.")
    if on_site / found < MIN_SITE_SHARE:
        raise InputError(
            f"{path.name}: these decisions are not for {site}: {found - on_site} of its {found} URLs are on "
            f"other hosts, most on '{top[0]}' ({top[1]}). Import it for its own site: --site {top[0]}."
        )


def listed(rows: pl.DataFrame, line) -> str:
    """The first SHOWN rows, each as `line` says it, and how many more: what an error names."""
    shown = [line(row) for row in rows.head(SHOWN).iter_rows(named=True)]
    more = f"; and {rows.height - SHOWN} more" if rows.height > SHOWN else ""
    return "; ".join(shown) + more + "."
