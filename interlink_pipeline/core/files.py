"""Writing a file so that readers see the old one or the new one, never half of either."""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from interlink_pipeline.core.errors import InputError

SQLITE_HEADER = b"SQLite format 3\x00"  # the first bytes of every SQLite database file
# what an operating system's refusal to read or write a file means for the user, and what to do
FILE_PROBLEMS = {
    errno.ENOSPC: "the disk is full: free space on it (df -h shows how much is left) and run again",
    errno.EDQUOT: "the disk quota is used up: free space or raise the quota, and run again",
    errno.EROFS: "the file system is read-only: remount it read-write, or use another folder",
    errno.EACCES: "permission denied: give this user access to it, or use another folder",
    errno.EPERM: "not permitted: the file or folder is immutable or append-only (lsattr shows i or a; chattr "
    "-i undoes it), or a special file",
    errno.ENOENT: "no such file or folder",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "it is a folder, not a file",
    errno.EEXIST: "it already exists",
    errno.ENAMETOOLONG: "the name is too long for the file system",
    errno.EMFILE: "too many open files: raise the limit (ulimit -n) and run again",
    errno.EIO: "the disk reported an input/output error: check the disk",
}


@contextlib.contextmanager
def replaced_atomically(path: Path, suffix: str = "") -> Iterator[Path]:
    """A temporary path beside `path` to write; renamed onto `path` when the block succeeds, removed
    whatever happens. Partial files that a killed process left (its pid is in the name) are removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.*.partial"):
        pid = stale.name[len(path.name) + 2 :].split(".", 1)[0]
        if pid.isdigit() and not process_alive(int(pid)):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
    prefix = f".{path.name}.{os.getpid()}."
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=suffix + ".partial")
    os.close(fd)
    os.chmod(tmp, shareable_mode())  # mkstemp's 0600 would hide the file from a web server or a daemon
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def shareable_mode() -> int:
    """The mode a new file gets from open(): 0666 less the process's umask (read from /proc where it can
    be: setting the umask to read it would race with other threads creating files)."""
    try:
        status = Path("/proc/self/status").read_text()
        mask = int(next(line.split()[1] for line in status.splitlines() if line.startswith("Umask:")), 8)
    except (OSError, StopIteration):
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask


def file_problem(exc: OSError, path: Path | None = None) -> str:
    """A refused file operation as one sentence: the path (the error's, else `path`), what is wrong and what
    to do; an error raised with a sentence of its own and no error number (a missing dbt manifest) is that
    sentence."""
    if exc.errno is None and exc.filename is None and exc.args:
        return str(exc)
    where = exc.filename if exc.filename is not None else path or "a file"
    what = FILE_PROBLEMS.get(exc.errno) if exc.errno is not None else None
    return f"{where}: {what or exc.strerror or type(exc).__name__} ({exc.strerror or exc.errno})"


def process_alive(pid: int) -> bool:
    """Whether a process of this machine with that id still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def save_state(kept: object, path: Path) -> None:
    """What a step keeps for its next run (a fitted ranker, an index…), pickled, written whole or not."""
    import joblib

    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced_atomically(path) as tmp:
        joblib.dump(kept, tmp)


def load_state(path: Path, kind: type) -> object | None:
    """What save_state kept at `path` when it is a `kind`; None when missing, unreadable or another kind."""
    import joblib

    if not path.is_file():
        return None
    try:
        kept = joblib.load(path)
    except Exception:  # a truncated or foreign file is as good as none: it is measured and written again
        return None
    return kept if isinstance(kept, kind) else None


# the first bytes of a DuckDB file's header: a checksum, then the magic
_DUCKDB_MAGIC, _MAGIC_AT = b"DUCK", 8
_OTHER_FORMATS = {
    SQLITE_HEADER: "a SQLite database",
    b"PAR1": "a Parquet file",
    b"PK\x03\x04": "a ZIP file",
}


def file_format(path: Path, what: str = "the warehouse") -> str | None:
    """What the file at `path` holds when it is not a DuckDB database ('a SQLite database', 'not DuckDB'),
    read off its first bytes before DuckDB reads it (it may take it for another format and look for an
    extension to read that); None for a DuckDB file, an empty one or none."""
    try:
        with path.open("rb") as f:
            head = f.read(64)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot open {what} {path}: {exc.strerror}.") from None
    if not head or head[_MAGIC_AT : _MAGIC_AT + len(_DUCKDB_MAGIC)] == _DUCKDB_MAGIC:
        return None
    return next((name for magic, name in _OTHER_FORMATS.items() if head.startswith(magic)), "not DuckDB")
