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
