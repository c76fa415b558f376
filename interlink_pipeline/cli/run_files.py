"""A CLI run's text files (its steps' output, its failure's log), kept in the warehouse's files folder
while the disk allows."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path


class KeptText(io.TextIOBase):
    """A run's text file (its steps' output, its failure's log), made at the first write and kept while the
    disk allows: a refused write (a full disk, a folder that cannot be written) stops the keeping and is
    said (`where`), never raised into the run or over its own message."""

    def __init__(self, path: Path):
        self.path, self.problem, self._file, self._written = path, None, None, False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if self.problem is None and text:
            try:
                if self._file is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._file = self.path.open("w", encoding="utf-8")
                self._file.write(text)
                self._written = True
            except OSError as exc:
                self._give_up(exc)
        return len(text)

    def flush(self) -> None:
        if self._file is not None:
            self._guarded(self._file.flush)

    def close(self) -> None:
        if self._file is not None:
            self._guarded(self._file.close)
            self._file = None
        super().close()

    def _guarded(self, act) -> None:
        try:
            act()
        except OSError as exc:
            self._give_up(exc)

    def _give_up(self, exc: OSError) -> None:
        from interlink_pipeline.core.files import file_problem

        self.problem = file_problem(exc, self.path)
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
        self._file = None
        with contextlib.suppress(OSError):  # nothing of it could be written: no empty file left behind
            if self.path.stat().st_size == 0:
                self.path.unlink()

    def where(self) -> str:
        """The file, or why it was not kept (or that nothing was written to it)."""
        if self.problem is not None:
            return f"not kept: {self.problem}"
        return str(self.path) if self._written else "none"


def run_file(site: str, run_id: str, kind: str) -> Path:
    """A file of a CLI run, in the warehouse's files folder: logs/<site>-<run id>.<kind>."""
    from interlink_pipeline.core.warehouse.database import default_warehouse, files_folder

    return files_folder(default_warehouse()) / "logs" / f"{site}-{run_id}.{kind}"
