"""The Dagster home the command line runs in: made where missing, its SQLite files checked before Dagster
reads them."""

from __future__ import annotations

import contextlib
from pathlib import Path

from interlink_pipeline.core.environment import environment, use_dagster_home

PROJECT_ROOT = Path(__file__).resolve().parents[2]

# the Dagster home's SQLite files every command reads, and what moving a damaged one aside loses
HOME_DATABASES = {
    "history/runs.db": "the run history",
    "history/runs/index.db": "the registered sites and the index of runs' events (asset history in the UI; "
    "register each site again: its exports are still in the drop folder)",
    "schedules/schedules.db": "the schedules' and sensors' tick history",
}


def dagster_home() -> Path:
    """The Dagster home, made if missing, its databases checked to be SQLite files (a damaged one is said
    before Dagster or a read trips on it)."""
    home = use_dagster_home(PROJECT_ROOT / "dagster_home")
    home.mkdir(parents=True, exist_ok=True)
    from interlink_pipeline.core.files import SQLITE_HEADER
    from interlink_pipeline.defs.sqlite_engines import close_kept_connections

    close_kept_connections()  # a file closed outside SQLite drops this process's SQLite locks on it
    for name in HOME_DATABASES:
        with contextlib.suppress(FileNotFoundError), open(home / name, "rb") as f:
            head = f.read(len(SQLITE_HEADER))
            if head and head != SQLITE_HEADER:
                raise damaged_home(home / name, "not an SQLite database")
    return home


def damaged_home(path: Path, why: str) -> Exception:
    """The error for a damaged database of the Dagster home: which file, and how to recover."""
    from interlink_pipeline.core.errors import InputError

    relative = path.relative_to(Path(environment().dagster_home)).as_posix()
    loses = HOME_DATABASES.get(relative, "what Dagster kept in it")
    return InputError(
        f"the Dagster home's {path} is damaged ({why}); nothing was changed. Move it aside (mv {path} "
        f"{path}.damaged) and run again: Dagster starts a new one, without {loses}. The warehouse keeps "
        "every table."
    )
