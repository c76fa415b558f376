"""Crawl exports into canonical raw tables (`raw.crawl_pages`, `raw.crawl_links`, `raw.page_text`), and the
Search Console export into `raw.search_console`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.ingest.crawl_columns import (
    CRAWL_FIELDS,
    LINK_FIELDS,
    QUERY_FIELDS,
    TEXT_FIELDS,
    Field,
)
from interlink_pipeline.core.ingest.link_graph import followed_hyperlinks
from interlink_pipeline.core.ingest.tabular_files import (
    file_digest,
    mapped_positions,
    open_table,
    read_columns,
)
from interlink_pipeline.core.urls import hosts, url_parts

INT_FIELDS = ("status_code", "crawl_depth", "word_count", "inlinks", "unique_inlinks")
TRUE_WORDS = ("true", "yes", "1", "verdadero", "si", "sí", "vrai", "oui", "wahr", "ja", "vero")
# A crawl is accepted for a site when at least this share of its URLs are on the site's host.
MIN_SITE_SHARE = 0.5
# a count as exports write it: digits, or digits grouped in thousands by a comma, point, space or apostrophe
_COUNT = r"^\s*(?:\d+|\d{1,3}(?:[,.'\s\u00a0\u202f]\d{3})+)\s*$"


@dataclass(frozen=True)
class LoadedExport:
    """One export read into its raw table, with what a user wants to know about the reading."""

    frame: pl.DataFrame
    crawl_id: str
    source_file: str
    mapped: dict[str, str]  # canonical field -> header it was read from
    ignored_columns: list[str]
    header_index: int
    rows_without_url: int = 0  # skipped
    warning: str | None = None  # what the reading changed that a user should know of


def read_crawl_export(
    path: Path,
    site: str,
    *,
    column_map: dict[str, str] | None = None,
    encoding: str | None = None,
    sheet: str | None = None,
    extra_columns: list[str] | None = None,
    loaded_at: datetime | None = None,
) -> LoadedExport:
    """Read an Internal: HTML/All export (or another crawler's, via `column_map`) for `site`."""
    loaded = read_export(
        path, site, CRAWL_FIELDS, column_map, encoding, sheet, extra_columns or [], loaded_at
    )
    check_site(loaded.frame, site, path)
    _check_copies(loaded.frame, path)
    return loaded


def _check_copies(frame: pl.DataFrame, path: Path) -> None:
    """A crawler lists each address once (a few repeats are kept as duplicates); a file whose repeated rows
    outnumber its addresses is copies of rows, not a crawl, and would replace the site's plan by one of a
    handful of pages."""
    addresses = frame["url"].n_unique()
    repeated = frame.height - addresses
    if repeated > addresses:
        most = frame["url"].value_counts(sort=True).row(0)
        raise InputError(
            f"{Path(path).name}: {repeated:,} of its {frame.height:,} rows repeat an address given above "
            f"({_clip(most[0])} {most[1]:,} times) and it names only {addresses:,} distinct "
            f"{'address' if addresses == 1 else 'addresses'}: a crawler lists each page once, so this is "
            "not one crawl's export; export the crawl again."
        )


# Below this share of links with a Link Position, a links export is thin: it is read, with a warning.
THIN_POSITIONS = 0.5


def read_links_export(
    path: Path,
    site: str,
    *,
    column_map: dict[str, str] | None = None,
    encoding: str | None = None,
    sheet: str | None = None,
    loaded_at: datetime | None = None,
) -> LoadedExport:
    """Read an All Inlinks export: the site's existing link graph. Refused when its links are not from the
    site's pages or not to them (an External export), or when nothing says where on the page a link sits
    (no Link Position column, or an empty one): without it every menu link would count as an editor's
    in-content link."""
    loaded = read_export(path, site, LINK_FIELDS, column_map, encoding, sheet, None, loaded_at)
    mapped = "link_position" in loaded.mapped
    if not mapped or (loaded.frame["link_position"].str.strip_chars().fill_null("") == "").all():
        problem = "its Link Position column is empty" if mapped else "no Link Position column"
        raise InputError(
            f"{path}: {problem}, so menu links cannot be told from in-content links. Export Bulk Export > "
            "Links > All Inlinks from Screaming Frog (which fills it), or name the column that holds it in "
            "the links config's column_map (link_position)."
        )
    check_site(loaded.frame, site, path, column="source_url", what="links export")
    _check_destinations(loaded.frame, site, path)
    # A missing Follow value means the link is followed (older exports have no such column).
    follow = pl.col("follow").str.to_lowercase().is_in(TRUE_WORDS) | pl.col("follow").is_null()
    frame = loaded.frame.with_columns(follow.alias("follow"))
    return replace(loaded, frame=frame, warning=_thin_positions(frame, Path(path)))


def _thin_positions(links: pl.DataFrame, path: Path) -> str | None:
    """A warning when most links have no Link Position: where a link sits is unknown, so it is not taken for
    an editor's in-content link, and the plan learns from, and is measured on, the few whose position is."""
    filled = int((links["link_position"].str.strip_chars().fill_null("") != "").sum())
    if filled >= THIN_POSITIONS * links.height:
        return None
    content = int(followed_hyperlinks(links)["content"].sum())
    return (
        f"{path.name}: Link Position is filled for only {filled:,} of its {links.height:,} links "
        f"({filled / links.height:.1%}): the others count as navigation (where they sit is unknown), so the "
        f"plan learns from, and is measured on, {content:,} in-content link(s), and ranks with the default "
        "weights if that is too few. Export Bulk Export > Links > All Inlinks again from Screaming Frog (it "
        "fills Link Position for every link)."
    )


def read_page_text(
    path: Path,
    site: str,
    *,
    column_map: dict[str, str] | None = None,
    encoding: str | None = None,
    loaded_at: datetime | None = None,
) -> LoadedExport:
    """A page-text file (Address + Text, e.g. a body-text extraction): every row a page URL of `site`,
    each URL once; a row that breaks this fails the whole file, naming the row."""
    loaded = read_export(path, site, TEXT_FIELDS, column_map, encoding, None, None, loaded_at)
    frame = loaded.frame
    parts = url_parts(frame["url"])
    bad = frame.filter(~parts["url_valid"].fill_null(False)).head(1)
    if bad.height:
        raise InputError(
            f"{Path(path).name}: row {bad['row_number'][0]}: '{_clip(bad['url'][0])}' is not a page URL; "
            "every row needs the page's address and its text."
        )
    frame = frame.with_columns(parts["url_key"].alias("url_key"))
    twice = frame.filter(pl.col("url_key").is_duplicated()).head(2)
    if twice.height:
        rows = " and ".join(str(r) for r in twice["row_number"])
        raise InputError(
            f"{Path(path).name}: rows {rows} both give the text of {twice['url'][0]}; keep one row per page."
        )
    check_site(frame, site, path)
    text, marked_up = without_markup(frame["text"])
    warning = (
        f"{Path(path).name}: {marked_up:,} of its {frame.height:,} rows held HTML markup (tags, scripts, "
        "styles): removed, the words kept."
        if marked_up
        else None
    )
    return replace(loaded, frame=frame.drop("url_key").with_columns(text), warning=warning)


# Markup a text extraction kept: a row with a closing tag, a comment or an element that runs or shows
# something (script, style, img, iframe, svg) has its markup removed; "a<b and c>d" in plain text stays.
_HAS_MARKUP = r"(?i)</[a-z][a-z0-9]*\s*>|<!--|<(?:script|style|img|iframe|svg|object|embed)\b"
_MARKUP = r"(?is)<(script|style)\b.*?</(?:script|style)\s*>|<!--.*?-->|</?[a-z][a-z0-9-]*(?:\s[^<>]*)?/?>"


def without_markup(text: pl.Series) -> tuple[pl.Series, int]:
    """`text` with HTML markup removed from the rows that hold it, and how many rows did."""
    marked = text.str.contains(_HAS_MARKUP).fill_null(False)
    if not marked.any():
        return text, 0
    stripped = text.str.replace_all(_MARKUP, " ").str.replace_all(r"\s+", " ").str.strip_chars()
    return pl.select(pl.when(marked).then(stripped).otherwise(text).alias(text.name)).to_series(), int(
        marked.sum()
    )


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def read_queries_export(
    path: Path,
    *,
    column_map: dict[str, str] | None = None,
    encoding: str | None = None,
    sheet: str | None = None,
) -> pl.DataFrame:
    """url, query, clicks, impressions from a queries file (numbers with thousands separators allowed)."""
    table = open_table(Path(path), QUERY_FIELDS[0], column_map=column_map, encoding=encoding, sheet=sheet)
    positions = mapped_positions(table, QUERY_FIELDS, column_map)
    frame = read_columns(table, positions)
    for name in ("clicks", "impressions"):
        value = whole_count(name) if name in frame.columns else (pl.lit(None, dtype=pl.Int64))
        frame = frame.with_columns(value.alias(name))
    return frame.select("url", "query", "clicks", "impressions")


def whole_count(column: str) -> pl.Expr:
    """A count as exports write it ("1,204", "23.118", "1 204"); null for anything else ("1e5", "-3")."""
    text = pl.col(column)
    return pl.when(text.str.contains(_COUNT)).then(
        text.str.replace_all(r"\D", "").cast(pl.Int64, strict=False)
    )


def infer_site(path: Path, *, column_map: dict[str, str] | None = None, sheet: str | None = None) -> str:
    """The host most of the export's URLs are on (used when a crawl is registered without a site)."""
    table = open_table(path, CRAWL_FIELDS[0], column_map=column_map, sheet=sheet)
    positions = mapped_positions(table, CRAWL_FIELDS, column_map)
    found = hosts(read_columns(table, {"url": positions["url"]})["url"]).drop_nulls()
    if found.is_empty():
        raise InputError(f"{path}: no http(s) URLs found, so the site cannot be inferred; pass the site.")
    return found.value_counts(sort=True)["host"][0]


def read_export(
    path: Path,
    site: str,
    fields: tuple[Field, ...],
    column_map: dict[str, str] | None,
    encoding: str | None,
    sheet: str | None,
    extra_columns: list[str] | None,
    loaded_at: datetime | None,
) -> LoadedExport:
    """Shared reader; `extra_columns` is None for exports without an `extra` JSON column."""
    path = Path(path)
    probe = next(f for f in fields if f.required)
    table = open_table(path, probe, column_map=column_map, encoding=encoding, sheet=sheet)
    positions = mapped_positions(table, fields, column_map)
    extra_positions = _extra_positions(table.headers, extra_columns or [], positions, path)
    frame = read_columns(table, {**positions, **extra_positions})
    missing = [f.name for f in fields if f.name not in positions]
    frame = frame.with_columns(pl.lit(None, dtype=pl.String).alias(name) for name in missing)
    frame = frame.with_columns(
        pl.col(name).str.extract(r"^\s*(-?\d+)", 1).cast(pl.Int32, strict=False)
        for name in INT_FIELDS
        if name in frame.columns
    )
    meta = [
        pl.lit(site).alias("site"),
        pl.lit(file_digest(path)).alias("crawl_id"),
        pl.lit(loaded_at or datetime.now(UTC))
        .dt.replace_time_zone(None)
        .dt.cast_time_unit("us")
        .alias("loaded_at"),
        pl.lit(path.name).alias("source_file"),
    ]
    frame = frame.with_row_index("row_number", offset=1).with_columns(pl.col("row_number").cast(pl.Int64))
    # A row without a URL is not a page (or a link): it is skipped and counted, never stored half-empty.
    without_url = frame[probe.name].null_count()
    frame = frame.filter(pl.col(probe.name).is_not_null())
    if frame.is_empty():
        raise InputError(
            f"{path}: none of the {without_url} rows has a value in its "
            f"'{table.headers[positions[probe.name]]}' column."
        )
    columns = [*meta, "row_number", *[f.name for f in fields]]
    if extra_columns is not None:
        extra = (
            pl.struct(
                [pl.col(name).alias(name.removeprefix("extra::")) for name in extra_positions]
            ).struct.json_encode()
            if extra_positions
            else pl.lit(None, dtype=pl.String)
        )
        columns.append(extra.alias("extra"))
    frame = frame.select(columns)
    mapped = {name: table.headers[pos] for name, pos in positions.items()}
    used = set(positions.values()) | set(extra_positions.values())
    ignored = [h for i, h in enumerate(table.headers) if i not in used]
    return LoadedExport(
        frame, frame["crawl_id"][0], path.name, mapped, ignored, table.header_index, without_url
    )


def _extra_positions(
    headers: list[str], extra_columns: list[str], positions: dict[str, int], path: Path
) -> dict[str, int]:
    found: dict[str, int] = {}
    for name in extra_columns:
        matches = [i for i, h in enumerate(headers) if h == name]
        if not matches:
            raise InputError(f"{path}: extra column '{name}' is not in the file. Columns found: {headers}.")
        if matches[0] not in positions.values():
            found[f"extra::{name}"] = matches[0]
    return found


def _check_destinations(links: pl.DataFrame, site: str, path: Path) -> None:
    """A links export whose links mostly leave the site is not the site's link graph: most likely an
    External links export, registered by mistake."""
    found, on_site, top = host_counts(links["target_url"], site)
    if found and on_site / found < MIN_SITE_SHARE:
        raise InputError(
            f"{path}: only {on_site} of these {found} links go to a page of '{site}'; most go to "
            f"'{top[0]}' ({top[1]}), as in an External links export. Register Bulk Export > Links > All "
            "Inlinks: the links between the site's own pages."
        )


def check_site(frame: pl.DataFrame, site: str, path: Path, column: str = "url", what: str = "crawl") -> None:
    found, on_site, top = host_counts(frame[column], site)
    if not found:
        raise InputError(f"{path}: none of the {frame.height} URLs is an http(s) URL.")
    if on_site / found < MIN_SITE_SHARE:
        raise InputError(
            f"{path}: this {what} is not for site '{site}': only {on_site} of {found} URLs are on that "
            f"host; most are on '{top[0]}' ({top[1]}). Register the file under the right site."
        )


def host_counts(urls: pl.Series, site: str) -> tuple[int, int, tuple[str, int] | None]:
    """How many of `urls` are http(s) URLs, how many of those are on `site`, and the commonest host with
    its count."""
    found = hosts(urls).drop_nulls()
    top = found.value_counts(sort=True).row(0) if found.len() else None
    return found.len(), int((found == site).sum()), top
