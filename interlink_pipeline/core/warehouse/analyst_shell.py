"""The analysts' DuckDB shell (`interlink sql`): the snapshot, or a lake read-only, in DuckDB's safe mode.

Safe mode turns off the shell's commands that reach the machine (`.shell`, `.system`, `.open`, `.output`,
`.read`, `.import`, `.cd`, `.log`) and every file and network access from SQL (`COPY … TO`, `read_csv`,
`ATTACH`, `INSTALL`, `LOAD`, `getenv`), and locks the configuration so no `SET` turns them back on. What is
open when it starts stays readable: the snapshot file, or a lake attached read-only with reads allowed in
its data folder alone. The warehouse itself is never what the shell opens.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.files import file_format
from interlink_pipeline.core.warehouse import lake

# what a one-off query prints (`interlink sql --csv "SELECT …" > file.csv`): the shell's output modes
OUTPUT_MODES = ("csv", "json", "markdown")


def shell_binary() -> str:
    """The duckdb shell of the pinned duckdb-cli package (its binary, not the package's Python wrapper,
    which changes a setting after the shell starts: a locked configuration refuses it); else one on PATH."""
    spec = importlib.util.find_spec("duckdb_cli")
    if spec is not None and spec.origin is not None:
        bundled = Path(spec.origin).with_name("duckdb")
        if bundled.is_file():
            return str(bundled)
    found = shutil.which("duckdb")
    if found is None:
        raise InputError("the duckdb shell is not installed: make install (it pins duckdb-cli).")
    return found


def shell_command(
    location: str | Path, snapshot: Path, query: str | None = None, output: str | None = None
) -> list[str]:
    """The shell's command line: the snapshot read-only (or the lake at `location`, read-only) in safe
    mode; `query` run and the shell left at once, printed as `output` (OUTPUT_MODES, default a table).
    ~/.duckdbrc is not read: it would run before safe mode."""
    command = [shell_binary(), "-no-init", *([f"-{output}"] if output else [])]
    if lake.is_lake(location):
        command += ["-cmd", lake.analyst_commands(location), "-cmd", ".safe_mode on"]
    elif snapshot.is_file():
        if (
            kind := file_format(snapshot, "the analysts' snapshot")
        ) is not None:  # DuckDB would fetch an extension to open it
            raise InputError(
                f"{snapshot} is not a DuckDB file ({kind}): INTERLINK_SNAPSHOT_PATH names the analysts' "
                "snapshot, which the pipeline writes; nothing was opened."
            )
        command += ["-safe", "-readonly", str(snapshot)]
    else:
        raise InputError(f"no snapshot yet at {snapshot}: materialise a site first (interlink demo).")
    return [*command, "-c", query] if query is not None else command
