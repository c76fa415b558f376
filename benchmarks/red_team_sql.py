"""Red team for the analysts' shell: every escape we know of, tried against `interlink sql` and, as the
baseline, against the plain read-only shell on the same snapshot (`duckdb -readonly`, how `interlink sql`
opened it before). Each attack runs on fresh copies of a warehouse and its snapshot; a row says whether it
was refused, what the shell said, and whether any file changed or appeared.

    python -m benchmarks.red_team_sql [--warehouse data/interlink.duckdb]

The warehouse copied is `make run`'s when it exists (else an empty one with every table). The tests run the
same attacks (test_sql_shell.py).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import ROOT, print_table

# Placeholders in an attack: {warehouse} and {snapshot} (the copies), {scratch} (their folder).
ATTACKS = {
    "COPY over the warehouse": "COPY (SELECT 1) TO '{warehouse}' (FORMAT csv);",
    "COPY over the snapshot": "COPY (SELECT 1) TO '{snapshot}' (FORMAT csv);",
    "COPY to a new file": "COPY (SELECT * FROM graph.link_plan) TO '{scratch}/leak.csv';",
    "EXPORT DATABASE": "EXPORT DATABASE '{scratch}/export';",
    "read_csv of /etc/passwd": "SELECT * FROM read_csv('/etc/passwd');",
    "read_text of a system file": "SELECT * FROM read_text('/etc/hostname');",
    "read_blob of the warehouse": "SELECT * FROM read_blob('{warehouse}');",
    "glob over /etc": "SELECT * FROM glob('/etc/*');",
    "sniff_csv of /etc/passwd": "SELECT * FROM sniff_csv('/etc/passwd');",
    "a file by its name": "SELECT * FROM '/etc/passwd';",
    "a remote file": "SELECT * FROM read_parquet('https://example.com/x.parquet');",
    "ATTACH the warehouse": "ATTACH '{warehouse}' AS w;",
    "ATTACH a new file": "ATTACH '{scratch}/new.duckdb' AS n;",
    "INSTALL an extension": "INSTALL httpfs;",
    "LOAD an extension": "LOAD httpfs;",
    "turn external access on": "SET enable_external_access = true;",
    "reset external access": "RESET enable_external_access;",
    "unlock the configuration": "SET lock_configuration = false;",
    "allow every folder": "SET allowed_directories = ['/'];",
    "profile output to a file": "PRAGMA profile_output = '{scratch}/profile.json';",
    "read an environment variable": "SELECT getenv('HOME');",
    "CREATE TABLE": "CREATE TABLE graph.mine AS SELECT 1 AS a;",
    "DROP TABLE": "DROP TABLE graph.link_plan;",
    "DELETE rows": "DELETE FROM graph.link_plan;",
    "a persistent secret": "CREATE PERSISTENT SECRET s (TYPE s3, KEY_ID 'k', SECRET 'v');",
    "the UI server": "CALL start_ui();",
    ".shell": ".shell touch {scratch}/pwned",
    ".system": ".system touch {scratch}/pwned",
    ".sh": ".sh touch {scratch}/pwned",
    ".open the warehouse": ".open {warehouse}\nCREATE TABLE pwned AS SELECT 1;",
    ".output to a file": ".output {scratch}/out.txt\nSELECT 42;",
    ".once to a file": ".once {scratch}/once.txt\nSELECT 42;",
    ".log to a file": ".log {scratch}/log.txt\nSELECT 42;",
    ".read a file": ".read /etc/passwd",
    ".import a file": ".import /etc/passwd passwd",
    ".cd": ".cd /",
    ".excel": ".excel",
}
# what DuckDB says when it refuses an attack (the snapshot is open read-only: writes are refused too)
REFUSALS = (
    "disabled by configuration",
    "disabled through configuration",
    "cannot be used in -safe mode",
    "configuration has been locked",
    "read-only mode",
    "Table with name /etc/passwd does not exist",  # safe mode reads no file named in FROM
)


@dataclass
class Outcome:
    refused: bool  # the shell said no (REFUSALS) and exited non-zero
    said: str  # its first line of error output
    changed: list[str]  # files whose bytes changed, or that were removed
    created: list[str]  # files that appeared

    @property
    def harmless(self) -> bool:
        return self.refused and not self.changed and not self.created


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def attempt(shell: list[str], attack: str, scratch: Path, originals: tuple[Path, Path]) -> Outcome:
    """`attack` typed into `shell` (a command line on {snapshot}) over fresh copies of the warehouse and
    snapshot `originals` in `scratch`: what the shell said, and what changed there."""
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "snapshots").mkdir(parents=True)
    warehouse, snapshot = scratch / "interlink.duckdb", scratch / "snapshots" / "interlink.duckdb"
    shutil.copyfile(originals[0], warehouse)
    shutil.copyfile(originals[1], snapshot)
    before = _digests(scratch)
    names = {"warehouse": warehouse, "snapshot": snapshot, "scratch": scratch}
    command = [part.format(**names) for part in shell]
    done = subprocess.run(
        command,
        input=attack.format(**names) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "INTERLINK_WAREHOUSE": str(warehouse)},
        cwd=ROOT,
    )
    after = _digests(scratch)
    said = next((line for line in done.stderr.splitlines() if line.strip()), "")
    refused = done.returncode != 0 and any(refusal in done.stderr for refusal in REFUSALS)
    return Outcome(
        refused,
        said,
        sorted(name for name, digest in before.items() if after.get(name) != digest),
        sorted(set(after) - set(before)),
    )


def interlink_sql() -> list[str]:
    """`interlink sql` as a user runs it, on the warehouse copy ($INTERLINK_WAREHOUSE)."""
    return [sys.executable, "-m", "interlink_pipeline.cli", "sql"]


def plain_shell() -> list[str]:
    """The baseline: the duckdb shell read-only on the snapshot, as the README once told analysts."""
    from interlink_pipeline.core.warehouse.analyst_shell import shell_binary

    return [shell_binary(), "-readonly", "{snapshot}"]


def warehouse_files(warehouse: Path, folder: Path) -> tuple[Path, Path]:
    """A warehouse and its snapshot to attack copies of: `warehouse` and its snapshot when both exist,
    else an empty warehouse with every table (made in `folder`), standing for both."""
    from interlink_pipeline.core.warehouse.database import connect, ensure_tables
    from interlink_pipeline.core.warehouse.snapshot import snapshot_path

    if warehouse.is_file() and snapshot_path(warehouse).is_file():
        return warehouse, snapshot_path(warehouse)
    empty = folder / "empty.duckdb"
    with connect(empty) as con:
        ensure_tables(con)
    return empty, empty


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", type=Path, default=ROOT / "data" / "interlink.duckdb")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        originals = warehouse_files(args.warehouse, Path(folder))
        scratch = Path(folder) / "scratch"
        rows, harmless, baseline_harmless = [], 0, 0
        for name, attack in ATTACKS.items():
            ours = attempt(interlink_sql(), attack, scratch, originals)
            plain = attempt(plain_shell(), attack, scratch, originals)
            harmless += ours.harmless
            baseline_harmless += plain.harmless
            rows.append([name, _verdict(ours), ours.said[:70], _verdict(plain)])
    print_table(
        f"interlink sql against {len(ATTACKS)} attacks ({originals[0]}): refused with every file unchanged "
        f"{harmless}/{len(ATTACKS)}; the plain read-only shell {baseline_harmless}/{len(ATTACKS)}",
        rows,
        ["attack", "interlink sql", "what it said", "duckdb -readonly"],
    )


def _verdict(outcome: Outcome) -> str:
    if outcome.harmless:
        return "refused, nothing changed"
    damage = [f"changed {', '.join(outcome.changed)}"] if outcome.changed else []
    if outcome.created:
        damage.append(
            f"created {outcome.created[0]}"
            + (f" and {len(outcome.created) - 1} more" if len(outcome.created) > 1 else "")
        )
    return ("refused; " if outcome.refused else "ran; ") + ("; ".join(damage) or "nothing changed")


if __name__ == "__main__":
    main()
