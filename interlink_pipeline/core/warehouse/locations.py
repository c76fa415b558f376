"""Where the project's files go (the warehouse, the analysts' snapshot, the drop folder, the exports, a
lake's data folder, Dagster's home), checked against one another before anything is written: two settings
naming one file, or a place inside a folder another step replaces the insides of, would let one overwrite or
delete what the other keeps (a snapshot published over the warehouse). The drop folder, the exports folder
and a lake's data folder own what is inside them (sites' folders, published files, Parquet files); Dagster's
home only its own name."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from interlink_pipeline.core.environment import Environment, environment
from interlink_pipeline.core.errors import InputError
from interlink_pipeline.core.warehouse import lake
from interlink_pipeline.core.warehouse.database import files_folder
from interlink_pipeline.core.warehouse.snapshot import snapshot_path


@dataclass(frozen=True)
class Location:
    """One place the project writes, the setting that names it, whether it is a folder, and whether what
    is inside it is the project's to replace."""

    setting: str
    path: Path
    folder: bool
    owns_inside: bool = False

    def __str__(self) -> str:
        return f"{self.setting} ({self.path})"


def project_locations(warehouse: str, inbox: str, env: Environment | None = None) -> list[Location]:
    """The places a run writes, as the settings name them, resolved (a symbolic link counts as what it
    points at)."""
    env = env or environment()
    places = [("the drop folder (INTERLINK_INBOX)", inbox, True, True)]
    if lake.is_lake(warehouse):
        if env.lake_data_path and "://" not in env.lake_data_path:
            places.append(
                ("the lake's data folder (INTERLINK_LAKE_DATA_PATH)", env.lake_data_path, True, True)
            )
    else:
        places.append(("the warehouse (INTERLINK_WAREHOUSE)", warehouse, False, False))
        snapshot = str(snapshot_path(warehouse))
        places.append(("the analysts' snapshot (INTERLINK_SNAPSHOT_PATH)", snapshot, False, False))
    exports = env.exports_dir or str(files_folder(warehouse) / "exports")
    places.append(("the exports folder (INTERLINK_EXPORTS_DIR)", exports, True, True))
    if env.dagster_home:
        places.append(("Dagster's home (DAGSTER_HOME)", env.dagster_home, True, False))
    return [Location(name, Path(path).expanduser().resolve(), *kind) for name, path, *kind in places]


def check_locations(locations: list[Location]) -> None:
    """Refuse, in one sentence, two settings that name one place, or a place inside a folder that owns
    what is inside it."""
    for first, second in combinations(locations, 2):
        if first.path == second.path:
            raise InputError(
                f"{first} and {second} are the same {'folder' if first.folder else 'file'}: one would "
                f"overwrite the other; set them apart (nothing was written)."
            )
        for inner, outer in ((first, second), (second, first)):
            if outer.owns_inside and inner.path.is_relative_to(outer.path):
                raise InputError(
                    f"{inner} is inside {outer}: what one writes there the other may replace or delete; "
                    f"set them apart (nothing was written)."
                )
