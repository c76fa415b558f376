"""A run's files, published together or not at all.

The report, the spreadsheets and the analysts' snapshot are written into a staging folder of the run
(`<folder>/.staged/<run id>/`) and moved into place by the run's last step, which then writes the
manifest (`published.json`: the run, its crawl, the plan's figures). A run that fails on the way publishes
nothing, so what people open is always one run's plan: the manifest says which, and `interlink status`
reads it. The warehouse's tables may be ahead of it (a run that failed after planning); status says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from interlink_pipeline.core.faults import fault_point
from interlink_pipeline.core.files import replaced_atomically

STAGED = ".staged"
MANIFEST = "published.json"


def staged_folder(folder: Path, run_id: str) -> Path:
    """Where run `run_id` writes what it will publish in `folder`."""
    return folder / STAGED / run_id


def publish(
    folder: Path,
    run_id: str,
    manifest: dict[str, Any],
    snapshot: tuple[Path, Path] | None = None,
    running: Callable[[str], bool] = lambda run_id: False,
) -> list[str]:
    """Move the run's staged files into `folder` and its staged snapshot (staged, final) into place, then
    write the manifest; what other runs staged and never published is removed (in the snapshot's shared
    folder, only that of runs no longer `running`). Returns the files published.

    The files' digests (which files a later run may leave as they are) move after the files, so a run
    killed halfway leaves the old digests, and the next run rewrites every file that changed. The
    snapshot holds every site: one staged before a newer published one (another site's run) is dropped,
    never published over it."""
    staged = staged_folder(folder, run_id)
    files = sorted(staged.iterdir(), key=lambda path: path.name.startswith(".")) if staged.is_dir() else []
    published = []
    for path in files:
        fault_point("publish-file")
        os.replace(path, folder / path.name)
        published.append(path.name)
    if snapshot is not None:
        source, target = snapshot
        if source.exists() and (not target.exists() or target.stat().st_mtime <= source.stat().st_mtime):
            target.parent.mkdir(parents=True, exist_ok=True)
            fault_point("publish-file")
            os.replace(source, target)
            published.append(str(target))
        _remove_staging(source.parent.parent, lambda other: other == run_id or not running(other))
    with replaced_atomically(folder / MANIFEST) as partial:
        partial.write_text(json.dumps({**manifest, "run_id": run_id, "files": published}, indent=1))
    shutil.rmtree(folder / STAGED, ignore_errors=True)  # one run of a site at a time: the rest is stale
    return published


def _remove_staging(root: Path, removable: Callable[[str], bool]) -> None:
    """The staging folders under a shared `root` of the runs `removable` names."""
    for other in root.iterdir() if root.is_dir() else []:
        if removable(other.name):
            shutil.rmtree(other, ignore_errors=True)
    with contextlib.suppress(OSError):  # another run's staging is still there
        root.rmdir()


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """What was last published in `folder` (None before the first publication, or if unreadable)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None
