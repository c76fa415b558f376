"""The drop folder: `<inbox>/<site>/` holds a site's crawl export and, optionally, its All Inlinks export,
a queries file (page URL -> main query, e.g. a Search Console export) and a page-text file (page URL ->
body text); and `<inbox>/<site>/decisions/` editors' decisions about its planned links (core/graph/decisions).

A file whose name contains "inlink" is the links export; one whose name contains "quer" or "keyword" is
the queries file; one with the word "text" in its name (page_text.csv) is the page-text file; any other
.csv/.tsv/.txt/.xlsx file is the crawl export. When a folder holds several of
a kind, the most recently modified one is used.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from interlink_pipeline.core.environment import Environment, environment
from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.files import replaced_atomically
from interlink_pipeline.core.ingest.tabular_files import as_utf8, file_digest
from interlink_pipeline.core.urls import normalize_host, url_parts

if TYPE_CHECKING:
    from interlink_pipeline.core.ingest.crawl_exports import LoadedExport

DEFAULT_INBOX = "data/inbox"
EXPORT_SUFFIXES = {".csv", ".tsv", ".txt", ".xlsx", ".xlsm"}
# A file modified more recently than this may still be being copied in; it waits for the next scan.
SETTLE_SECONDS = 2.0
SUPERSEDED = "superseded"  # a site's exports that a newer crawl replaced, kept but no longer read
DECISIONS = "decisions"  # a site's decisions files, every one kept: the history of its editors' decisions


def default_inbox(env: Environment | None = None) -> str:
    return (env or environment()).inbox or DEFAULT_INBOX


@dataclass(frozen=True)
class SiteDrop:
    site: str
    crawl_file: Path | None
    links_file: Path | None
    queries_file: Path | None = None
    text_file: Path | None = None
    warnings: tuple[str, ...] = ()  # what registering them noticed (e.g. text for pages not crawled)
    search_console_file: Path | None = None


@dataclass(frozen=True)
class InboxScan:
    drops: list[SiteDrop]
    problems: list[str]  # what was skipped and why (folders that are not hosts, stray files)


def export_kind(path: Path) -> str:
    """crawl, links, queries, text or search_console, from the file name."""
    name = path.name.lower()
    if "inlink" in name:
        return "links"
    if "console" in name:
        return "search_console"
    if "quer" in name or "keyword" in name:
        return "queries"
    if "text" in re.split(r"[^a-z]+", path.stem.lower()):
        return "text"
    return "crawl"


def _set_aside(links: Path) -> str:
    """Move an earlier crawl's links export to superseded/ (kept, and no longer read); what was done."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(links.stat().st_mtime))
    target = links.parent / SUPERSEDED / f"{links.stem}.{stamp}{links.suffix}"
    target.parent.mkdir(exist_ok=True)
    os.replace(links, target)
    return (
        f"{links.name} came with an earlier crawl, so it was moved to {target} rather than paired with this "
        "one; register this crawl's links export with --links, or keep the old one with --keep-links."
    )


def site_folder(root: str | Path, site: str) -> Path:
    return Path(root) / normalize_host(site)


def latest_exports(folder: Path, *, settled_before: float | None = None) -> dict[str, Path]:
    """The newest file of each kind (crawl, links, queries, text, search_console) in `folder`, ignoring
    hidden and temp files."""
    newest: dict[str, tuple[float, Path]] = {}
    for path in folder.iterdir() if folder.is_dir() else []:
        if (
            path.name.startswith((".", "~$"))
            or path.suffix.lower() not in EXPORT_SUFFIXES
            or not path.is_file()
        ):
            continue
        mtime = path.stat().st_mtime
        if settled_before is not None and mtime > settled_before:
            continue
        kind = export_kind(path)
        if kind not in newest or mtime > newest[kind][0]:
            newest[kind] = (mtime, path)
    return {kind: path for kind, (_, path) in newest.items()}


def registered_crawl_id(root: str | Path, site: str) -> str | None:
    """The crawl id (the file's digest, as raw.crawl_pages records it) of the crawl export registered for
    `site` now: the newest in its folder."""
    crawl = latest_exports(site_folder(root, site)).get("crawl")
    return file_digest(crawl) if crawl else None


def scan_inbox(
    root: str | Path, *, settle_seconds: float = SETTLE_SECONDS, now: float | None = None
) -> InboxScan:
    """Every site folder with a settled crawl export."""
    root = Path(root)
    if not root.is_dir():
        return InboxScan([], [])
    settled_before = (now if now is not None else time.time()) - settle_seconds
    drops: list[SiteDrop] = []
    problems: list[str] = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        if not entry.is_dir():
            problems.append(f"{entry.name}: files belong in a site folder, e.g. {root}/www.example.com/")
            continue
        try:
            site = normalize_host(entry.name)
        except InputError as exc:
            problems.append(f"{entry.name}/: {exc}")
            continue
        if site != entry.name:
            problems.append(f"{entry.name}/: rename the folder to its normalised host '{site}'")
            continue
        files = latest_exports(entry, settled_before=settled_before)
        if "crawl" in files:
            drops.append(
                SiteDrop(
                    site,
                    files["crawl"],
                    files.get("links"),
                    files.get("queries"),
                    files.get("text"),
                    search_console_file=files.get("search_console"),
                )
            )
    return InboxScan(drops, problems)


@dataclass(frozen=True)
class DecisionFolder:
    """A site's decisions/ folder as a run reads it."""

    files: list[Path]  # the regular files to read, oldest first (by modification time, then name)
    refused: list[tuple[str, str]]  # everything else in it: (name, why it is not read)


def decision_files(root: str | Path, site: str, *, settled_before: float | None = None) -> DecisionFolder:
    """The site's decisions files: the regular files with a table's suffix in its decisions/ folder. The
    folder reads only what was put in it: a symbolic link, a folder, a device or pipe, a hidden file, a
    spreadsheet's lock file or another kind of file is named with why it is not read (a file being copied
    in atomically, and one modified after `settled_before`, wait for the next scan)."""
    folder = site_folder(root, site) / DECISIONS
    if problem := _folder_problem(folder):
        return DecisionFolder([], [(str(folder), problem)])
    found: list[tuple[float, str, Path]] = []
    refused: list[tuple[str, str]] = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.name.startswith(".") and path.name.endswith(".partial"):
            continue  # a copy being written (files.replaced_atomically)
        info = os.lstat(path)
        why = _not_read(path, info.st_mode)
        if why:
            refused.append((path.name, why))
        elif settled_before is None or info.st_mtime <= settled_before:
            found.append((info.st_mtime, path.name, path))
    return DecisionFolder([path for _, _, path in sorted(found)], refused)


def _folder_problem(folder: Path) -> str | None:
    """Why a site's decisions/ path cannot hold decisions files (None: it is a folder, or not there yet)."""
    if folder.is_symlink():
        return "a symbolic link: the decisions folder must be a folder in the drop folder"
    if folder.exists() and not folder.is_dir():
        return "a file, not a folder: move it aside (decisions files go in a folder so named)"
    return None


def _not_read(path: Path, mode: int) -> str | None:
    """Why an entry of a decisions folder is not read (None: it is a decisions file)."""
    if stat.S_ISLNK(mode):
        return (
            "a symbolic link, not read: the folder reads only files put in it (copy the file in, or use "
            "interlink decisions import)"
        )
    if stat.S_ISDIR(mode):
        return "a folder, not read: put decisions files in decisions/ itself"
    if not stat.S_ISREG(mode):
        return "not a regular file (a device, pipe or socket), not read"
    if path.name.startswith("~$"):
        return "a spreadsheet's lock file (the workbook is open in Excel), not read"
    if path.name.startswith("."):
        return "a hidden file (its name starts with a dot), not read"
    if path.suffix.lower() not in EXPORT_SUFFIXES:
        return f"not a {', '.join(sorted(EXPORT_SUFFIXES))} file, not read"
    return None


def place_decisions(root: str | Path, site: str, src: Path) -> Path:
    """A decisions file copied into the site's decisions/ folder (atomically), under a name that says when
    it was imported: files of the same name imported twice are both kept."""
    folder = site_folder(root, site) / DECISIONS
    if problem := _folder_problem(folder):
        raise InputError(f"{folder} is {problem}; nothing was imported.")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{datetime.now(UTC):%Y%m%d-%H%M%S-%f}-{src.name}"
    with replaced_atomically(target) as tmp:
        shutil.copyfile(src, tmp)
    return target


def resolve_export(root: str | Path, site: str, name: str) -> Path:
    """A file named in config, which must lie inside the site's drop folder (symlinks resolved)."""
    folder = site_folder(root, site).resolve()
    candidate = Path(name)
    resolved = (candidate if candidate.is_absolute() else folder / candidate).resolve()
    if not resolved.is_relative_to(folder):
        raise InputError(
            f"'{name}' is outside the drop folder {folder}; put the export in that folder and name it "
            "relative to it."
        )
    if not resolved.is_file():
        raise InputError(f"'{name}' is not a file in the drop folder {folder}.")
    return resolved


def validate_export(path: Path, kind: str, site: str) -> LoadedExport | None:
    """Raise InputError when the run would refuse this export (read with the default settings); the export
    as read, with what the run will warn of (None for a queries file)."""
    from interlink_pipeline.core.ingest.crawl_exports import (
        read_crawl_export,
        read_links_export,
        read_page_text,
        read_queries_export,
    )
    from interlink_pipeline.core.ingest.search_console import read_search_console

    if not path.is_file():
        raise InputError(f"{path}: file not found.")
    if path.suffix.lower() not in EXPORT_SUFFIXES:
        raise InputError(f"{path}: expected a .csv, .tsv, .txt or .xlsx export.")
    if kind == "queries":
        read_queries_export(path)
        return None
    reader = {
        "crawl": read_crawl_export, "links": read_links_export, "text": read_page_text,
        "search_console": read_search_console,
    }[kind]  # fmt: skip
    return reader(path, site)


def text_coverage(crawl: pl.DataFrame, text: pl.DataFrame, path: Path) -> str | None:
    """A page-text file must describe the crawl's pages: none of them is refused, some of them warned of
    (with an example of a URL the crawl lacks)."""
    crawled = url_parts(crawl["url"])["url_key"].drop_nulls()
    unknown = text.filter(~url_parts(text["url"])["url_key"].is_in(crawled).fill_null(False))
    if unknown.height == text.height:
        raise InputError(
            f"{path.name}: none of its {text.height} pages is in the crawl (e.g. {unknown['url'][0]}); "
            "is it the text of another crawl?"
        )
    if unknown.height:
        return (
            f"{path.name}: {unknown.height} of its {text.height} pages are not in the crawl (e.g. "
            f"{unknown['url'][0]}); their text is not used."
        )
    return None


# the name an export is stored under when its own name does not say its kind
STORED_STEMS = {"crawl": "internal_html", "links": "all_inlinks", "queries": "queries", "text": "page_text",
                "search_console": "search_console"}  # fmt: skip


def _placed(src: Path, readable: Path, kind: str, folder: Path) -> Path:
    """The export copied (as read: UTF-8) into the drop folder atomically, named so its kind is recognised."""
    name = src.name if export_kind(src) == kind else f"{STORED_STEMS[kind]}{src.suffix.lower()}"
    target = folder / name
    with replaced_atomically(target) as tmp:
        shutil.copyfile(readable, tmp)
    return target


def register_crawl(
    root: str | Path,
    site: str,
    crawl_src: Path,
    links_src: Path | None = None,
    queries_src: Path | None = None,
    text_src: Path | None = None,
    *,
    search_console_src: Path | None = None,
    keep_links: bool = False,
    encoding: str | None = None,
) -> SiteDrop:
    """Copy exports into the site's drop folder (atomically: a temp file renamed into place), named so that
    each is recognised as its kind. Every file is read and checked first, with the readers the pipeline
    uses: a file the run would refuse is refused here, and the previous registration stays as it was.

    A new crawl registered without links would be paired with the links export of the crawl before it
    (pages added since look orphaned, pages removed keep links): that export is moved to superseded/
    unless `keep_links`. A file that is not UTF-8 or UTF-16 is read as `encoding` and stored as UTF-8,
    so the run reads it with its default settings."""
    folder = site_folder(root, site)
    before = latest_exports(folder)
    earlier_crawl = file_digest(before["crawl"]) if "crawl" in before else None
    sources = [
        (Path(src), kind)
        for src, kind in (
            (crawl_src, "crawl"),
            (links_src, "links"),
            (queries_src, "queries"),
            (text_src, "text"),
            (search_console_src, "search_console"),
        )
        if src is not None
    ]
    with contextlib.ExitStack() as stack:
        readable = [(src, stack.enter_context(as_utf8(src, encoding)), kind) for src, kind in sources]
        read = {kind: validate_export(utf8, kind, normalize_host(site)) for _, utf8, kind in readable}
        warnings = [export.warning for export in read.values() if export is not None]
        if text_src is not None:
            warnings.append(text_coverage(read["crawl"].frame, read["text"].frame, Path(text_src)))
        folder.mkdir(parents=True, exist_ok=True)
        placed = {kind: _placed(src, utf8, kind, folder) for src, utf8, kind in readable}
    new_crawl = file_digest(placed["crawl"]) != earlier_crawl  # the same crawl again changes nothing
    if links_src is None and not keep_links and "links" in before and new_crawl:
        warnings.append(_set_aside(before["links"]))
    return SiteDrop(
        normalize_host(site),
        placed["crawl"],
        placed.get("links"),
        placed.get("queries"),
        placed.get("text"),
        tuple(w for w in warnings if w),
        placed.get("search_console"),
    )
