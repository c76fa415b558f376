"""`interlink`: register crawls, run the pipeline for a site, generate synthetic sites.

Runs are recorded in the Dagster instance at $DAGSTER_HOME (default: the project's dagster_home/), so
they show up in `dagster dev` next to sensor-triggered runs.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DIR = PROJECT_ROOT / "data" / "sample"
# a CLI run's process, so the next one can tell a run still working from one that was killed
PID_TAG, HOST_TAG = "interlink/pid", "interlink/host"


# what a command's --help ends with: one example each
EXAMPLES = {
    "demo": "interlink demo",
    "register": "interlink register crawl/internal_all.csv --links crawl/all_inlinks.csv --run",
    "materialize": "interlink materialize --site www.example.com --config plan.yaml --out-link-budget 15",
    "backtest": "interlink backtest --site www.example.com --fraction 0.2 --seed 1",
    "generate-site": "interlink generate-site --pages 5000 --host www.shop.example --out data/shop",
    "sites": "interlink sites",
    "status": "interlink status --site www.example.com",
    "sql": "interlink sql   (then: SELECT * FROM marts.site_health;)",
}
# flags for the settings people change most: flag -> (where in the Dagster run config, type)
SETTING_FLAGS = {
    "--text-source": (("ops", "pages", "config", "text_source"), str),
    "--model": (("resources", "embedder", "config", "model"), str),
    "--out-link-budget": (("ops", "link_plan", "config", "out_link_budget"), int),
    "--max-depth": (("ops", "link_plan", "config", "max_depth"), int),
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from interlink_pipeline.core.errors import InputError

    try:
        return {
            "demo": _demo,
            "register": _register,
            "materialize": _materialize,
            "backtest": _backtest,
            "generate-site": _generate,
            "sites": _sites,
            "status": _status,
            "sql": _sql,
        }[args.command](args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="interlink", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"interlink {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, summary: str, description: str | None = None) -> argparse.ArgumentParser:
        return commands.add_parser(
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
    register.add_argument("--site", help="site host (default: the host most URLs are on)")
    register.add_argument("--run", action="store_true", help="materialise the pipeline for the site now")
    _settings_options(register)
    run = command("materialize", "materialise the whole pipeline for a registered site")
    run.add_argument("--site", required=True, help="a registered site (see: interlink sites)")
    _settings_options(run)
    backtest = command(
        "backtest",
        "measure the plan on the site's own links: hide some, rebuild, score against them",
        "Hide a seeded share of the site's in-content links, rebuild candidates, ranker and plan without "
        "them, and score the plan against them next to a same-budget title-cosine baseline. The site must "
        "have been materialised (interlink materialize). Each run adds a row to graph.backtest_runs.",
    )
    backtest.add_argument("--site", required=True, help="a materialised site")
    backtest.add_argument("--fraction", type=float, default=0.2, help="share of link pairs hidden (0.2)")
    backtest.add_argument("--seed", type=int, default=0, help="which links are hidden (0)")
    generate = command("generate-site", "write a synthetic site's exports and ground truth")
    generate.add_argument("--pages", type=int, default=1700, help="linkable pages, about (1700)")
    generate.add_argument("--seed", type=int, default=7, help="the same seed writes the same site (7)")
    generate.add_argument("--host", default=None, help="the site's host (www.alpinegear.example)")
    generate.add_argument("--out", type=Path, required=True, help="folder to write the exports to")
    generate.add_argument("--no-links", action="store_true", help="skip the All Inlinks export")
    command("sites", "list registered sites and their table row counts")
    status = command("status", "a site's last run, its figures and where its files are")
    status.add_argument("--site", required=True, help="a registered site")
    command("sql", "open a DuckDB shell on the analysts' snapshot (read-only; .quit leaves)")
    return parser


def _settings_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--config",
        type=Path,
        help="YAML or TOML run config, as in the launchpad: ops: {link_plan: {config: {max_depth: 3}}}, "
        "resources: {embedder: {config: {model: …}}}",
    )
    for flag, (where, kind) in SETTING_FLAGS.items():
        command.add_argument(flag, type=kind, help=f"sets {'.'.join(where)} (overrides --config)")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("interlink_pipeline")
    except PackageNotFoundError:
        return "unknown (not installed)"


def _run_config(args: argparse.Namespace) -> dict:
    """The run config of --config FILE with the setting flags over it; a file that cannot be read, or
    settings the pipeline does not have, are refused before anything runs."""
    from interlink_pipeline.core.errors import InputError

    config: dict = {}
    if args.config is not None:
        config = _read_config_file(args.config)
    for flag, (where, _) in SETTING_FLAGS.items():
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if value is not None:
            node = config
            for key in where[:-1]:
                node = node.setdefault(key, {})
                if not isinstance(node, dict):
                    raise InputError(f"{args.config}: {key} must be a mapping.")
            node[where[-1]] = value
    if config:
        _validate(config, args.config)
    return config


def _read_config_file(path: Path) -> dict:
    import tomllib

    import yaml

    from interlink_pipeline.core.errors import InputError

    if not path.is_file():
        raise InputError(f"{path}: config file not found.")
    text = path.read_text(encoding="utf-8")
    try:
        config = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: not valid {'TOML' if path.suffix == '.toml' else 'YAML'}: {exc}") from None
    if not isinstance(config, dict):
        raise InputError(
            f"{path}: a run config is a mapping (ops: …, resources: …), not {type(config).__name__}."
        )
    return config


def _validate(config: dict, path: Path | None) -> None:
    """Check `config` as the run would: its shape against the job's config schema, then each step's and
    resource's settings against their bounds (which Dagster checks only once the step starts)."""
    import inspect

    from dagster import DagsterInvalidConfigError, validate_run_config
    from pydantic import ValidationError

    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.definitions import defs

    job = defs.resolve_job_def("site_pipeline")
    try:
        validate_run_config(job, config)
        for name, node in (config.get("ops") or {}).items():
            step = inspect.signature(job.graph.node_named(name).definition.compute_fn.decorated_fn)
            if "config" in step.parameters:
                step.parameters["config"].annotation(**(node.get("config") or {}))
        for name, node in (config.get("resources") or {}).items():
            type(defs.resources[name])(**(node.get("config") or {}))
    except DagsterInvalidConfigError as exc:
        problems = "; ".join(error.message for error in exc.errors)
        raise InputError(f"{path or 'the settings'}: {problems}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise InputError(f"{path or 'the settings'}: {exc.title} {problems}") from None


def _instance():
    os.environ.setdefault("DAGSTER_HOME", str(PROJECT_ROOT / "dagster_home"))
    Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    from dagster import DagsterInstance

    return DagsterInstance.get()


def _add_site(site: str) -> None:
    from interlink_pipeline.defs.partitions import site_partitions

    instance = _instance()
    if not instance.has_dynamic_partition(site_partitions.name, site):
        instance.add_dynamic_partitions(site_partitions.name, [site])


def _registered(name: str) -> str:
    """The site `name` names, which `register` must have added: a misspelt name is refused with the
    registered ones, never made a new, empty site."""
    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.core.urls import normalize_host
    from interlink_pipeline.defs.partitions import site_partitions

    site = normalize_host(name)
    known = _instance().get_dynamic_partitions(site_partitions.name)
    if site not in known:
        listed = ", ".join(sorted(known)) or "none yet"
        raise InputError(
            f"'{site}' is not a registered site (registered: {listed}). Register its crawl first: "
            f"interlink register CRAWL --site {site}"
        )
    return site


def _run_site(site: str, steps: list[str] | None = None, run_config: dict | None = None) -> int:
    """Materialise the site's pipeline (or just `steps`) in process and print what was written; one run
    of a site at a time."""
    instance = _instance()
    _release_dead_runs(instance)
    with _site_lock(instance, site):
        return _execute(instance, site, steps, run_config)


def _execute(instance, site: str, steps: list[str] | None, run_config: dict | None) -> int:
    from interlink_pipeline.core.ingest.inbox import default_inbox
    from interlink_pipeline.definitions import defs
    from interlink_pipeline.defs.jobs import step_keys
    from interlink_pipeline.defs.sensors import RUN_KEY_TAG, inbox_run_key

    tags = {"interlink/trigger": "cli", PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}
    key = inbox_run_key(default_inbox(), site) if steps is None else None
    started = time.monotonic()
    job = defs.resolve_job_def("site_pipeline")
    selection = step_keys(defs, steps) if steps else None
    run_id = str(uuid.uuid4())  # known before the run starts, so its events can be followed
    planned = job.get_subset(asset_selection=selection) if selection else job
    with _progress(instance, run_id, len(planned.graph.nodes)):
        result = job.execute_in_process(
            run_id=run_id,
            partition_key=site,
            instance=instance,
            raise_on_error=False,
            # a whole run of the registered exports: the inbox sensor of `make dev` will not run them again
            tags={**tags, RUN_KEY_TAG: key} if key else tags,
            asset_selection=selection,
            # the console gets one line per failure, not Dagster's stack traces: they go to the run's log file
            run_config={**(run_config or {}), "loggers": {"console": {"config": {"log_level": "CRITICAL"}}}},
        )
    seconds = time.monotonic() - started
    if not result.success:
        return _report_failure(instance, result, site, seconds)
    print(f"run {result.run_id} for {site} succeeded in {seconds:.1f}s")
    for event in result.all_events:
        if event.event_type_value == "ASSET_MATERIALIZATION":
            metadata = event.event_specific_data.materialization.metadata
            if "warning" in metadata:
                print(
                    f"warning ({event.asset_key.to_user_string()}): {metadata['warning'].value}",
                    file=sys.stderr,
                )
            if "dagster/row_count" in metadata:
                detail = f"{metadata['dagster/row_count'].value:>10,} rows"
            elif "path" in metadata or "workbook" in metadata:
                detail = str((metadata.get("path") or metadata["workbook"]).value)
            else:
                detail = "built by dbt" if event.asset_key.path[0] in ("marts", "dbt_staging") else ""
            print(f"  {event.asset_key.to_user_string():<32} {detail}")
    _print_where()
    return 0


@contextmanager
def _progress(instance, run_id: str, steps: int) -> Iterator[None]:
    """How far the run is while it goes: a bar with the step running and the time spent in a terminal, a
    line per finished step otherwise (logs, CI)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    terminal = sys.stdout.isatty()
    bar = Progress(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=not terminal,
    )
    task = bar.add_task("starting", total=steps)
    began: dict[str, float] = {}

    def seen(entry, _cursor) -> None:
        event = entry.dagster_event
        if event is None or event.step_key is None:
            return
        if event.event_type_value == "STEP_START":
            began[event.step_key] = time.monotonic()
            bar.update(task, description=event.step_key)
        elif event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED"):
            bar.advance(task)
            done = bar.tasks[0].completed
            took = time.monotonic() - began.get(event.step_key, time.monotonic())
            if not terminal:
                outcome = event.event_type_value.removeprefix("STEP_").lower()
                print(f"  [{done:.0f}/{steps}] {event.step_key}: {outcome} in {took:.1f}s", flush=True)

    instance.watch_event_logs(run_id, None, seen)
    try:
        with bar:
            yield
    finally:
        instance.end_watch_event_logs(run_id, seen)


@contextmanager
def _site_lock(instance, site: str) -> Iterator[None]:
    """Runs of one site never interleave: a second CLI run of the site (the lock file, released by the
    kernel when its holder dies) or a CLI run while the UI or the daemon runs it is refused at once."""
    from dagster import DagsterRunStatus, RunsFilter

    from interlink_pipeline.core.errors import InputError

    busy = f"a run of {site} is already in progress"
    lock_dir = Path(instance.root_directory) / "site_locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"{site}.lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            raise InputError(
                f"{busy} (interlink, process {lock.read().strip() or '?'}); wait for it to finish, then run "
                "again."
            ) from None
        lock.truncate(0)
        lock.write(str(os.getpid()))
        lock.flush()
        in_progress = [DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
        for record in instance.get_run_records(
            RunsFilter(tags={"dagster/partition": site}, statuses=in_progress), limit=1
        ):
            raise InputError(
                f"{busy} (run {record.dagster_run.run_id}, in the UI or the daemon); wait for it to finish, "
                "or cancel it there."
            )
        yield


def _release_dead_runs(instance) -> None:
    """Free the writer-pool slots that no live run holds: those of finished runs, and those of a CLI run on
    this machine whose process is gone (SIGKILL, the OOM killer, a crash), which is marked failed and
    recorded. A slot a live run holds is named, so a waiting user knows what the wait is for."""
    from interlink_pipeline.core.files import process_alive
    from interlink_pipeline.defs.automation import failure_payload
    from interlink_pipeline.defs.tables import WRITER_POOL

    storage = instance.event_log_storage
    for run_id in sorted(storage.get_concurrency_run_ids()):
        run = instance.get_run_by_id(run_id)
        if run is not None and not run.is_finished:
            pid, host = run.tags.get(PID_TAG), run.tags.get(HOST_TAG)
            if pid is None or host != socket.gethostname() or process_alive(int(pid)):
                site = run.tags.get("dagster/partition", "?")
                print(f"waiting: run {run_id} ({site}) holds the {WRITER_POOL} pool", file=sys.stderr)
                continue
            message = f"its process (pid {pid}) is gone: it was killed or crashed before finishing"
            instance.report_run_failed(run, message)
            _record_failure(failure_payload(run, [], message))
            print(f"run {run_id} had stopped: {message}; marked failed, its slots freed", file=sys.stderr)
        storage.free_concurrency_slots_for_run(run_id)


def _record_failure(payload: dict) -> str:
    """Record a failed run in ops.run_failures and post it to the webhook, as the run-failure sensor does;
    what happened, in words (a warehouse that cannot be written cannot keep the record either)."""
    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.core.publish.alerts import record_failure
    from interlink_pipeline.core.warehouse.database import LOCK_TIMEOUT_S, default_duckdb_path
    from interlink_pipeline.defs.automation import FailureAlerts

    alerts = FailureAlerts()
    try:
        _, outcome = record_failure(
            payload, default_duckdb_path(), alerts.webhook_url, alerts.timeout_s, LOCK_TIMEOUT_S
        )
    except InputError as exc:
        return f"not recorded: {exc}"
    return f"recorded in ops.run_failures (webhook: {outcome})"


def _report_failure(instance, result, site: str, seconds: float) -> int:
    """A failed CLI run, as a run anywhere else fails: recorded in ops.run_failures and posted to the
    webhook; the user gets the step and its message, and the path of the full log."""
    from interlink_pipeline.core.warehouse.database import default_duckdb_path
    from interlink_pipeline.defs.automation import failure_payload

    events = result.all_events
    payload = failure_payload(
        instance.get_run_by_id(result.run_id),
        [e for e in events if e.event_type_value == "STEP_FAILURE"],
        None,
    )
    log = Path(default_duckdb_path()).resolve().parent / "logs" / f"{site}-{result.run_id}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as out:
        for event in events:
            out.write(f"{event.event_type_value} {event.step_key or ''} {event.message or ''}\n")
            error = getattr(event.event_specific_data, "error", None)
            if error is not None:
                out.write(error.to_string() + "\n")
    recorded = _record_failure(payload)
    where = f" at {payload['step']}" if payload["step"] else ""
    print(
        f"error: run {result.run_id} for {site} failed{where} after {seconds:.1f}s: {payload['message']}\n"
        f"full log: {log}\n{recorded}",
        file=sys.stderr,
    )
    return 1


def _print_where() -> None:
    from interlink_pipeline.core.ingest.inbox import default_inbox
    from interlink_pipeline.core.warehouse.database import default_duckdb_path

    print(f"warehouse: {Path(default_duckdb_path()).resolve()}")
    print(f"drop folder: {Path(default_inbox()).resolve()}")
    print("UI: make dev, then open http://127.0.0.1:3000")


def _register_files(
    crawl: Path,
    links: Path | None,
    site: str | None,
    queries: Path | None = None,
    text: Path | None = None,
) -> str:
    from interlink_pipeline.core.ingest.crawl_exports import infer_site
    from interlink_pipeline.core.ingest.inbox import default_inbox, register_crawl
    from interlink_pipeline.core.urls import normalize_host

    site = normalize_host(site) if site else infer_site(crawl)
    drop = register_crawl(default_inbox(), site, crawl, links, queries, text)
    _add_site(site)
    extras = [str(f) for f in (drop.links_file, drop.queries_file, drop.text_file) if f]
    print(f"registered {site}: {drop.crawl_file}" + "".join(f" + {f}" for f in extras))
    for warning in drop.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return site


def _demo(args: argparse.Namespace) -> int:
    crawl = args.sample_dir / "internal_all.csv"
    links = args.sample_dir / "all_inlinks.csv"
    config = _run_config(args)
    site = _register_files(crawl, links if links.exists() else None, None)
    return _run_site(site, run_config=config)


def _register(args: argparse.Namespace) -> int:
    config = _run_config(args)
    site = _register_files(args.crawl, args.links, args.site, args.queries, args.text)
    if args.run:
        return _run_site(site, run_config=config)
    print(f"the inbox sensor starts its run (make dev), or run it now: interlink materialize --site {site}")
    return 0


def _materialize(args: argparse.Namespace) -> int:
    config = _run_config(args)
    return _run_site(_registered(args.site), run_config=config)


def _backtest(args: argparse.Namespace) -> int:
    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.core.warehouse.database import default_duckdb_path
    from interlink_pipeline.core.warehouse.store import query

    site = _registered(args.site)
    if not 0 < args.fraction < 1:
        raise InputError(f"--fraction must be between 0 and 1 (exclusive), not {args.fraction}.")
    config = {"ops": {"link_backtest": {"config": {"fraction": args.fraction, "seed": args.seed}}}}
    code = _run_site(site, ["link_backtest"], config)
    if code == 0:
        last = query(
            default_duckdb_path(),
            "SELECT * FROM graph.backtest_runs WHERE site = ? ORDER BY ran_at DESC LIMIT 1",
            [site],
        )
        if last.height:
            row = last.row(0, named=True)
            print(
                f"{row['hidden_links']:,} links hidden (seed {row['seed']}): the plan's "
                f"{row['plan_links']:,} links found {row['plan_recall']:.1%} of them at precision "
                f"{row['plan_precision']:.1%}; as many top-title-cosine links: precision "
                f"{row['baseline_precision']:.1%}. Candidate precision@{row['k']}: "
                f"{row['candidate_precision_at_k']:.1%} vs {row['baseline_precision_at_k']:.1%}."
            )
        else:
            print(
                f"{site}: nothing to backtest: no in-content links are known (register an All Inlinks export)"
            )
    return code


def _generate(args: argparse.Namespace) -> int:
    from interlink_pipeline.core.urls import normalize_host
    from interlink_pipeline.sample import generate_site, write_site

    started = time.monotonic()
    host = {"host": normalize_host(args.host)} if args.host else {}
    site = generate_site(args.pages, seed=args.seed, with_links=not args.no_links, **host)
    paths = write_site(site, args.out)
    print(f"generated {site.host}: {site.crawl.height:,} crawl rows in {time.monotonic() - started:.1f}s")
    for kind, path in paths.items():
        print(f"  {kind:<6} {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


def _sites(args: argparse.Namespace) -> int:
    import duckdb

    from interlink_pipeline.core.warehouse.contract import table_columns
    from interlink_pipeline.core.warehouse.database import connect, default_duckdb_path
    from interlink_pipeline.core.warehouse.schemas import TABLES
    from interlink_pipeline.defs.partitions import site_partitions

    per_site = [table for table in TABLES if "site" in table_columns(table)]
    sites = _instance().get_dynamic_partitions(site_partitions.name)
    counts: dict[tuple[str, str], int] = {}
    if Path(default_duckdb_path()).exists():
        with connect(default_duckdb_path(), read_only=True) as con:
            for table in per_site:
                try:
                    rows = con.execute(f"SELECT site, count(*) FROM {table} GROUP BY site").fetchall()
                except duckdb.CatalogException:
                    continue
                counts.update({(site, table): n for site, n in rows})
    for site in sites:
        tables = ", ".join(f"{t}={counts[(site, t)]:,}" for t in per_site if (site, t) in counts)
        print(f"{site}: {tables or 'not materialised yet'}")
    if not sites:
        print("no sites registered; try: interlink register <crawl.csv>")
    return 0


def _status(args: argparse.Namespace) -> int:
    """The site's last run (how it ended, when, how long), its plan's figures and where its files are."""
    from datetime import UTC, datetime

    from dagster import RunsFilter

    site = _registered(args.site)
    records = _instance().get_run_records(RunsFilter(tags={"dagster/partition": site}), limit=1)
    if records:
        record, run = records[0], records[0].dagster_run
        began = datetime.fromtimestamp(record.start_time or record.create_timestamp.timestamp(), UTC)
        ran = record.end_time and record.start_time
        took = f", {record.end_time - record.start_time:.0f}s" if ran else ""
        print(f"last run: {run.run_id} {run.status.value} ({began:%Y-%m-%d %H:%M} UTC{took})")
    else:
        print(f"last run: none yet (interlink materialize --site {site})")
    for line in _site_figures(site):
        print(line)
    warehouse = _warehouse()
    from interlink_pipeline.defs.reports import site_folder

    folder = site_folder(warehouse, site)
    files = {
        "warehouse": Path(warehouse.path),
        "snapshot": warehouse.analyst_snapshot(),
        "report": folder / "report.html",
        "workbook": folder / "interlink_plan.xlsx",
    }
    for name, path in files.items():
        print(f"{name + ':':<11}{path.resolve()}{'' if path.exists() else ' (not written yet)'}")
    return 0


def _site_figures(site: str) -> list[str]:
    """The plan's before/after figures and the last backtest, as lines (none before the first plan)."""
    import duckdb

    from interlink_pipeline.core.warehouse.store import query

    path = _warehouse().path
    if not Path(path).exists():
        return []
    try:
        metrics = query(
            path,
            "SELECT scenario, pages, links, planned_links, orphan_pages, max_depth, share_depth_le_3 "
            "FROM graph.site_metrics WHERE site = ? ORDER BY scenario DESC",
            [site],
        )
        backtest = query(
            path, "SELECT * FROM graph.backtest_runs WHERE site = ? ORDER BY ran_at DESC LIMIT 1", [site]
        )
    except duckdb.CatalogException:
        return []
    lines = [
        f"{row['scenario']:<7}{row['pages']:,} pages, {row['links']:,} links "
        f"({row['planned_links']:,} planned), {row['orphan_pages']:,} orphans, max depth {row['max_depth']}, "
        f"{row['share_depth_le_3']:.1%} within 3 clicks"
        for row in metrics.iter_rows(named=True)
    ]
    for row in backtest.iter_rows(named=True):
        lines.append(
            f"backtest: plan precision {row['plan_precision']:.1%} against {row['baseline_precision']:.1%} "
            f"for as many top-title-cosine links ({row['hidden_links']:,} links hidden, seed {row['seed']})"
        )
    return lines


def _warehouse():
    from interlink_pipeline.core.warehouse.database import default_duckdb_path
    from interlink_pipeline.defs.resources import Warehouse

    return Warehouse(path=str(default_duckdb_path()))


def _sql(args: argparse.Namespace) -> int:
    """A DuckDB shell on the analysts' snapshot: the pipeline's runs never wait for it, nor it for them."""
    import shutil
    import subprocess

    from interlink_pipeline.core.errors import InputError

    snapshot = _warehouse().analyst_snapshot()
    if not snapshot.exists():
        raise InputError(f"no snapshot yet at {snapshot}: materialise a site first (interlink demo).")
    shell = Path(sys.executable).with_name("duckdb")
    found = str(shell) if shell.exists() else shutil.which("duckdb")
    if found is None:
        raise InputError("the duckdb shell is not installed: make install (it pins duckdb-cli).")
    return subprocess.call([found, "-readonly", str(snapshot)])


if __name__ == "__main__":
    raise SystemExit(main())
