"""`interlink`: register crawls, run the pipeline for a site, generate synthetic sites.

Runs are recorded in the Dagster instance at $DAGSTER_HOME (default: the project's dagster_home/), so
they show up in `dg dev` next to sensor-triggered runs. This module holds the command line (its
commands, options and examples); `commands` what each command does, `runs` how a site's run is made and
followed, `run_config` the settings a user passes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from interlink_pipeline.cli import commands, reading
from interlink_pipeline.cli.home import PROJECT_ROOT
from interlink_pipeline.cli.run_config import SETTING_FLAGS
from interlink_pipeline.cli.runs import command_instances
from interlink_pipeline.core.environment import environment

SAMPLE_DIR = PROJECT_ROOT / "data" / "sample"

# what a command's --help ends with: one example each
EXAMPLES = {
    "demo": "interlink demo",
    "register": "interlink register crawl/internal_all.csv --links crawl/all_inlinks.csv --run",
    "materialize": "interlink materialize --site www.example.com --config plan.yaml --out-link-budget 15",
    "backtest": "interlink backtest --site www.example.com --fraction 0.2 --seed 1",
    "decisions": "interlink decisions import interlink_plan.xlsx --site www.example.com",
    "generate-site": "interlink generate-site --pages 5000 --host www.shop.example --out data/shop",
    "sites": "interlink sites",
    "status": "interlink status --site www.example.com",
    "sql": 'interlink sql --csv "SELECT * FROM marts.site_health" > site_health.csv',
}
DECISIONS_SUMMARY = "import an editor's decisions (accept, reject) about planned links"
DECISIONS_DESCRIPTION = (
    "Read the plan's workbook or CSV with its decision column filled in (accept, reject, or blank for no "
    "decision; a note column is kept), check it against the site's pages, keep it in the site's decisions/ "
    "folder, write graph.link_decisions and plan again with them (--no-plan: not now). A file with an "
    "unknown URL or decision word, a link decided both ways, another site's URLs or formulas in its cells "
    "is refused whole."
)
SQL_SUMMARY = "a read-only DuckDB shell on the analysts' snapshot (.quit leaves), or one query's result"
SQL_DESCRIPTION = (
    "Open the duckdb shell on the analysts' snapshot (or the lake, read-only) in DuckDB's safe mode: every "
    "table can be queried; nothing can be written, no other file read and no command run (.shell, COPY … "
    "TO, read_csv, ATTACH and INSTALL are refused). Given a query, print its result and leave: redirect it "
    "to keep it."
)
HOME_FREE_BYTES = 1_000_000  # less free space than this on the Dagster home's disk: it is full
# SQLite's words for a Dagster home it cannot write (a full disk, a read-only folder), not a damaged file
HOME_UNWRITABLE = (
    "disk i/o error",
    "database or disk is full",
    "readonly database",
    "unable to open database",
)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from interlink_pipeline.core.errors import InputError

    try:
        _check_locations()
        with command_instances():
            return {
                "demo": commands.demo,
                "register": commands.register,
                "materialize": commands.materialize,
                "backtest": commands.backtest,
                "decisions": commands.decisions,
                "generate-site": commands.generate,
                "sites": reading.sites,
                "status": reading.status,
                "sql": reading.sql,
            }[args.command](args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader left (`| head`): say nothing more, to no one
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:  # a full disk, a folder that cannot be written, a special path
        from interlink_pipeline.core.files import file_problem

        print(f"error: {file_problem(exc)}; nothing more was done.", file=sys.stderr)
        return 2
    except Exception as exc:
        problem = _home_problem(exc)
        if problem is None:
            raise
        print(f"error: {problem}", file=sys.stderr)
        return 2


def _check_locations() -> None:
    """Settings that would write one place twice are refused before any command writes (locations.py)."""
    from interlink_pipeline.core.ingest.inbox import default_inbox
    from interlink_pipeline.core.warehouse.database import default_warehouse
    from interlink_pipeline.core.warehouse.locations import check_locations, project_locations

    check_locations(project_locations(default_warehouse(), default_inbox()))


def _home_problem(exc: Exception) -> Exception | str | None:
    """What an SQLite error of the Dagster home means, as an error naming it: its disk full or its folder
    not writable, or a damaged file that its header did not show (dagster_instance checks those), found by
    SQLite's own check; None for any other exception."""
    import shutil
    import sqlite3

    from interlink_pipeline.cli.home import HOME_DATABASES, damaged_home

    if not isinstance(getattr(exc, "orig", exc), sqlite3.DatabaseError):
        return None
    home = Path(environment().dagster_home)
    said = str(getattr(exc, "orig", exc)).lower()
    if any(words in said for words in HOME_UNWRITABLE):
        full = home.exists() and shutil.disk_usage(home).free < HOME_FREE_BYTES
        why = "its disk is full (df -h shows how much is left)" if full else f"SQLite says: {said}"
        return (
            f"the Dagster home {home} cannot be written: {why}; nothing was run. Free space there (or set "
            "DAGSTER_HOME to a folder on another disk) and run again."
        )
    for path in (home / name for name in HOME_DATABASES if (home / name).exists()):
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)) as con:
                verdict = con.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.DatabaseError as problem:
            verdict = str(problem)
        if verdict != "ok":
            return damaged_home(path, verdict)
    return None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="interlink", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"interlink {_version()}")
    subcommands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, summary: str, description: str | None = None) -> argparse.ArgumentParser:
        return subcommands.add_parser(
            name,
            help=summary,
            description=description or summary,
            epilog=f"example:\n  {EXAMPLES[name]}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    demo = command("demo", "run the whole pipeline on the bundled sample site")
    demo.add_argument("--sample-dir", type=Path, default=SAMPLE_DIR, help="the sample's exports")
    _settings_options(demo)
    register = command("register", "copy a crawl export into the drop folder, add the site")
    register.add_argument("crawl", type=Path, help="Internal: HTML/All export (CSV or XLSX)")
    register.add_argument("--links", type=Path, help="All Inlinks export (optional)")
    register.add_argument(
        "--queries", type=Path, help="page URL -> main query file, e.g. from Search Console"
    )
    register.add_argument("--text", type=Path, help="page-text file: Address + Text (body text per page)")
    register.add_argument(
        "--search-console",
        type=Path,
        help="Search Console > Performance > Pages, exported: pages in striking distance become targets",
    )
    register.add_argument("--site", help="site host (default: the host most URLs are on)")
    register.add_argument(
        "--keep-links",
        action="store_true",
        help="pair a new crawl with the links export registered before (default: set it aside)",
    )
    register.add_argument(
        "--encoding", help="the encoding of files that are not UTF-8 or UTF-16, e.g. cp1252 (stored as UTF-8)"
    )
    register.add_argument("--run", action="store_true", help="materialise the pipeline for the site now")
    _settings_options(register)
    run = command("materialize", "materialise the whole pipeline for a registered site")
    _materialize_command(run)
    backtest = command(
        "backtest",
        "measure the plan on the site's own links: hide some, rebuild, score against them",
        "Hide a seeded share of the site's in-content links, rebuild candidates, ranker and plan without "
        "them, and score the plan against them next to a same-budget title-cosine baseline. The site must "
        "have been materialised (interlink materialize). Each run adds a row to graph.backtest_runs.",
    )
    backtest.add_argument("--site", required=True, help="a materialised site")
    backtest.add_argument("--fraction", type=float, default=0.2, help="share of link pairs hidden (0.2)")
    backtest.add_argument("--seed", type=_seed, default=0, help="which links are hidden (0)")
    _decisions_command(command("decisions", DECISIONS_SUMMARY, DECISIONS_DESCRIPTION))
    _generate_command(command("generate-site", "write a synthetic site's exports and ground truth"))
    command("sites", "list registered sites and their table row counts")
    status = command("status", "a site's last run, its figures and where its files are; every site's")
    status.add_argument("--site", help="a registered site (default: a line for each site)")
    _sql_command(command("sql", SQL_SUMMARY, SQL_DESCRIPTION))
    return parser


def _materialize_command(run: argparse.ArgumentParser) -> None:
    run.add_argument("--site", required=True, help="a registered site (see: interlink sites)")
    run.add_argument(
        "--wait",
        action="store_true",
        help="wait for a run of the site in progress (the inbox sensor's, the UI's) instead of refusing; "
        "nothing is run again when it materialised the registered exports",
    )
    run.add_argument(
        "--resume",
        action="store_true",
        help="run only the steps the site's last run did not finish (killed, or failed), with its settings",
    )
    _settings_options(run)


def _decisions_command(decisions: argparse.ArgumentParser) -> None:
    action = decisions.add_subparsers(dest="action", required=True)
    imported = action.add_parser("import", help="import one decisions file (CSV or XLSX)")
    imported.add_argument("file", type=Path, help="the edited link_plan CSV or interlink_plan.xlsx")
    imported.add_argument("--site", required=True, help="a materialised site")
    imported.add_argument(
        "--no-plan",
        action="store_true",
        help="only record the decisions (default: plan again with them, and publish the plan)",
    )


def _generate_command(generate: argparse.ArgumentParser) -> None:
    generate.usage = "%(prog)s --out FOLDER [--pages N] [--seed N] [--host HOST] [--no-links] [--overwrite]"
    generate.add_argument("--pages", type=_pages, default=1700, help="linkable pages, about (1700)")
    generate.add_argument("--seed", type=_seed, default=7, help="the same seed writes the same site (7)")
    generate.add_argument("--host", default=None, help="the site's host (www.alpinegear.example)")
    generate.add_argument("--out", type=Path, required=True, help="folder to write the exports to")
    generate.add_argument("--no-links", action="store_true", help="skip the All Inlinks export")
    generate.add_argument(
        "--overwrite", action="store_true", help="replace the exports the folder holds (default: refuse)"
    )


def _sql_command(sql: argparse.ArgumentParser) -> None:
    from interlink_pipeline.core.warehouse.analyst_shell import OUTPUT_MODES

    sql.add_argument("query", nargs="?", help="run this query, print its result and leave")
    modes = sql.add_mutually_exclusive_group()
    for mode in OUTPUT_MODES:
        modes.add_argument(
            f"--{mode}", dest="output", action="store_const", const=mode, help=f"print results as {mode}"
        )


def _settings_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--config",
        type=Path,
        help="YAML or TOML run config, as in the launchpad: ops: {link_plan: {config: {max_depth: 3}}}, "
        "resources: {embedder: {config: {model: …}}}",
    )
    for flag, (where, kind) in SETTING_FLAGS.items():
        command.add_argument(flag, type=kind, help=f"sets {'.'.join(where)} (overrides --config)")


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None


def _seed(text: str) -> int:
    """A seed every random generator of the pipeline takes (scikit-learn's stop below 2**32)."""
    from interlink_pipeline.core.numbers import SEED_LIMIT

    value = _whole_number(text)
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"a seed is from 0 to {SEED_LIMIT - 1}, not {text}")
    return value


def _pages(text: str) -> int:
    from interlink_pipeline.sample.site import MIN_PAGES

    value = _whole_number(text)
    if value < MIN_PAGES:
        raise argparse.ArgumentTypeError(
            f"the synthetic site has at least {MIN_PAGES} pages (20 topics with categories), not {text}"
        )
    return value


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("interlink_pipeline")
    except PackageNotFoundError:
        return "unknown (not installed)"
