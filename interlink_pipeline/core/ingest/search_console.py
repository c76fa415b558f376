"""Search Console's Performance report, Pages table: each page's clicks, impressions, CTR and average
position, read as Search Console writes them in any language, and refused or trimmed where the numbers are
not what the user meant (a count of "1e5", a CTR over 100%, a position under 1, another host's rows, pages
the crawl never found)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path

import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.crawl_columns import QUERY_FIELDS, SEARCH_CONSOLE_FIELDS
from interlink_pipeline.core.ingest.crawl_exports import LoadedExport, check_site, read_export, whole_count
from interlink_pipeline.core.ingest.tabular_files import open_table
from interlink_pipeline.core.urls import hosts, url_parts

PAGES_TABLE = "Export Search Console's Performance report, Pages table."
# what Search Console never writes, each refused with the first row that has it
IMPOSSIBLE = (
    (pl.col("impressions").is_null() | pl.col("position").is_null(), "no number for impressions or position"),
    (pl.col("clicks_text").is_not_null() & pl.col("clicks").is_null(), "clicks that are no whole count"),
    (pl.col("ctr") > 1, "a CTR over 100%"),
    (pl.col("ctr") < 0, "a negative CTR"),
    (pl.col("position") < 1, "an average position under 1 (the first result is position 1)"),
    (pl.col("clicks") > pl.col("impressions"), "more clicks than impressions"),
)


def _decimal(column: str) -> pl.Expr:
    """A number as Search Console writes it in any language ("7.3", "7,3", "1,234.5", "3.5%", "3,5 %")."""
    text = pl.col(column).str.replace_all(r"[^\d.,-]", "")
    grouped = text.str.contains(r"\.") & text.str.contains(",")  # both: the last one is the decimal's
    whole, fraction = (text.str.extract(r"^(.*)[.,](\d*)$", i) for i in (1, 2))
    number = pl.when(grouped).then(whole.str.replace_all(r"[.,]", "") + "." + fraction).otherwise(text)
    written = pl.col(column).str.contains(r"^\s*-?[\d.,\s\u00a0\u202f]+\s*%?\s*$")  # not "1e5", not "n/a"
    return pl.when(written).then(number.str.replace(",", ".").cast(pl.Float64, strict=False))


def read_search_console(
    path: Path,
    site: str,
    *,
    column_map: dict[str, str] | None = None,
    encoding: str | None = None,
    sheet: str | None = None,
    loaded_at: datetime | None = None,
) -> LoadedExport:
    """raw.search_console from the Pages table of Search Console's Performance report (its CSV, or the
    Pages sheet of its workbook): counts with thousands separators, CTR as "3.5%" or a share, positions with
    a decimal point or comma. Refused: another site's export, the Queries table, a row with a number
    Search Console never writes (IMPOSSIBLE); left out with a count in the warning: rows of another host,
    and a page listed twice but its row with the most impressions."""
    path = Path(path)
    try:
        export = read_export(path, site, SEARCH_CONSOLE_FIELDS, column_map, encoding, sheet, None, loaded_at)
    except InputError:
        if _queries_table(path, encoding, sheet):
            raise InputError(
                f"{path}: this is the Queries table of Search Console's Performance report (a query per row, "
                f"no page). {PAGES_TABLE}"
            ) from None
        raise
    check_site(export.frame, site, path, what="Search Console export")
    percent = pl.col("ctr").str.contains("%").fill_null(False)
    frame = export.frame.with_columns(
        pl.col("clicks").alias("clicks_text"),
        *(whole_count(c).alias(c) for c in ("clicks", "impressions")),
        (_decimal("ctr") / pl.when(percent).then(100.0).otherwise(1.0)).round(6).alias("ctr"),
        _decimal("position").alias("position"),
    )
    for impossible, what in IMPOSSIBLE:
        bad = frame.filter(impossible.fill_null(False))
        if bad.height:
            row = bad.row(0, named=True)
            raise InputError(
                f"{path}: {bad.height} of {frame.height} rows have {what} (row {row['row_number']}: "
                f"{row['url']}). {PAGES_TABLE}"
            )
    on_site = (hosts(frame["url"]) == site).fill_null(False)
    foreign = frame.filter(~on_site)
    keyed = frame.filter(on_site).drop("clicks_text")
    keyed = keyed.with_columns(url_parts(keyed["url"])["url_key"].alias("key"))
    kept = (
        keyed.sort(["impressions", "row_number"], descending=[True, False])
        .unique("key", keep="first")
        .sort("row_number")
        .drop("key")
    )
    said = []
    if foreign.height:
        example = foreign["url"][0]
        said.append(
            f"{foreign.height} rows of another host are left out (row {foreign['row_number'][0]}: {example})"
        )
    if repeated := keyed.height - kept.height:
        said.append(f"{repeated} rows list a page already listed; the row with the most impressions of each "
                    "page is kept")  # fmt: skip
    return replace(export, frame=kept, warning=f"{path.name}: {'; '.join(said)}." if said else None)


def _queries_table(path: Path, encoding: str | None, sheet: str | None) -> bool:
    """Whether the file is a table of queries without pages (the Performance report's Queries table)."""
    query = next(f for f in QUERY_FIELDS if f.name == "query")
    try:
        open_table(path, query, encoding=encoding, sheet=sheet)
    except InputError:
        return False
    return True


def crawled_rows(export: LoadedExport, crawled: pl.Series, path: Path) -> LoadedExport:
    """The export's rows of pages the crawl found (`crawled`: their url_key); the rest left out and counted
    in the warning, and none at all refused: Search Console of another property, or of a site the crawl
    does not cover, would raise pages nobody can link."""
    keys = url_parts(export.frame["url"])["url_key"]
    found = keys.is_in(crawled.implode())
    if not found.any():
        raise InputError(
            f"{path}: none of its {export.frame.height:,} pages is in the site's crawl (first: "
            f"{export.frame['url'][0]}). Export Search Console for the property the crawl covers."
        )
    left = int((~found).sum())
    if not left:
        return export
    said = f"{left:,} of its {export.frame.height:,} pages are not in the crawl and are left out"
    warning = f"{export.warning[:-1]}; {said}." if export.warning else f"{path.name}: {said}."
    return replace(export, frame=export.frame.filter(found), warning=warning)
