"""The settings a user passes to a run: a --config file (YAML or TOML, the launchpad's fields) with the
common settings as flags over it, checked against the job's config before anything runs."""

from __future__ import annotations

import argparse
from pathlib import Path

# flags for the settings people change most: flag -> (where in the Dagster run config, type)
SETTING_FLAGS = {
    "--text-source": (("ops", "pages", "config", "text_source"), str),
    "--model": (("resources", "embedder", "config", "model"), str),
    "--out-link-budget": (("ops", "link_plan", "config", "out_link_budget"), int),
    "--max-depth": (("ops", "link_plan", "config", "max_depth"), int),
}


def run_config(args: argparse.Namespace) -> dict:
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
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); save it as "
            "UTF-8."
        ) from None
    try:
        if path.suffix == ".toml":
            config = tomllib.loads(text)
        else:
            _refuse_aliases(text, path)
            config = yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"{path}: not valid {'TOML' if path.suffix == '.toml' else 'YAML'}: {exc}") from None
    if not isinstance(config, dict):
        raise InputError(
            f"{path}: a run config is a mapping (ops: …, resources: …), not {type(config).__name__}."
        )
    return config


def _refuse_aliases(text: str, path: Path) -> None:
    """A run config has no use for YAML aliases (*name), and a kilobyte of nested ones expands to
    billions of nodes: refused before anything is built."""
    import yaml

    from interlink_pipeline.core.errors import InputError

    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            line = event.start_mark.line + 1
            raise InputError(
                f"{path}, line {line}: YAML aliases (*{event.anchor}) are not allowed in a run config; "
                "write the values out."
            )


def _validate(config: dict, path: Path | None) -> None:
    """Check `config` as the run would: its shape against the job's config schema, then each step's and
    resource's settings against their bounds (which Dagster checks only once the step starts)."""
    import inspect

    from dagster import DagsterInvalidConfigError, validate_run_config
    from pydantic import ValidationError

    from interlink_pipeline.core.errors import InputError
    from interlink_pipeline.definitions import defs

    job = defs.resolve_job_def("site_pipeline")
    where = path or "the settings"
    try:
        validate_run_config(job, config)
    except DagsterInvalidConfigError as exc:
        problems = "; ".join(error.message for error in exc.errors)
        raise InputError(f"{where}: {problems}") from None
    classes: dict[tuple[str, str], type] = {}
    for name in config.get("ops") or {}:
        step = inspect.signature(job.graph.node_named(name).definition.compute_fn.decorated_fn).parameters
        if "config" in step:
            classes[("ops", name)] = step["config"].annotation
    for name in config.get("resources") or {}:
        classes[("resources", name)] = type(defs.resources[name])
    for (kind, name), settings in classes.items():
        try:
            settings(**(config[kind][name].get("config") or {}))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join([kind, name, 'config', *map(str, e['loc'])])}: "
                f"{e['msg'].removeprefix('Value error, ')}"
                for e in exc.errors()
            )
            raise InputError(f"{where}: {problems}") from None
