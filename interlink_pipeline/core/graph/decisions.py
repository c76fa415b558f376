"""Editors' decisions about planned links: each planned link's stable id, and the decisions files (the plan's
CSV or workbook with its `decision` column filled in, or any file with the same columns) read and checked.

A file is refused whole, with every row that is wrong named, when it is for another site, names URLs that
are not the site's pages, gives one link two decisions, says something other than accept or reject, gives a
link id that is not the link of its URLs, or is a workbook whose cells hold formulas (their values are what
the editor's spreadsheet last computed, not what the editor typed). A blank decision is no decision.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.graph.decided_links import SKETCH_TEXT, with_decided_context
from interlink_pipeline.core.ingest.crawl_columns import Field
from interlink_pipeline.core.ingest.crawl_exports import MIN_SITE_SHARE, host_counts
from interlink_pipeline.core.ingest.tabular_files import (
    XLSX_SUFFIXES,
    NotUnicodeText,
    detect_encoding,
    mapped_positions,
    open_table,
    read_columns,
)
from interlink_pipeline.core.urls import stable_ids, url_parts
from interlink_pipeline.core.warehouse.site_tables import SiteTables
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
assert set(DECISION_WORDS.values()) == set(DECISIONS)


def link_ids(site: str, source_page_ids: pl.Series, target_page_ids: pl.Series) -> pl.Series:
    """Each link's stable id: the same site and pages (the same URLs) give the same id in every plan."""
    keys = pl.lit(f"{site}|") + source_page_ids.cast(pl.String) + "|" + target_page_ids.cast(pl.String)
    return stable_ids(pl.select(keys.alias("link_id")).to_series()).alias("link_id")


def read_decisions(path: Path, site: str) -> pl.DataFrame:
    """row_number, link_id, source_url, target_url, decision, note: the rows of a decisions file that say
    accept or reject, checked (see the module's docstring); InputError naming every wrong row else."""
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
    table = open_table(path, DECISION_FIELDS[0])
    positions = mapped_positions(table, DECISION_FIELDS, None)
    rows = read_columns(table, positions).with_row_index("row_number", offset=1)
    rows = rows.with_columns(pl.col("row_number").cast(pl.Int64))
    for name in ("link_id", "note"):
        if name not in rows.columns:
            rows = rows.with_columns(pl.lit(None, dtype=pl.String).alias(name))
    _check_site(rows, site, path)
    decided = rows.filter(pl.col("decision").is_not_null()).with_columns(
        pl.col("decision").str.to_lowercase().replace_strict(DECISION_WORDS, default=None).alias("meaning")
    )
    unknown = decided.filter(pl.col("meaning").is_null())
    if unknown.height:
        raise InputError(
            f"{path.name}: a decision is accept or reject (or blank for none), not "
            + _listed(unknown, lambda r: f"row {r['row_number']}: '{r['decision']}'")
        )
    decided = decided.with_columns(pl.col("meaning").alias("decision")).drop("meaning")
    missing = decided.filter(pl.col("source_url").is_null() | pl.col("target_url").is_null())
    if missing.height:
        raise InputError(
            f"{path.name}: a decision needs both the source and the target URL: "
            + _listed(missing, lambda r: f"row {r['row_number']}")
        )
    return decided.select("row_number", "link_id", "source_url", "target_url", "decision", "note")


def decision_rows(
    site: str,
    decisions: pl.DataFrame,
    page_ids: pl.Series,
    source_file: str,
    decided_at: datetime,
) -> pl.DataFrame:
    """graph.link_decisions rows of a file's decisions (read_decisions), by the site's page ids. Refused
    (InputError): URLs that are not pages of the site (`page_ids`), a link id that is not its URLs' link,
    one link decided twice."""
    source, target = url_parts(decisions["source_url"]), url_parts(decisions["target_url"])
    rows = decisions.with_columns(
        stable_ids(source["url_key"].fill_null("")).alias("source_page_id"),
        stable_ids(target["url_key"].fill_null("")).alias("target_page_id"),
        source["url_valid"].alias("source_valid"),
        target["url_valid"].alias("target_valid"),
    )
    _refuse_unknown_pages(rows, page_ids, site, source_file)
    rows = rows.with_columns(link_ids(site, rows["source_page_id"], rows["target_page_id"]).alias("computed"))
    _refuse_inconsistent(rows, source_file)
    return rows.unique("computed", keep="last", maintain_order=True).select(
        pl.lit(site).alias("site"),
        "source_page_id",
        "target_page_id",
        pl.col("computed").alias("link_id"),
        "source_url",
        "target_url",
        "decision",
        "note",
        pl.lit(decided_at, dtype=pl.Datetime("us")).alias("decided_at"),
        pl.lit(source_file).alias("source_file"),
        "row_number",
    )


def decisions_from_files(tables: SiteTables, site: str, paths: list[Path]) -> list[pl.DataFrame]:
    """graph.link_decisions rows of each new decisions file (its import time the file's), with what was
    decided on (decided_links.with_decided_context); the pages' text is read only when there is a file."""
    if not paths:
        return []
    pages = tables.read_site("staging.pages", site, ["page_id", *SKETCH_TEXT])
    plan = tables.read_site("graph.link_plan", site, ["link_id", "reason"])
    return [
        with_decided_context(
            decision_rows(
                site,
                read_decisions(path, site),
                pages["page_id"],
                path.name,
                datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(tzinfo=None),
            ),
            pages,
            plan,
        )
        for path in paths
    ]


def _refuse_unknown_pages(rows: pl.DataFrame, page_ids: pl.Series, site: str, source_file: str) -> None:
    known = page_ids.implode()
    unknown = pl.concat(
        [
            rows.filter(~pl.col(f"{end}_valid") | ~pl.col(f"{end}_page_id").is_in(known)).select(
                "row_number", pl.col(f"{end}_url").alias("url")
            )
            for end in ("source", "target")
        ]
    ).sort("row_number")
    if unknown.height:
        raise InputError(
            f"{source_file}: {unknown['url'].n_unique()} URL(s) are not pages of {site} in its latest crawl "
            "(a page the crawl excluded, or a typo?): "
            + _listed(unknown, lambda r: f"row {r['row_number']}: {r['url']}")
        )


def _refuse_inconsistent(rows: pl.DataFrame, source_file: str) -> None:
    """A link id that is not its URLs' link, a page linked to itself, a link decided both ways."""
    wrong = rows.filter(pl.col("link_id").is_not_null() & (pl.col("link_id") != pl.col("computed")))
    if wrong.height:
        raise InputError(
            f"{source_file}: a link id is not the id of its row's URLs (were rows sorted or pasted with only "
            "some of their columns?): "
            + _listed(wrong, lambda r: f"row {r['row_number']}: {r['link_id']} (its URLs': {r['computed']})")
        )
    self_links = rows.filter(pl.col("source_page_id") == pl.col("target_page_id"))
    if self_links.height:
        raise InputError(
            f"{source_file}: a page cannot link to itself: "
            + _listed(self_links, lambda r: f"row {r['row_number']}")
        )
    twice = rows.filter(pl.col("computed").is_duplicated()).sort("computed", "row_number")
    conflicting = twice.filter(pl.col("decision").n_unique().over("computed") > 1)
    if conflicting.height:
        raise InputError(
            f"{source_file}: rows decide the same link both ways: "
            + _listed(
                conflicting,
                lambda r: f"row {r['row_number']}: {r['decision']} {r['source_url']} -> {r['target_url']}",
            )
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


def _listed(rows: pl.DataFrame, line) -> str:
    shown = [line(row) for row in rows.head(SHOWN).iter_rows(named=True)]
    more = f"; and {rows.height - SHOWN} more" if rows.height > SHOWN else ""
    return "; ".join(shown) + more + "."
