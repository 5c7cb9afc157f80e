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

Nova's options we read are declared here once: ``[pci] alias`` (``PCI_OPTS``, placement.conf)
and ``[pci] device_spec`` (``DEVICE_SPEC_OPTS``, the agent's nova.conf).

This module is the generic part and imports neither ``settings`` nor logging: its functions
take the ``Settings`` fields as an argument. ``settings.py`` holds the entry points bound to
``Settings`` (``list_opts``, the oslo-config-generator hook; ``load_config``;
``settings_file_values``), so the imports run one way: settings -> conf, settings -> logs.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from oslo_config import cfg
from pydantic.fields import FieldInfo

__all__ = [
    "CONF_KEY",
    "ConfigFileError",
    "conf_option",
    "DEVICE_SPEC_OPTS",
    "PCI_OPTS",
    "field_values",
    "options_by_section",
    "parse_config",
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


def _bounds(field: FieldInfo) -> dict[str, Any]:
    """``min``/``max`` of an integer option, from the field's ``ge``/``le`` (or ``gt``/``lt``)."""
    bounds: dict[str, Any] = {}
    for item in field.metadata:
        for attr, key, shift in (
            ("ge", "min", 0),
            ("gt", "min", 1),
            ("le", "max", 0),
            ("lt", "max", -1),
        ):
            value = getattr(item, attr, None)
            if isinstance(value, int) and not isinstance(value, bool):
                bounds[key] = value + shift
    return bounds


def _default(field: FieldInfo) -> Any:
    """The field's default as oslo.config shows it (``None`` when it has none)."""
    default = field.get_default(call_default_factory=True)
    if isinstance(default, Path):
        return str(default)
    if isinstance(default, tuple | list):
        return list(default)
    return default


SECRET_OPTIONS = frozenset({"connection", "token", "password"})


def _opt_for(option: str, field: FieldInfo) -> cfg.Opt:
    """The oslo.config option for one ``Settings`` field: type, help, default, bounds, choices.

    The default shown (in the sample file and ``--help``) is the field's default; whether the
    file sets an option is told by its location (``settings_file_values``), not by ``None``.
    ``[placement_database] connection`` and tokens are secret (hidden in logged config dumps).
    """
    kind = _base_type(field.annotation)
    common: dict[str, Any] = {
        "help": field.description or "",
        "default": _default(field),
        "secret": option in SECRET_OPTIONS,
    }
    if kind is bool:
        return cfg.BoolOpt(option, **common)
    if kind is int:
        return cfg.IntOpt(option, **common, **_bounds(field))
    if kind is float:
        return cfg.FloatOpt(option, **common)
    if typing.get_origin(kind) in (list, tuple):
        return cfg.ListOpt(option, **common)
    if typing.get_origin(kind) is typing.Literal:
        return cfg.StrOpt(option, choices=[str(c) for c in typing.get_args(kind)], **common)
    return cfg.StrOpt(option, **common)


PCI_OPTS: list[cfg.Opt] = [
    cfg.MultiStrOpt(
        "alias",
        default=[],
        help=(
            "PCI passthrough aliases in Nova's format, one JSON object (or list of objects) per"
            " line: name (required), vendor_id and product_id (4 hex digits), device_type"
            " (type-PCI, type-PF, type-VF), numa_policy (required, legacy, preferred, socket),"
            " resource_class (default CUSTOM_PCI_<VENDOR_ID>_<PRODUCT_ID>), traits"
            " (comma-separated). Flavors ask for devices with pci_passthrough:alias ="
            ' "<alias>:<count>[,<alias>:<count>]" on POST /allocation_candidates and its claim.'
            ' Example: alias = {"name": "nic", "vendor_id": "8086", "product_id": "1572",'
            ' "numa_policy": "required"}'
        ),
    )
]
"""``[pci]``: not ``Settings`` fields (read per request by ``api.numa_body.aliases_for``), Nova's
``[pci] alias`` option as placement.conf carries it."""

DEVICE_SPEC_OPTS: list[cfg.Opt] = [
    cfg.MultiStrOpt(
        "device_spec",
        default=[],
        help=(
            "Nova's PCI device specs, read by placement-numa agent from the compute node's"
            " nova.conf (not from placement.conf): one JSON object per line."
        ),
    )
]
"""``[pci] device_spec`` of nova.conf, read by the agent (``agent.config``)."""


def options_by_section(fields: dict[str, FieldInfo]) -> list[tuple[str, list[cfg.Opt]]]:
    """Every option read from placement.conf, by section: the ``fields`` (``Settings``'s)
    mapped to the file, and ``[pci] alias`` (``PCI_OPTS``)."""
    by_section: dict[str, list[cfg.Opt]] = {"pci": list(PCI_OPTS)}
    for _name, section, option, field in _mapped_fields(fields):
        by_section.setdefault(section, []).append(_opt_for(option, field))
    return sorted(by_section.items())


def parse_config(
    config_file: Path | str | None,
    sections: Iterable[tuple[str, list[cfg.Opt]]],
    register: Callable[[cfg.ConfigOpts], None] | None = None,
) -> cfg.ConfigOpts:
    """A ``ConfigOpts`` with ``sections`` (and whatever ``register`` adds) registered, parsed
    from ``config_file`` (an empty one when ``None``). Raises ``ConfigFileError`` when the file
    cannot be read or a value does not parse."""
    conf = cfg.ConfigOpts()
    if register is not None:
        register(conf)
    for section, opts in sections:
        conf.register_opts(opts, group=section)
    files = [str(config_file)] if config_file is not None else []
    if config_file is not None and not Path(config_file).is_file():
        raise ConfigFileError(f"configuration file not found: {config_file}")
    try:
        conf(args=[], project="placement", default_config_files=files, default_config_dirs=[])
    except cfg.Error as exc:
        raise ConfigFileError(f"{config_file}: {exc}") from exc
    return conf


def field_values(conf: cfg.ConfigOpts, fields: dict[str, FieldInfo]) -> dict[str, Any]:
    """The values of ``fields`` the file sets (options left unset are omitted).

    Raises ``ConfigFileError`` naming ``[section] option`` when a value does not parse.
    """
    values: dict[str, Any] = {}
    for name, section, option, _field in _mapped_fields(fields):
        try:
            value = getattr(getattr(conf, section), option)
        except (cfg.ConfigFileValueError, ValueError) as exc:
            raise ConfigFileError(_bad_value(section, option, exc)) from None
        if _set_in_file(conf, section, option):
            values[name] = value
    return values


def _set_in_file(conf: cfg.ConfigOpts, section: str, option: str) -> bool:
    """Whether ``[section] option`` comes from a file (not the option's default)."""
    location = conf.get_location(option, section)  # registered under that group name
    return location is not None and location.location is not cfg.Locations.opt_default


def _bad_value(section: str, option: str, exc: Exception) -> str:
    """One line naming the option, the value and the file, without oslo.config's repr()s."""
    detail, where = str(exc), ""
    if " is not valid: " in detail:
        found = re.search(r"detail='([^']*)'", detail)
        where = f"{found.group(1)}: " if found else ""
        detail = detail.split(" is not valid: ", 1)[1]
    return f"{where}[{section}] {option}: invalid value: {detail}"
