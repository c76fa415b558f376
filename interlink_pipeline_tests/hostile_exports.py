"""Malformed and hostile crawl exports for the reliability suite: each writes one file and says what the
pipeline must do with it (an error naming the problem, or a correct result)."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import openpyxl
import polars as pl

from interlink_pipeline_tests.helpers import SF_HEADER, sf_row, write_export

HOST = "www.hostile.example"
BASE = f"https://{HOST}"


def good_rows(count: int = 6) -> list[list[str]]:
    topics = [
        "Trail Running Shoes",
        "Hiking Boots",
        "Rain Jackets",
        "Camping Tents",
        "Sleeping Bags",
        "Headlamps",
    ]
    rows = [sf_row(f"{BASE}/", "Outdoor Gear Shop", depth="0")]
    rows += [sf_row(f"{BASE}/{t.lower().replace(' ', '-')}/", f"{t} Guide") for t in topics[: count - 1]]
    return rows


@dataclass(frozen=True)
class Case:
    name: str
    write: Callable[[Path], Path]  # writes the export into a folder, returns its path
    error: str | None = None  # a substring of the error; None: the ingest succeeds
    check: Callable[[pl.DataFrame], None] | None = None  # on the site's staging.pages rows
    failed_step: str = "raw_crawl"  # where the error is raised: that table and all after it stay as they were


def _csv(rows, name="internal_all.csv", header=SF_HEADER, **options) -> Callable[[Path], Path]:
    return lambda folder: write_export(folder / name, header, rows, **options)


def _bytes(data: bytes, name: str = "internal_all.csv") -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        (folder / name).write_bytes(data)
        return folder / name

    return write


def _xlsx(sheets: dict[str, list[list[str]]], name: str = "internal_all.xlsx") -> Callable[[Path], Path]:
    def write(folder: Path) -> Path:
        book = openpyxl.Workbook()
        book.remove(book.active)
        for title, rows in sheets.items():
            sheet = book.create_sheet(title)
            for row in rows:
                sheet.append(row)
        book.save(folder / name)
        return folder / name

    return write


def _zip_bomb(folder: Path) -> Path:
    path = folder / "internal_all.xlsx"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/worksheets/sheet1.xml", b"<a>" + b" " * (600 * 1024**2) + b"</a>")
    return path


def _truncated_xlsx(folder: Path) -> Path:
    whole = _xlsx({"Internal": [SF_HEADER, *good_rows()]}, "whole.xlsx")(folder)
    path = folder / "internal_all.xlsx"
    path.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    whole.unlink()
    return path


def _titles(expected: list[str]) -> Callable[[pl.DataFrame], None]:
    def check(pages: pl.DataFrame) -> None:
        assert sorted(pages["title_raw"].to_list()) == sorted(expected), pages["title_raw"].to_list()

    return check


def _count(expected: int) -> Callable[[pl.DataFrame], None]:
    def check(pages: pl.DataFrame) -> None:
        assert pages.height == expected, pages.select("url", "title").to_dicts()

    return check


GOOD_TITLES = [row[6] for row in good_rows()]
MIXED = "\r\n".join(
    [",".join(f'"{h}"' for h in SF_HEADER)] + [",".join(f'"{v}"' for v in row) for row in good_rows()]
).encode("utf-8") + "\r\n".join(
    ["", ",".join(f'"{v}"' for v in sf_row(f"{BASE}/caf\u00e9/", "Caf\u00e9 Menu"))]
).encode("latin-1")

CASES = [
    Case("semicolon delimiter", _csv(good_rows(), delimiter=";"), check=_titles(GOOD_TITLES)),
    Case("tab delimiter", _csv(good_rows(), delimiter="\t"), check=_titles(GOOD_TITLES)),
    Case("pipe delimiter", _csv(good_rows(), delimiter="|"), check=_titles(GOOD_TITLES)),
    Case("UTF-8 with BOM", _csv(good_rows(), encoding="utf-8-sig"), check=_titles(GOOD_TITLES)),
    Case(
        "UTF-16 with BOM (Excel's Unicode text)",
        _csv(good_rows(), encoding="utf-16"),
        check=_titles(GOOD_TITLES),
    ),
    Case(
        "Windows-1252 accents",
        _csv(
            [*good_rows(), sf_row(f"{BASE}/cafe/", "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e")],
            encoding="cp1252",
        ),
        error="not UTF-8 or UTF-16 text: byte 0xe9",  # names the byte and line, and the `encoding` setting
    ),
    Case(
        "mixed encodings (UTF-8 then Latin-1 rows)",
        _bytes(MIXED),
        error="not UTF-8 or UTF-16 text: byte 0xe9",
    ),
    Case(
        "NUL bytes in a title",
        _csv([*good_rows(), sf_row(f"{BASE}/nul/", "Null\x00 Byte Boots")]),
        check=lambda pages: all("\x00" not in t for t in pages["title_raw"].to_list()),
    ),
    Case(
        "a 100 kB title",
        _csv([*good_rows(), sf_row(f"{BASE}/long/", "Boots " * 17_000)]),
        check=lambda pages: pages.filter(pl.col("path") == "/long/")["text"].str.len_chars().max() < 5_000,
    ),
    Case(
        "emoji and right-to-left titles",
        _csv(
            [
                *good_rows(),
                sf_row(f"{BASE}/emoji/", "Boots \U0001f97e\U0001f3d4\ufe0f"),
                sf_row(f"{BASE}/rtl/", "\u0623\u062d\u0630\u064a\u0629 \u0627\u0644\u0645\u0634\u064a"),
            ]
        ),
        check=lambda pages: (
            {
                "Boots \U0001f97e\U0001f3d4\ufe0f",
                "\u0623\u062d\u0630\u064a\u0629 \u0627\u0644\u0645\u0634\u064a",
            }
            <= set(pages["title_raw"].to_list())
        ),
    ),
    Case(
        "duplicate URLs differing in host and scheme case",
        _csv([*good_rows(), sf_row("HTTPS://WWW.HOSTILE.EXAMPLE/hiking-boots/", "Hiking Boots Guide Again")]),
        check=_count(6),
    ),
    Case(
        "every row non-indexable",
        _csv([sf_row(r[0], r[6], indexability="Non-Indexable", reason="noindex") for r in good_rows()]),
        error="is worth linking: all 6 rows are excluded (noindex 6)",
        failed_step="pages",
    ),
    Case("a single page", _csv(good_rows()[:1]), check=_count(1)),
    Case(
        "every page has the same title",
        _csv([sf_row(r[0], "Outdoor Gear") for r in good_rows()]),
        check=_count(6),
    ),
    Case(
        "XLSX with several sheets (the crawl is not the first)",
        _xlsx({"Summary": [["Crawl summary"], ["pages", "6"]], "Internal": [SF_HEADER, *good_rows()]}),
        check=_titles(GOOD_TITLES),
    ),
    Case("zip-bomb-like XLSX", _zip_bomb, error="refusing to open: the workbook would inflate to 600 MiB"),
    Case("truncated XLSX", _truncated_xlsx, error="not a readable"),
    Case(
        "formula cells",
        _csv([*good_rows(), sf_row(f"{BASE}/formula/", '=HYPERLINK("http://evil.example","x")')]),
        check=lambda pages: '=HYPERLINK("http://evil.example","x")' in pages["title_raw"].to_list(),
    ),
    Case("an empty file", _bytes(b""), error="empty"),
    Case("a header without rows", _csv([]), error="no data rows"),
    Case(
        "no URL column", _csv([["x", "y"]], header=["Page", "Title"]), error="no header row with a URL column"
    ),
    Case(
        "legacy XLS",
        _bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512, "internal_all.xls"),
        error="xls",
    ),
    Case("random binary bytes", _bytes(bytes(range(256)) * 64), error="not"),
    Case(
        "a PNG named .csv",
        _bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 200),
        error="not a crawl export: the file is a PNG image",
    ),
    Case(
        "an HTML page saved as .csv",
        _bytes(b"<!doctype html><html><body><h1>Login</h1></body></html>"),
        error="URL column",
    ),
    Case("JSON saved as .csv", _bytes(b'[{"Address": "https://www.hostile.example/"}]'), error="URL column"),
    Case(
        "ragged rows (more fields than the header)",
        _bytes(b'"Address","Title 1"\r\n"https://www.hostile.example/","Home","extra","fields"\r\n'),
        error="do not have the header's 2 fields (a stray quote",
    ),
    Case(
        "an unterminated quote",
        _bytes(b'"Address","Title 1"\r\n"https://www.hostile.example/,"Home\r\n'),
        error="do not have the header's 2 fields (a stray quote",
    ),
    Case("another site's crawl", _csv([sf_row("https://other.example/", "Other")]), error="other.example"),
    Case(
        "unusable URLs among good ones",
        _csv(
            [
                *good_rows(),
                sf_row("javascript:alert(1)", "JS"),
                sf_row("mailto:a@b.c", "Mail"),
                sf_row("/relative/", "Relative"),
                sf_row("", "Empty"),
            ]
        ),
        check=_count(6),
    ),
    Case(
        "LF line endings",
        _bytes(("\n".join([",".join(SF_HEADER), *(",".join(r) for r in good_rows())]) + "\n").encode()),
        check=_titles(GOOD_TITLES),
    ),
    Case("a 10 kB URL", _csv([*good_rows(), sf_row(f"{BASE}/{'a' * 10_000}/", "Long URL")]), check=_count(7)),
    Case(
        "duplicate header names",
        _csv([["https://www.hostile.example/", "a", "b"]], header=["Address", "Title 1", "Title 1"]),
        error="duplicate",
    ),
    Case(
        "a non-numeric status code",
        _csv([*good_rows(), sf_row(f"{BASE}/odd/", "Odd Status", status="abc")]),
        check=_count(6),
    ),
    Case(
        "a title with quoted line breaks",
        _csv([*good_rows(), sf_row(f"{BASE}/multi/", "Hiking\nBoots\r\nSale")]),
        check=_count(7),
    ),
]
