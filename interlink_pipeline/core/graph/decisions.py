"""Editors' decisions about planned links: each planned link's stable id, and the decisions of a file
(decision_files.read_decisions) as rows of the site's pages, or of the decisions folder, file by file.

A file is refused whole, with every row that is wrong named, when it names URLs that are not the site's
pages, gives one link two decisions, or gives a link id that is not the link of its URLs (what the file
itself says wrong: decision_files).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.graph.decided_links import SKETCH_TEXT, with_decided_context
from interlink_pipeline.core.graph.decision_files import SHOWN, listed, read_decisions
from interlink_pipeline.core.ingest.inbox import DecisionFolder
from interlink_pipeline.core.ingest.tabular_files import file_digest
from interlink_pipeline.core.invariants import Invariant
from interlink_pipeline.core.urls import stable_ids, url_parts
from interlink_pipeline.core.warehouse.contract import empty_frame
from interlink_pipeline.core.warehouse.site_tables import SiteTables


def link_ids(site: str, source_page_ids: pl.Series, target_page_ids: pl.Series) -> pl.Series:
    """Each link's stable id: the same site and pages (the same URLs) give the same id in every plan."""
    keys = pl.lit(f"{site}|") + source_page_ids.cast(pl.String) + "|" + target_page_ids.cast(pl.String)
    return stable_ids(pl.select(keys.alias("link_id")).to_series()).alias("link_id")


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
    rows = decisions.with_row_index("order").with_columns(
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


@dataclass
class FolderDecisions:
    """graph.link_decisions after reading a site's decisions/ folder, and what the reading did."""

    rows: pl.DataFrame  # every row kept (history included) and those read now
    read: list[str] = field(default_factory=list)  # files read now: new, or edited since they were read
    unchanged: int = 0  # files read before, the same content now
    refused: list[str] = field(default_factory=list)  # "<name>: <why>": not read, or their content refused
    repeated: list[str] = field(default_factory=list)  # files whose content another file has: read once
    gone: list[str] = field(default_factory=list)  # "<name>: …": files no longer in the folder, withdrawn


def folder_decisions(
    tables: SiteTables, site: str, folder: DecisionFolder, stored: pl.DataFrame, now: datetime
) -> FolderDecisions:
    """Read what is new in a site's decisions folder against the rows `stored` (graph.link_decisions). A file
    is known by its content: one read before with the same content is not read again; an edited one is read
    again, its earlier version's rows kept as history (superseded_at: now) and its new rows standing; one
    with another file's content is read once. A file refused (its content, or an entry the folder does not
    read) changes nothing: its earlier version's rows stand. A file gone withdraws its rows."""
    present = {path.name for path in folder.files} | {name for name, _ in folder.refused}
    rows = stored.filter(pl.col("source_file").is_in(list(present)))
    current = rows.filter(pl.col("superseded_at").is_null())
    versions = dict(current.select("source_file", "file_digest").unique("source_file").iter_rows())
    result = FolderDecisions(rows, refused=[f"{name}: {why}" for name, why in folder.refused])
    result.gone = _withdrawn(stored.filter(~pl.col("source_file").is_in(list(present))))
    context: tuple[pl.DataFrame, pl.DataFrame] | None = None  # the pages and the plan, read once if needed
    seen: dict[str, str] = {}  # content digest -> the file first found with it
    new: list[pl.DataFrame] = []
    for path in folder.files:
        digest = file_digest(path)
        if digest in seen:
            result.repeated.append(f"{path.name}: the same content as {seen[digest]}, read once")
            continue
        seen[digest] = path.name
        if path.name in versions and versions[path.name] in (digest, None):
            result.unchanged += 1
            if versions[path.name] is None:  # read before versions were kept: this is that version
                result.rows = _with_digest(result.rows, path.name, digest)
            continue
        if context is None:
            context = (
                tables.read_site("staging.pages", site, ["page_id", *SKETCH_TEXT]),
                tables.read_site("graph.link_plan", site, ["link_id", "reason"]),
            )
        try:
            new.append(_file_version(path, site, digest, context))
        except InputError as exc:
            standing = current.filter(pl.col("source_file") == path.name).height
            kept = f"; its earlier version's {standing:,} decisions stand" if path.name in versions else ""
            result.refused.append(f"{exc}{kept}")
            continue
        result.read.append(path.name)
        if path.name in versions:
            result.rows = _superseded(result.rows, path.name, now)
    empty = empty_frame("graph.link_decisions")
    result.rows = pl.concat(
        [frame.select(empty.columns) for frame in (empty, result.rows, *new)],
        how="vertical_relaxed",
    )
    return result


DECISION_INVARIANTS = {
    "link_decisions_files_read": "Every entry of the site's decisions/ folder was read as decisions: one "
    "refused (not a regular file, or content that is not a decisions file) is named with why, and its "
    "earlier version's decisions stand.",
}


def decision_invariants(read: FolderDecisions) -> list[Invariant]:
    """DECISION_INVARIANTS on a reading of the folder: a refusal is a warning, never a failed run."""
    figures = {"refused": read.refused[:SHOWN], "files_read_now": len(read.read)}
    return [Invariant("link_decisions_files_read", not read.refused, figures, blocking=False)]


def _file_version(
    path: Path, site: str, digest: str, context: tuple[pl.DataFrame, pl.DataFrame]
) -> pl.DataFrame:
    """graph.link_decisions rows of one version of a decisions file (its content `digest`), with what was
    decided on (`context`: the pages with their text, the plan's reasons); InputError when refused."""
    decided = decision_rows(
        site,
        read_decisions(path, site),
        context[0]["page_id"],
        path.name,
        datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(tzinfo=None),
    )
    return with_decided_context(decided, *context).with_columns(
        pl.lit(digest).alias("file_digest"), pl.lit(None, dtype=pl.Datetime("us")).alias("superseded_at")
    )


def _withdrawn(rows: pl.DataFrame) -> list[str]:
    """What removing files from the folder withdrew (their `rows`), a line per file: an editor who removed
    one by mistake learns it, and that putting it back restores its decisions."""
    standing = rows.filter(pl.col("superseded_at").is_null()).group_by("source_file").len()
    standing = standing.sort("source_file")
    return [
        f"{name}: no longer in the decisions folder, so its {count:,} "
        f"{'decision is' if count == 1 else 'decisions are'} withdrawn (put the file back to restore them)"
        for name, count in standing.iter_rows()
    ]


def _superseded(rows: pl.DataFrame, name: str, now: datetime) -> pl.DataFrame:
    """The rows of file `name`'s current version marked superseded (`now`): an edited version stands."""
    return rows.with_columns(
        pl.when((pl.col("source_file") == name) & pl.col("superseded_at").is_null())
        .then(pl.lit(now, dtype=pl.Datetime("us")))
        .otherwise(pl.col("superseded_at"))
        .alias("superseded_at")
    )


def _with_digest(rows: pl.DataFrame, name: str, digest: str) -> pl.DataFrame:
    return rows.with_columns(
        pl.when(pl.col("source_file") == name)
        .then(pl.lit(digest))
        .otherwise(pl.col("file_digest"))
        .alias("file_digest")
    )


def _refuse_unknown_pages(rows: pl.DataFrame, page_ids: pl.Series, site: str, source_file: str) -> None:
    known = page_ids.implode()
    unknown = pl.concat(
        [
            rows.filter(~pl.col(f"{end}_valid") | ~pl.col(f"{end}_page_id").is_in(known)).select(
                "order", "at", pl.col(f"{end}_url").alias("url")
            )
            for end in ("source", "target")
        ]
    ).sort("order")
    if unknown.height:
        raise InputError(
            f"{source_file}: {unknown['url'].n_unique()} URL(s) are not pages of {site} in its latest crawl "
            "(a page the crawl excluded, or a typo?): " + listed(unknown, lambda r: f"{r['at']}: {r['url']}")
        )


def _refuse_inconsistent(rows: pl.DataFrame, source_file: str) -> None:
    """A link id that is not its URLs' link, a page linked to itself, a link decided both ways."""
    wrong = rows.filter(pl.col("link_id").is_not_null() & (pl.col("link_id") != pl.col("computed")))
    if wrong.height:
        raise InputError(
            f"{source_file}: a link id is not the id of its row's URLs (were rows sorted or pasted with only "
            "some of their columns?): "
            + listed(wrong, lambda r: f"{r['at']}: {r['link_id']} (its URLs': {r['computed']})")
        )
    self_links = rows.filter(pl.col("source_page_id") == pl.col("target_page_id"))
    if self_links.height:
        raise InputError(
            f"{source_file}: a page cannot link to itself: " + listed(self_links, lambda r: r["at"])
        )
    twice = rows.filter(pl.col("computed").is_duplicated()).sort("computed", "order")
    conflicting = twice.filter(pl.col("decision").n_unique().over("computed") > 1)
    if conflicting.height:
        raise InputError(
            f"{source_file}: rows decide the same link both ways: "
            + listed(
                conflicting,
                lambda r: f"{r['at']}: {r['decision']} {r['source_url']} -> {r['target_url']}",
            )
        )
