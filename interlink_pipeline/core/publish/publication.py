"""A run's files, published together or not at all, in one switch.

Each run writes what it will publish into a release folder of its own, `<exports>/.releases/<site>/<run id>/`
(`staged_folder`). The run's last step completes the release — the files this run left as they were are
linked in from the published release, and the manifest (`published.json`: the run, its crawl, the plan's
figures) is added — and then switches the site's folder, `<exports>/<site>`, a symbolic link, to it with one
rename. People opening `<exports>/<site>/report.html` see the last release or the new one, whole, never a
mix of two runs; `interlink status` reads the manifest through the same link, so it and the report's header
name the same run. The analysts' snapshot (one file, shared by the sites) is replaced just before the switch.

What a user put where the site's folder goes (a file, a folder the pipeline did not write, a symbolic link of
their own) is never replaced: publishing stops in a sentence before anything moves (`foreign_folder`).
Where symbolic links cannot be made (vfat, SMB), the site's folder is a folder, switched to the release by
exchanging the two in one rename (`renameat2`), else by two renames; either way it is said.

A run that fails or is killed on the way publishes nothing; the next publication removes what it left
(and says so), and every release but the published one and the one before it (a reader may still have it
open). The warehouse's tables may be ahead of the published files (a run that failed after planning);
status says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interlink_pipeline.core.environment import environment
from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.faults import fault_point
from interlink_pipeline.core.files import replaced_atomically
from interlink_pipeline.core.publish.exports import DIGESTS_FILE
from interlink_pipeline.core.warehouse.database import files_folder

RELEASES = ".releases"
MANIFEST = "published.json"
BEFORE_RELEASES = "before-releases"  # the name a folder of files from before releases is kept under
REPLACED = "replaced_run"  # the manifest's field naming the release it replaced (removed by the next one)


@dataclass
class Publication:
    """What a publication published and what it cleaned up."""

    files: list[str]  # the release's files (the snapshot's path too, when it was replaced)
    removed: list[str] = field(default_factory=list)  # what runs that never published had left, in words
    switch: str = "link"  # how the site's folder was switched: "link", or what the folder fallback did


def release_root(folder: Path) -> Path:
    """Where the releases of the site whose published folder is `folder` are kept."""
    return folder.parent / RELEASES / folder.name


def staged_folder(folder: Path, run_id: str) -> Path:
    """Where run `run_id` writes what it will publish in `folder`: its release, until it is switched in."""
    return release_root(folder) / run_id


def foreign_folder(folder: Path) -> str | None:
    """What of the user's stands where the site's published folder goes, in words: a file, a symbolic
    link that is not the publication's own, a folder the pipeline did not write; None for the
    publication's own (or nothing)."""
    if folder.is_symlink():
        if Path(os.path.realpath(folder)).is_relative_to(release_root(folder).resolve()):
            return None
        return f"{folder} is a symbolic link of someone's to {os.readlink(folder)}"
    if folder.is_dir():
        ours = (folder / MANIFEST).is_file() or (folder / DIGESTS_FILE).is_file()
        return None if ours else f"{folder} is a folder the pipeline did not write"
    return f"{folder} is a file of someone's" if folder.exists() else None


def published_release(folder: Path) -> Path | None:
    """The release `folder` shows now (None before the first publication, or when it is gone)."""
    if folder.is_symlink():
        target = folder.resolve()
        return target if target.is_dir() else None
    return folder if folder.is_dir() else None  # a folder of files from before releases


def publish(
    folder: Path,
    run_id: str,
    manifest: dict[str, Any],
    snapshot: tuple[Path, Path] | None = None,
    running: Callable[[str], bool] = lambda run_id: False,
    release_name: str | None = None,
) -> Publication:
    """Complete run `run_id`'s release (named `release_name`, else after the run) and switch `folder` to
    it; first move its staged snapshot (staged, final) into place. The snapshot holds every site: one
    staged before a newer published one (another site's run) is dropped, never published over it. What
    other runs staged and never published is removed (in the snapshot's shared folder, only that of runs
    no longer `running`). What a user put in the folder's place stops it before anything moves."""
    if (foreign := foreign_folder(folder)) is not None:
        raise InputError(
            f"{foreign}, not the site's published folder: the plan was not published over it (nothing was "
            "moved). Move it aside, or set INTERLINK_EXPORTS_DIR to another folder, and publish again."
        )
    release = staged_folder(folder, release_name or run_id)
    release.mkdir(parents=True, exist_ok=True)
    before = published_release(folder)
    if before is not None:
        _link_missing(before, release)
    files = sorted(path.name for path in release.iterdir() if path.name != MANIFEST)
    if before == folder:  # a folder published where links cannot be made, or of files from before releases
        replaced = (read_manifest(folder) or {}).get("release") or f"{BEFORE_RELEASES}-{time.time_ns()}"
    else:
        replaced = before.name if before is not None and before.parent == release.parent else None
    with replaced_atomically(release / MANIFEST) as partial:
        record = {**manifest, "run_id": run_id, "release": release.name, "files": files, REPLACED: replaced}
        partial.write_text(json.dumps(record, indent=1))
    published = Publication(files)
    if snapshot is not None:
        source, target = snapshot
        if source.exists() and (not target.exists() or target.stat().st_mtime <= source.stat().st_mtime):
            target.parent.mkdir(parents=True, exist_ok=True)
            fault_point("publish-file")
            os.replace(source, target)
            published.files.append(str(target))
        published.removed += _remove_staged(source.parent.parent, release.name, running)
    fault_point("publish-file")
    published.switch = _switch(folder, release, replaced)
    earlier = (read_manifest(release.parent / replaced) or {}).get(REPLACED) if replaced else None
    published.removed += _remove_releases(release.parent, {release.name, replaced}, earlier, running)
    return published


def _link_missing(before: Path, release: Path) -> None:
    """The published release's files that this run did not write, in its release too (hard links: the
    same bytes, no copy; a copy where the file system has none)."""
    for path in before.iterdir():
        target = release / path.name
        if path.name == MANIFEST or not path.is_file() or target.exists():
            continue
        try:
            os.link(path, target)
        except OSError:
            shutil.copy2(path, target)


def _switch(folder: Path, release: Path, replaced: str | None) -> str:
    """`folder` made a symbolic link to `release` in one rename; where links cannot be made, `folder`
    becomes the release's folder itself (_switch_folder). A folder of files from before releases is first
    kept as the release `replaced` (removed by the next publication). How it was switched, in words."""
    link = folder.parent / f".{folder.name}.{os.getpid()}.link"
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    try:
        os.symlink(os.path.relpath(release, folder.parent), link)
    except OSError as exc:
        if exc.errno not in NO_LINKS:
            raise
        return _switch_folder(folder, release, replaced)
    if folder.is_dir() and not folder.is_symlink():
        os.replace(folder, release.parent / str(replaced))
    os.replace(link, folder)
    return "link"


# what a file system without symbolic links (vfat, SMB, some network mounts) answers when asked for one
NO_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS})
RENAME_EXCHANGE = 2  # renameat2's flag: swap two paths atomically (Linux 3.15, glibc 2.28)
AT_FDCWD = -100


def _switch_folder(folder: Path, release: Path, replaced: str | None) -> str:
    """`folder` becomes the release's folder: swapped with it in one rename where the system can, else
    moved aside and replaced (two renames: for an instant the folder is missing, never half of two runs);
    what was there is kept as the release `replaced`. How it was switched, in words."""
    if not folder.exists():
        os.replace(release, folder)
        return "folder: symbolic links cannot be made here; the release was moved into place in one rename"
    try:
        _exchange(release, folder)
        os.replace(release, release.parent / str(replaced))
        return "folder: symbolic links cannot be made here; the folder and the release swapped in one rename"
    except OSError:
        os.replace(folder, release.parent / str(replaced))
        os.replace(release, folder)
        return (
            "folder: symbolic links cannot be made here, nor two folders swapped; the folder was moved aside "
            "and the release moved in (a reader may have found it missing for an instant)"
        )


def _exchange(first: Path, second: Path) -> None:
    """Swap two paths in one rename (Linux's renameat2 with RENAME_EXCHANGE); OSError where not possible."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    if renameat2(AT_FDCWD, os.fsencode(first), AT_FDCWD, os.fsencode(second), RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def _remove_releases(
    root: Path, kept: set[str | None], earlier: str | None, running: Callable[[str], bool]
) -> list[str]:
    """Every release under `root` but `kept` and those of runs still `running`; what was removed of runs
    that never published, in words (the `earlier` release, published before the one replaced now, goes
    without a word)."""
    removed = []
    for release in sorted(root.iterdir()):
        if release.name in kept or running(release.name):
            continue
        if release.name != earlier:
            removed.append(f"run {release.name}'s files, never published (it failed or was killed)")
        shutil.rmtree(release, ignore_errors=True)
    return removed


def _remove_staged(root: Path, run_id: str, running: Callable[[str], bool]) -> list[str]:
    """The snapshot's staged copies under a shared `root` of runs other than `run_id` no longer `running`,
    in words, and `run_id`'s own (published or dropped)."""
    removed = []
    for other in sorted(root.iterdir()) if root.is_dir() else []:
        if other.name == run_id or not running(other.name):
            if other.name != run_id:
                removed.append(f"run {other.name}'s snapshot copy, never published (it failed or was killed)")
            shutil.rmtree(other, ignore_errors=True)
    with contextlib.suppress(OSError):  # another run's staging is still there
        root.rmdir()
    return removed


def site_folder(warehouse_path: str | Path, site: str) -> Path:
    """Where the site's plan is published: $INTERLINK_EXPORTS_DIR/<site>, else exports/<site> in the
    warehouse's files folder (data/exports/<site>)."""
    root = environment().exports_dir or files_folder(warehouse_path) / "exports"
    return Path(root) / site


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """What was last published in `folder` (None before the first publication, or if unreadable)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None
