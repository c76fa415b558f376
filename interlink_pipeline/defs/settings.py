"""Dagster config to the core's settings: one mapping for every step, checked field by field by a parity test
(interlink_pipeline_tests/test_settings.py), so a setting's name and default cannot drift between the two."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from dagster import Config, ConfigurableResource

Settings = TypeVar("Settings")


def options_from(config: Config | ConfigurableResource, kind: type[Settings], **resolved: Any) -> Settings:
    """The core settings `kind`, each field from the config field of the same name, or from `resolved` (what
    the shell works out itself, such as a device). A list becomes a tuple; where the core takes None (auto,
    no cap) and the config's type cannot hold it, the config's 0 or "" stands for None."""
    fields = type(config).model_fields
    values: dict[str, Any] = {}
    for field in dataclasses.fields(kind):
        if field.name in resolved:
            values[field.name] = resolved[field.name]
        elif field.name in fields:
            values[field.name] = _core_value(getattr(config, field.name), field, fields[field.name])
    return kind(**values)


def _core_value(value: Any, field: dataclasses.Field, declared: Any) -> Any:
    if isinstance(value, list):
        return tuple(value)
    takes_none = "None" in str(field.type)
    config_takes_none = declared.annotation is None or "None" in str(declared.annotation)
    if takes_none and not config_takes_none and not isinstance(value, bool) and value in (0, ""):
        return None
    return value
