"""The analysts' shell (`interlink sql`) reads every table and nothing else: each known escape is refused
with the warehouse's and the snapshot's bytes unchanged and no file made (benchmarks/red_team_sql.py)."""

import shutil
from pathlib import Path

import pytest

from benchmarks.red_team_sql import ATTACKS, attempt, interlink_sql, warehouse_files
from interlink_pipeline.core.warehouse.analyst_shell import shell_command
from interlink_pipeline_tests.helpers import run_cli


@pytest.fixture(scope="module")
def originals(tmp_path_factory) -> tuple[Path, Path]:
    """An empty warehouse with every table, standing for the warehouse and its snapshot."""
    folder = tmp_path_factory.mktemp("shell")
    return warehouse_files(folder / "none.duckdb", folder)


def test_every_escape_is_refused_and_changes_nothing(originals, tmp_path):
    scratch = tmp_path / "scratch"
    (scratch / "snapshots").mkdir(parents=True)
    snapshot = scratch / "snapshots" / "interlink.duckdb"
    shutil.copyfile(originals[1], snapshot)
    # the command `interlink sql` runs on this warehouse (the CLI itself: the test below)
    shell = shell_command(scratch / "interlink.duckdb", snapshot)
    outcomes = {name: attempt(shell, attack, scratch, originals) for name, attack in ATTACKS.items()}
    assert {name: o for name, o in outcomes.items() if not o.harmless} == {}
    assert len(outcomes) >= 35


def test_the_cli_shell_refuses_through_the_command_and_answers_queries(originals, tmp_path):
    scratch = tmp_path / "scratch"
    for name in ("COPY over the warehouse", ".shell"):
        outcome = attempt(interlink_sql(), ATTACKS[name], scratch, originals)
        assert outcome.harmless, (name, outcome)
    # a query's result alone, as CSV: what an analyst keeps with a redirection
    env = {"INTERLINK_WAREHOUSE": str(scratch / "interlink.duckdb"), "PATH": "/usr/bin:/bin"}
    done = run_cli(env, "sql", "--csv", "SELECT count(*) AS links FROM graph.link_plan")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "links\n0\n"
    missing = run_cli({**env, "INTERLINK_WAREHOUSE": str(tmp_path / "none.duckdb")}, "sql", "SELECT 1")
    assert missing.returncode == 2
    assert missing.stderr == (
        f"error: no snapshot yet at {tmp_path / 'snapshots' / 'none.duckdb'}: materialise a site first "
        "(interlink demo).\n"
    )
