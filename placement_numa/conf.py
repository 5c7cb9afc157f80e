"""placement.conf: the oslo.config file view of ``Settings``.

One configuration for the whole service. ``Settings`` (``placement_numa/settings.py``) is the
typed object the code reads; this module reads the same values from an OpenStack-style INI file
(``placement-numa serve --config-file /etc/placement/placement.conf`` or
``PLACEMENT_NUMA_CONFIG_FILE``) with oslo.config, the library that defines that file.

Precedence, highest first:

1. command-line flags (``placement-numa serve --port ...``);
2. ``PLACEMENT_NUMA_*`` environment variables;
3. the configuration file;
4. the defaults in ``Settings``.

A ``Settings`` field is read from the file when its ``Field`` carries
``json_schema_extra=conf_option("section", "option")``; its oslo.config option is derived from
the field (type, help text), so adding a setting is one field in ``Settings``. Sections that
belong to libraries (``[keystone_authtoken]``, ``[oslo_policy]``, ``[cors]``) are registered by
those libraries on the ``ConfigOpts`` that ``load_config`` returns (``app.state.conf``). Unknown
sections and options are ignored; a value that does not parse fails at start, naming the option.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from oslo_config import cfg
from pydantic.fields import FieldInfo

__all__ = [
    "CONF_KEY",
    "ConfigFileError",
    "conf_option",
    "list_opts",
    "load_config",
    "settings_file_values",
]

CONF_KEY = "conf"


class ConfigFileError(ValueError):
    """The configuration file is missing, unreadable, or holds a value that does not parse."""


def conf_option(section: str, option: str) -> dict[str, Any]:
    """``json_schema_extra`` for a ``Settings`` field read from ``[section] option``."""
    return {CONF_KEY: f"{section}.{option}"}


def _mapped_fields(fields: dict[str, FieldInfo]) -> Iterable[tuple[str, str, str, FieldInfo]]:
    """``(field name, section, option, field)`` for each field tagged with ``conf_option``."""
    for name, field in fields.items():
        extra = field.json_schema_extra
        if isinstance(extra, dict) and isinstance(extra.get(CONF_KEY), str):
            section, _dot, option = str(extra[CONF_KEY]).partition(".")
            yield name, section, option, field


def _base_type(annotation: Any) -> Any:
    """``int`` for ``int | None`` and the like; the annotation itself otherwise."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return members[0] if len(members) == 1 else str
    return annotation


def _opt_for(option: str, field: FieldInfo) -> cfg.Opt:
    """The oslo.config option for one ``Settings`` field (no default: unset means "not given")."""
    kind = _base_type(field.annotation)
    help_text = field.description or ""
    if kind is bool:
        return cfg.BoolOpt(option, help=help_text)
    if kind is int:
        return cfg.IntOpt(option, help=help_text)
    if kind is float:
        return cfg.FloatOpt(option, help=help_text)
    if typing.get_origin(kind) in (list, tuple):
        return cfg.ListOpt(option, help=help_text)
    return cfg.StrOpt(option, help=help_text)


def _settings_fields() -> dict[str, FieldInfo]:
    from placement_numa.settings import Settings

    return dict(Settings.model_fields)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """Every option placement-numa reads from the file, by section (oslo-config-generator)."""
    by_section: dict[str, list[cfg.Opt]] = {}
    for _name, section, option, field in _mapped_fields(_settings_fields()):
        by_section.setdefault(section, []).append(_opt_for(option, field))
    return sorted(by_section.items())


def load_config(config_file: Path | str | None) -> cfg.ConfigOpts:
    """A ``ConfigOpts`` parsed from ``config_file`` (an empty one when ``None``).

    Our options are registered on it; keystonemiddleware, oslo.policy and the CORS middleware
    register their own sections on the same object. Raises ``ConfigFileError`` when the file
    cannot be read.
    """
    conf = cfg.ConfigOpts()
    for section, opts in list_opts():
        conf.register_opts(opts, group=section)
    files = [str(config_file)] if config_file is not None else []
    if config_file is not None and not Path(config_file).is_file():
        raise ConfigFileError(f"configuration file not found: {config_file}")
    try:
        conf(args=[], project="placement", default_config_files=files, default_config_dirs=[])
    except cfg.Error as exc:
        raise ConfigFileError(f"{config_file}: {exc}") from exc
    return conf


def settings_file_values(
    conf: cfg.ConfigOpts, fields: dict[str, FieldInfo] | None = None
) -> dict[str, Any]:
    """The ``Settings`` field values the file sets (options left unset are omitted).

    Raises ``ConfigFileError`` naming ``[section] option`` when a value does not parse.
    """
    values: dict[str, Any] = {}
    for name, section, option, _field in _mapped_fields(fields or _settings_fields()):
        try:
            value = getattr(getattr(conf, section), option)
        except (cfg.ConfigFileValueError, ValueError) as exc:
            raise ConfigFileError(f"[{section}] {option}: {exc}") from exc
        if value is not None:
            values[name] = value
    return values
