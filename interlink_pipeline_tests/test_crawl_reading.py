"""Reading crawl exports: formats, encodings, languages, real files, and every bad-input message."""

import zipfile
from pathlib import Path

import openpyxl
import polars as pl
import pytest

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.crawl_exports import infer_site, read_crawl_export, read_links_export
from interlink_pipeline_tests.helpers import LIGHT, NUTRI, SF_HEADER, sf_row, write_export

SITE = "www.example.com"
ROWS = [
    sf_row("https://www.example.com/", "Home | Example", h1="Welcome", depth="0"),
    sf_row("https://www.example.com/tents/", "Tents | Example", meta="All our tents,\nwith a line break"),
    sf_row(
        "https://www.example.com/old/", "", status="301", indexability="Non-Indexable", reason="Redirected"
    ),
]


@pytest.mark.parametrize(
    ("encoding", "delimiter"),
    [
        ("utf-8", ","),
        ("utf-8-sig", ","),
        ("utf-16", ","),
        ("utf-16-le", ","),
        ("utf-16-be", "\t"),
        ("utf-8", ";"),
        ("utf-8-sig", "\t"),
    ],
)
def test_reads_every_encoding_and_delimiter(tmp_path, encoding, delimiter):
    path = write_export(
        tmp_path / "internal_html.csv", SF_HEADER, ROWS, encoding=encoding, delimiter=delimiter
    )
    frame = read_crawl_export(path, SITE).frame
    assert frame["url"].to_list() == [r[0] for r in ROWS]
    assert frame["status_code"].to_list() == [200, 200, 301]
    assert frame["meta_description"][1] == "All our tents,\nwith a line break"  # quoted multi-line field
    assert frame["crawl_depth"].to_list() == [0, 1, 1]


def test_old_format_with_title_line(tmp_path):
    header = [
        "Address",
        "Content",
        "Status Code",
        "Status",
        "Title 1",
        "H1-1",
        "H1-1 length",
        "Meta Robots 1",
    ]
    rows = [["https://www.example.com/a", "text/html", "200", "OK", "A", "A h1", "4", ""]]
    path = write_export(tmp_path / "internal_all.csv", header, rows, preamble="Internal - All")
    loaded = read_crawl_export(path, SITE)
    assert loaded.header_index == 1
    assert loaded.mapped["content_type"] == "Content"
    assert loaded.frame.select("content_type", "h1").row(0) == ("text/html", "A h1")
    assert "H1-1 length" in loaded.ignored_columns


@pytest.mark.parametrize(
    "header",
    [
        # Spanish, French, German, Italian user interfaces
        [
            "Dirección",
            "Tipo de contenido",
            "Código de respuesta",
            "Indexabilidad",
            "Estado de indexabilidad",
            "Título 1",
            "Meta descripción 1",
            "H1-1",
            "Elemento de enlace canónico 1",
        ],
        [
            "Adresse",
            "Type de contenu",
            "Code de réponse",
            "Indexabilité",
            "Statut d'indexabilité",
            "Titre 1",
            "Méta description 1",
            "H1-1",
            "Élément de lien canonique 1",
        ],
        [
            "Adresse",
            "Inhaltstyp",
            "Statuscode",
            "Indexierbarkeit",
            "Indexierbarkeitsstatus",
            "Titel 1",
            "Meta-Beschreibung 1",
            "H1-1",
            "Kanonisches Link-Element 1",
        ],
        [
            "Indirizzo",
            "Tipo di contenuto",
            "Codice di risposta",
            "Indicizzabilità",
            "Stato di indicizzabilità",
            "Titolo 1",
            "Meta descrizione 1",
            "H1-1",
            "Elemento link canonico 1",
        ],
    ],
)
def test_localised_headers_map_to_canonical_fields(tmp_path, header):
    row = ["https://www.example.com/x", "text/html", "200", "Indexable", "", "Título", "Meta", "H1", ""]
    loaded = read_crawl_export(write_export(tmp_path / "internal.csv", header, [row]), SITE)
    expected = [
        "url",
        "content_type",
        "status_code",
        "indexability",
        "indexability_status",
        "title",
        "meta_description",
        "h1",
        "canonical_url",
    ]
    assert list(loaded.mapped) == expected
    assert loaded.frame.select(expected).row(0) == (
        "https://www.example.com/x",
        "text/html",
        200,
        "Indexable",
        None,
        "Título",
        "Meta",
        "H1",
        None,
    )


def test_other_crawler_with_column_map_and_extra_columns(tmp_path):
    header = ["Page", "Page Title", "Keyword", "Template"]
    rows = [["https://www.example.com/p/1", "Blue Tent", "blue tent", "product"]]
    path = write_export(tmp_path / "export.csv", header, rows)
    loaded = read_crawl_export(
        path,
        SITE,
        column_map={"url": "Page", "title": "Page Title", "main_query": "Keyword"},
        extra_columns=["Template"],
    )
    assert loaded.frame.select("url", "title", "main_query", "extra").row(0) == (
        "https://www.example.com/p/1",
        "Blue Tent",
        "blue tent",
        '{"Template":"product"}',
    )
    assert loaded.frame["status_code"].is_null().all()


def test_xlsx_picks_the_sheet_with_the_url_column(tmp_path):
    book = openpyxl.Workbook()
    book.active.title = "Notes"
    book.active.append(["exported for the SEO team"])
    sheet = book.create_sheet("Internal")
    sheet.append(["Internal - HTML"])
    sheet.append(SF_HEADER)
    for row in ROWS:
        sheet.append([int(v) if v.isdigit() else v for v in row])
    path = tmp_path / "internal_html.xlsx"
    book.save(path)
    loaded = read_crawl_export(path, SITE)
    assert loaded.frame["url"].to_list() == [r[0] for r in ROWS]
    assert loaded.frame["status_code"].to_list() == [200, 200, 301]
    assert loaded.frame["title"][0] == "Home | Example"
    with pytest.raises(InputError, match=r"no sheet named 'Crawl'\. Sheets: Notes, Internal"):
        read_crawl_export(path, SITE, sheet="Crawl")


def test_real_lightchiropractic_exports(crawls):
    crawl = read_crawl_export(crawls / "lightchiropractic/internal_all.csv", LIGHT).frame
    assert crawl.height == 344
    indexable_html = crawl.filter(
        pl.col("content_type").str.contains("text/html")
        & (pl.col("status_code") == 200)
        & (pl.col("indexability") == "Indexable")
    )
    assert indexable_html.height == 102
    links = read_links_export(crawls / "lightchiropractic/all_inlinks.csv", LIGHT).frame
    assert links.height == 5518
    positions = dict(links.group_by("link_position").len().iter_rows())
    assert positions["Header"] == 2754 and positions["Footer"] == 1122 and positions["Content"] == 1180
    assert (~links["follow"]).sum() == 1  # one rel=nofollow link (to YouTube)
    assert links.filter(~pl.col("follow"))["rel"].to_list() == ["nofollow"]


def test_real_nutrisport_old_format_spanish_multiline(crawls):
    loaded = read_crawl_export(crawls / "nutrisport/internal_html.csv", NUTRI)
    frame = loaded.frame
    assert frame.height == 1337
    assert loaded.mapped["content_type"] == "Content"  # the older export format
    assert loaded.mapped["rel_prev"] == 'rel="prev" 1'  # header with doubled quotes parsed correctly
    assert frame.filter(pl.col("title").str.contains("Nutrición Deportiva")).height >= 1
    multi = frame.filter(pl.col("meta_description").str.contains("\n"))
    assert multi.height >= 1  # fields with line breaks stay inside their row
    assert frame["url"].str.starts_with("http").all()


def test_infer_site_from_urls(crawls):
    assert infer_site(crawls / "nutrisport/internal_html.csv") == NUTRI


def test_crawl_for_another_site_is_refused(crawls):
    with pytest.raises(
        InputError, match=r"not for site 'www\.lightchiropractic\.sg'.*most are on 'nutrisport\.es'"
    ):
        read_crawl_export(crawls / "nutrisport/internal_html.csv", LIGHT)


# --- bad inputs: each gets a message naming the file and the fix -----------------------------------


def test_empty_file(tmp_path):
    path = tmp_path / "internal_html.csv"
    path.write_bytes(b"")
    with pytest.raises(InputError, match=r"internal_html.csv: the file is empty \(0 bytes\)"):
        read_crawl_export(path, SITE)


def test_header_without_rows(tmp_path):
    path = write_export(tmp_path / "internal_html.csv", SF_HEADER, [])
    with pytest.raises(InputError, match="header row was found but there are no data rows"):
        read_crawl_export(path, SITE)


def test_no_url_column_lists_columns_and_accepted_names(tmp_path):
    path = write_export(
        tmp_path / "internal_html.csv", ["Page", "Title 1"], [["https://www.example.com/", "x"]]
    )
    with pytest.raises(InputError) as error:
        read_crawl_export(path, SITE)
    message = str(error.value)
    assert "no header row with a URL column" in message
    assert "Columns found: 'Page', 'Title 1'" in message
    assert "'Address', 'URL'" in message and "column_map={'url': '<your column>'}" in message


def test_unknown_encoding_names_the_offset_and_line(tmp_path):
    path = write_export(
        tmp_path / "internal_html.csv",
        SF_HEADER,
        [sf_row("https://www.example.com/é", "Café")],
        encoding="cp1252",
    )
    with pytest.raises(InputError, match=r"not UTF-8 or UTF-16 text: byte 0xe9 at offset \d+ \(line 2\)"):
        read_crawl_export(path, SITE)
    # the message's fix works
    assert read_crawl_export(path, SITE, encoding="cp1252").frame["title"][0] == "Café"


def test_unknown_encoding_name(tmp_path):
    path = write_export(tmp_path / "internal_html.csv", SF_HEADER, ROWS)
    with pytest.raises(InputError, match="encoding 'klingon' is not a known text encoding"):
        read_crawl_export(path, SITE, encoding="klingon")


def test_truncated_xlsx(tmp_path):
    book = openpyxl.Workbook()
    book.active.append(SF_HEADER)
    book.active.append(ROWS[0])
    whole = tmp_path / "whole.xlsx"
    book.save(whole)
    truncated = tmp_path / "internal_html.xlsx"
    truncated.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(InputError, match=r"not a readable XLSX workbook .*damaged or truncated"):
        read_crawl_export(truncated, SITE)


def test_zip_bomb_like_xlsx_is_refused_before_inflating(tmp_path):
    path = tmp_path / "internal_html.xlsx"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/worksheets/sheet1.xml", b"\0" * (64 * 1024**2))
    assert path.stat().st_size < 1024**2
    with pytest.raises(InputError, match="refusing to open: the workbook would inflate to 64 MiB"):
        read_crawl_export(path, SITE)


def test_duplicate_headers(tmp_path):
    header = ["Address", "Title 1", "Title 1"]
    path = write_export(tmp_path / "internal_html.csv", header, [["https://www.example.com/", "a", "b"]])
    with pytest.raises(InputError, match=r"duplicate header: 'Title 1' appears 2 times \(columns 2, 3\)"):
        read_crawl_export(path, SITE)


def test_legacy_xls_is_refused(tmp_path):
    path = tmp_path / "internal_html.xls"
    path.write_bytes(b"\xd0\xcf\x11\xe0" + b"\0" * 100)
    with pytest.raises(InputError, match=r"old binary \.xls format is not supported"):
        read_crawl_export(path, SITE)


def test_column_map_to_missing_header(tmp_path):
    path = write_export(tmp_path / "internal_html.csv", SF_HEADER, ROWS)
    with pytest.raises(
        InputError, match="column_map maps 'title' to 'Headline', but the file has no such column"
    ):
        read_crawl_export(path, SITE, column_map={"title": "Headline"})
    with pytest.raises(InputError, match="column_map names an unknown field 'titel'"):
        read_crawl_export(path, SITE, column_map={"titel": "Title 1"})


def test_links_export_needs_source_and_destination(tmp_path):
    path = write_export(
        tmp_path / "all_inlinks.csv",
        ["Type", "Source", "Anchor"],
        [["Hyperlink", "https://www.example.com/", "x"]],
    )
    with pytest.raises(InputError, match=r"no target url column.*'Destination'"):
        read_links_export(path, SITE)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_crawl_export(Path(tmp_path / "nope.csv"), SITE)
