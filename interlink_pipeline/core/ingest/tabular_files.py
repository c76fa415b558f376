"""Reading exported tables (CSV/TSV/XLSX) safely: encoding, delimiter, header row, size guards.

Everything is read as text; typing happens in the callers. Large CSVs are read by polars in native code
(only the requested columns are materialised); UTF-16 files are first transcoded in chunks to a temporary
UTF-8 file, so memory stays bounded by the selected columns rather than the file.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import hashlib
import io
import os
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import fastexcel
import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.crawl_columns import Field, fold_header, map_headers

DELIMITERS = (",", ";", "\t", "|")
HEAD_BYTES = 256 * 1024
HEADER_SEARCH_ROWS = 10
CHUNK = 4 * 1024 * 1024
# An XLSX is a zip: refuse archives that would inflate past this or at an implausible ratio (zip bombs).
XLSX_MAX_UNCOMPRESSED = 2 * 1024**3
XLSX_MAX_RATIO = 250
XLSX_SUFFIXES = {".xlsx", ".xlsm"}
CONTROL_CHARACTERS = r"[\x00-\x08\x0B\x0C\x0E-\x1F\x7F]"
# Files that are plainly not a text export, by their first bytes (checked before decoding).
BINARY_SIGNATURES = {
    b"\x89PNG": "a PNG image",
    b"%PDF": "a PDF document",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF8": "a GIF image",
    b"\x1f\x8b": "gzip-compressed (decompress it first)",
    b"\xd0\xcf\x11\xe0": "an old binary Office file (save it as .xlsx or CSV)",
    b"\x7fELF": "a program",
    b"SQLite format 3": "an SQLite database",
}


@dataclass(frozen=True)
class TableFile:
    """A sniffed export: where its header is and how to parse it."""

    path: Path
    format: Literal["csv", "xlsx"]
    headers: list[str]
    header_index: int  # records before the header row (e.g. 1 for a leading "Internal - All" line)
    encoding: str | None = None
    delimiter: str | None = None
    sheet: str | None = None


def open_table(
    path: Path,
    probe: Field,
    *,
    column_map: dict[str, str] | None = None,
    encoding: str | None = None,
    sheet: str | None = None,
) -> TableFile:
    """Sniff `path`; `probe` is the field whose header identifies the header row (the URL column)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found.")
    if path.stat().st_size == 0:
        raise InputError(f"{path}: the file is empty (0 bytes). Export the crawl again.")
    probe_names = {fold_header(a) for a in probe.aliases}
    if column_map and probe.name in column_map:
        probe_names = {fold_header(column_map[probe.name])}
    with open(path, "rb") as fh:
        start = fh.read(16)
    if path.suffix.lower() in XLSX_SUFFIXES or start.startswith(b"PK\x03\x04"):  # an XLSX is a zip
        return _open_xlsx(path, probe_names, sheet)
    if path.suffix.lower() == ".xls":
        raise InputError(f"{path}: the old binary .xls format is not supported; save it as .xlsx or CSV.")
    kind = next((kind for magic, kind in BINARY_SIGNATURES.items() if start.startswith(magic)), None)
    if kind:
        raise InputError(f"{path}: not a crawl export: the file is {kind}.")
    return _open_csv(path, probe_names, encoding)


def read_columns(table: TableFile, positions: dict[str, int]) -> pl.DataFrame:
    """Read the columns at `positions` ({name: 0-based position}) as strings, named by their keys."""
    if table.format == "xlsx":
        frame = _read_xlsx_columns(table, positions)
    else:
        with _utf8_view(table) as utf8_path:
            try:
                frame = pl.read_csv(
                    utf8_path,
                    has_header=False,
                    skip_rows=table.header_index + 1,
                    separator=table.delimiter or ",",
                    quote_char='"',
                    schema={f"c{i}": pl.String for i in range(len(table.headers))},
                    columns=sorted(positions.values()),
                    truncate_ragged_lines=True,
                    raise_if_empty=False,
                    encoding="utf8",
                )
            except pl.exceptions.SchemaError:
                raise InputError(
                    f"{table.path}: could not parse the CSV: some rows do not have the header's "
                    f"{len(table.headers)} fields (a stray quote, or an unquoted '{table.delimiter}' inside "
                    "a value?). Export the crawl again."
                ) from None
            except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as exc:
                raise InputError(f"{table.path}: could not parse the CSV: {_first_line(exc)}") from None
        frame = frame.rename({f"c{pos}": name for name, pos in positions.items()})
    frame = frame.select(list(positions))
    # Drop control characters (NUL bytes and the like: never meaningful, and refused by spreadsheets), strip
    # padding and turn empty cells into nulls once, here, for every caller.
    frame = frame.with_columns(
        pl.col(name).str.replace_all(CONTROL_CHARACTERS, "").str.strip_chars().replace("", None)
        for name in positions
    )
    if frame.height == 0:
        raise NoDataRows(f"{table.path}: the header row was found but there are no data rows.")
    return frame


def mapped_positions(
    table: TableFile, fields: tuple[Field, ...], column_map: dict[str, str] | None
) -> dict[str, int]:
    return map_headers(table.headers, fields, column_map, str(table.path))


class NotUnicodeText(InputError):
    """A text file in neither UTF-8 nor UTF-16: `problem` says where, without the advice of how to register
    it, which depends on what the file is for."""

    def __init__(self, message: str, problem: str):
        super().__init__(message)
        self.problem = problem


class NoDataRows(InputError):
    """A header row and nothing under it."""


class NoHeaderRow(InputError):
    """No header row names the probe column: the message shows the columns of the widest row near the top
    (a crawl's user needs them to map theirs), which a reader of another kind of file may leave out."""


def detect_encoding(path: Path) -> str:
    """UTF-8 (with or without BOM) or UTF-16 (BOM or NUL pattern); anything else is refused loudly."""
    with open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    if head.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    elif head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    else:
        sample = head[:4096]
        if len(sample) >= 4 and sample.count(0) > len(sample) // 4:
            odd_nuls = sample[1::2].count(0)
            even_nuls = sample[0::2].count(0)
            return "utf-16-le" if odd_nuls > even_nuls else "utf-16-be"
        encoding = "utf-8"
    _check_utf8(path)
    return encoding


def _check_utf8(path: Path) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
    offset = 0
    lines = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                bad_at = offset + exc.start
                line = lines + chunk[: exc.start].count(b"\n") + 1
                byte = f"0x{chunk[exc.start]:02x}"
                problem = f"not UTF-8 or UTF-16 text: byte {byte} at offset {bad_at} (line {line}) is invalid"
                raise NotUnicodeText(
                    f"{path}: {problem}. Export from Screaming Frog again (it writes UTF-8), or give its "
                    "real encoding: interlink register … --encoding cp1252 (or latin-1), or the step's "
                    "encoding setting.",
                    problem,
                ) from None
            lines += chunk.count(b"\n")
            offset += len(chunk)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise InputError(
                f"{path}: the file ends in the middle of a UTF-8 character (truncated?)."
            ) from None


def _open_csv(path: Path, probe_names: set[str], encoding: str | None) -> TableFile:
    if encoding:
        try:
            encoding = codecs.lookup(encoding).name
        except LookupError:
            raise InputError(f"encoding '{encoding}' is not a known text encoding.") from None
    else:
        encoding = detect_encoding(path)
    with open(path, "rb") as fh:
        raw = fh.read(HEAD_BYTES)
    head = raw.decode(encoding, errors="ignore").lstrip("\ufeff")
    if not head.strip():
        raise InputError(f"{path}: the file has no text (only whitespace).")
    best: tuple[int, str, int, list[str]] | None = None  # (width, delimiter, header index, headers)
    widest: list[str] = []
    for delimiter in DELIMITERS:
        records = _head_records(head, delimiter)
        for index, record in enumerate(records[:HEADER_SEARCH_ROWS]):
            if len(record) > len(widest):
                widest = record
            if any(fold_header(cell) in probe_names for cell in record):
                if best is None or len(record) > best[0]:
                    best = (len(record), delimiter, index, record)
                break
    if best is None:
        shown = ", ".join(f"'{h}'" for h in widest[:40]) or "(none)"
        raise NoHeaderRow(
            f"{path}: no header row with a URL column in the first {HEADER_SEARCH_ROWS} rows. Columns found: "
            f"{shown}. Accepted names: 'Address', 'URL' and their Spanish, French, German and Italian forms; "
            "or map yours with column_map={'url': '<your column>'}."
        )
    _, delimiter, header_index, headers = best
    return TableFile(path, "csv", [h.strip() for h in headers], header_index, encoding, delimiter)


def _head_records(head: str, delimiter: str) -> list[list[str]]:
    reader = csv.reader(io.StringIO(head), delimiter=delimiter, quotechar='"', strict=False)
    records: list[list[str]] = []
    with contextlib.suppress(csv.Error):
        for record in reader:
            records.append(record)
            if len(records) > HEADER_SEARCH_ROWS:
                break
    return [r for r in records if any(cell.strip() for cell in r)]


@contextlib.contextmanager
def _utf8_view(table: TableFile) -> Iterator[Path]:
    """The file itself when polars can read it, else a temporary UTF-8 transcoding (chunked)."""
    if table.encoding in ("utf-8", "utf-8-sig"):
        yield table.path
        return
    fd, tmp = tempfile.mkstemp(suffix=".csv", prefix="interlink-utf8-")
    try:
        decoder = codecs.getincrementaldecoder(table.encoding)(errors="strict")
        with open(table.path, "rb") as src, os.fdopen(fd, "w", encoding="utf-8", newline="") as dst:
            try:
                while chunk := src.read(CHUNK):
                    dst.write(decoder.decode(chunk).replace("\ufeff", ""))
                dst.write(decoder.decode(b"", final=True))
            except UnicodeDecodeError as exc:
                raise InputError(f"{table.path}: not valid {table.encoding} text: {exc.reason}.") from None
        yield Path(tmp)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


@contextlib.contextmanager
def as_utf8(path: Path, encoding: str | None) -> Iterator[Path]:
    """`path` itself when it is UTF-8 or UTF-16 text, a workbook, or no `encoding` is given; else a
    temporary UTF-8 copy of it read as `encoding` (a file that already is UTF-8 is never re-read as
    another encoding, so one --encoding serves a command's files of mixed encodings)."""
    if encoding is None or path.suffix.lower() in XLSX_SUFFIXES or not path.is_file():
        yield path
        return
    try:
        detect_encoding(path)
        is_unicode = True
    except InputError:
        is_unicode = False
    if is_unicode:
        yield path
        return
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise InputError(f"--encoding '{encoding}' is not a known text encoding (e.g. cp1252).") from None
    with _utf8_view(TableFile(path, "csv", [], 0, name)) as utf8:
        yield utf8


def _check_zip(path: Path) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(
            f"{path}: not a readable XLSX workbook (the zip container is damaged or truncated: {exc}). "
            "Export it again or save it as CSV."
        ) from None
    total = sum(info.file_size for info in infos)
    packed = max(1, sum(info.compress_size for info in infos))
    if total > XLSX_MAX_UNCOMPRESSED or (total > 50 * 1024**2 and total / packed > XLSX_MAX_RATIO):
        raise InputError(
            f"{path}: refusing to open: the workbook would inflate to {total / 1024**2:,.0f} MiB from "
            f"{packed / 1024**2:,.1f} MiB (limit {XLSX_MAX_UNCOMPRESSED / 1024**3:.0f} GiB, ratio "
            f"{XLSX_MAX_RATIO}:1). Export the crawl as CSV instead."
        )


def _workbook(path: Path):
    """The workbook's reader (fastexcel), once its zip container is checked; refused when unreadable."""
    _check_zip(path)
    try:
        return fastexcel.read_excel(str(path))
    except Exception as exc:  # fastexcel raises its own hierarchy for damaged workbooks
        raise InputError(f"{path}: not a readable XLSX workbook: {_first_line(exc)}") from None


def sheet_names(path: Path) -> list[str]:
    """A workbook's sheets, in their order."""
    return _workbook(path).sheet_names


def _open_xlsx(path: Path, probe_names: set[str], sheet: str | None) -> TableFile:
    reader = _workbook(path)
    names = reader.sheet_names
    if sheet is not None and sheet not in names:
        raise InputError(f"{path}: no sheet named '{sheet}'. Sheets: {', '.join(names)}.")
    widest: list[str] = []
    for name in [sheet] if sheet else names:
        try:
            probe = reader.load_sheet(name, header_row=None, n_rows=HEADER_SEARCH_ROWS, dtypes="string")
        except Exception as exc:
            raise InputError(f"{path}: sheet '{name}' could not be read: {_first_line(exc)}") from None
        for index, row in enumerate(probe.to_polars().rows()):
            cells = ["" if cell is None else str(cell) for cell in row]
            while cells and not cells[-1]:
                cells.pop()
            if len(cells) > len(widest):
                widest = cells
            if any(fold_header(c) in probe_names for c in cells):
                return TableFile(path, "xlsx", [c.strip() for c in cells], index, sheet=name)
    shown = ", ".join(f"'{h}'" for h in widest[:40]) or "(none)"
    raise NoHeaderRow(
        f"{path}: no sheet has a header row with a URL column (sheets: {', '.join(names)}). Columns found: "
        f"{shown}. Accepted names: 'Address', 'URL' and their translations; or map yours with "
        "column_map={'url': '<your column>'} and pick the sheet with sheet='<name>'."
    )


def _read_xlsx_columns(table: TableFile, positions: dict[str, int]) -> pl.DataFrame:
    try:
        reader = fastexcel.read_excel(str(table.path))
        sheet = reader.load_sheet(
            table.sheet,
            header_row=None,
            skip_rows=table.header_index + 1,
            dtypes="string",
            use_columns=sorted(positions.values()),
        )
        frame = sheet.to_polars()
    except Exception as exc:
        raise InputError(
            f"{table.path}: sheet '{table.sheet}' could not be read: {_first_line(exc)}"
        ) from None
    # fastexcel names unnamed columns by their position in the selection; map back by order.
    ordered = sorted(positions.items(), key=lambda item: item[1])
    frame = frame.select(frame.columns[: len(ordered)])
    return frame.rename(dict(zip(frame.columns, [name for name, _ in ordered], strict=True))).with_columns(
        pl.all().cast(pl.String)
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def file_digest(path: Path) -> str:
    """Content hash of a file (SHA-256 prefix): the crawl id, and the sensor's run key."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()[:16]
