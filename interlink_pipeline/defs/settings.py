"""Dagster config from the core's settings: each step's config class is derived from the core settings
dataclass (core/settings.py declares every setting once), and `options_from` maps a config back to it."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, TypeVar

from dagster import Config, ConfigurableResource, DefaultScheduleStatus
from pydantic import Field, create_model, field_validator

Settings = TypeVar("Settings")


def settings_config(settings: type, base: type = Config) -> Any:
    """A Config (or ConfigurableResource) class with a field per user setting of `settings`: same name,
    meaning, default and bounds; a tuple is a list, and a None the core takes is spelt `unset`."""
    hints = typing.get_type_hints(settings)
    user_settings = [field for field in dataclasses.fields(settings) if "description" in field.metadata]
    fields = {field.name: _config_field(field, hints[field.name]) for field in user_settings}
    checks = {
        f"check_{field.name}": field_validator(field.name)(_checked(field.metadata["check"]))
        for field in user_settings
        if field.metadata.get("check")
    }
    return create_model(
        f"{settings.__name__}Fields",
        __base__=base,
        __module__=__name__,
        __doc__=settings.__doc__,
        __validators__=checks,
        **fields,
    )


def _checked(check: Any) -> Any:
    """A pydantic validator running a setting's `check` (a ValueError refuses the value)."""

    def validate(cls: type, value: Any) -> Any:
        check(value)
        return value

    return validate


def _config_field(field: dataclasses.Field, annotation: Any) -> tuple[Any, Any]:
    meta = field.metadata
    default: Any = field.default
    if meta["unset"] is not None:
        annotation = type(meta["unset"])
        default = meta["unset"] if default is None else default
    if typing.get_origin(annotation) is tuple:
        annotation = list[typing.get_args(annotation)[0]]
        items = list(default)
        return annotation, Field(default_factory=lambda: list(items), description=meta["description"])
    return annotation, Field(default=default, description=meta["description"], **meta["bounds"])


def options_from(config: Config | ConfigurableResource, kind: type[Settings], **resolved: Any) -> Settings:
    """The core settings `kind`, each field from the config field of the same name, or from `resolved` (what
    the shell works out itself, such as a device). A list becomes a tuple, and a setting's `unset` None."""
    fields = type(config).model_fields
    values: dict[str, Any] = {}
    for field in dataclasses.fields(kind):
        if field.name in resolved:
            values[field.name] = resolved[field.name]
        elif field.name in fields:
            values[field.name] = _core_value(getattr(config, field.name), field)
    return kind(**values)


def _core_value(value: Any, field: dataclasses.Field) -> Any:
    if isinstance(value, list):
        return tuple(value)
    unset = field.metadata.get("unset")
    if unset is not None and value == unset and type(value) is type(unset):
        return None
    return value


def scheduled_by(cron: str | None) -> DefaultScheduleStatus:
    """A schedule runs by default only where its cron variable is set: a team that wanted a plan never finds
    it recomputed behind its back (the UI turns a schedule on too)."""
    return DefaultScheduleStatus.RUNNING if cron else DefaultScheduleStatus.STOPPED
