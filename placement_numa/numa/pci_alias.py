"""``[pci] alias`` (placement.conf) and the flavor's ``pci_passthrough:alias``, Nova's way.

Each ``[pci] alias`` line is a JSON object (or a list of them), as in Nova's ``[pci] alias``::

    alias = {"name": "nic", "vendor_id": "8086", "product_id": "1572",
             "numa_policy": "required", "traits": "CUSTOM_PHYSNET_A"}
    alias = {"name": "gpu", "resource_class": "CUSTOM_GPU_A100"}

Keys: ``name`` (required), ``vendor_id``/``product_id`` (4 hex digits), ``device_type``
(``type-PCI``, ``type-PF``, ``type-VF``), ``numa_policy`` (``required``, ``legacy``,
``preferred``, ``socket``), ``resource_class`` and ``traits`` (comma-separated), as Nova's "PCI
in Placement" reads them: the resource class is ``resource_class`` when given (a name that is not
a standard class is normalised to ``CUSTOM_...`` as ``os_resource_classes.normalize_name`` does),
else ``CUSTOM_PCI_<VENDOR_ID>_<PRODUCT_ID>`` in upper-case hex; traits that are not standard
``os-traits`` names are normalised to ``CUSTOM_...``. Nova's other keys (``capability_type``,
``live_migratable``) are accepted and ignored.

A flavor asks for devices with ``pci_passthrough:alias = "<alias>:<count>[,<alias>:<count>]"``;
each device becomes one request of one unit (``DeviceRequest``), as Nova makes one request group
per device. Errors: ``AliasConfigError`` for a bad configuration line, ``InvalidFlavor`` (400)
for a bad flavor value or an unknown alias.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import os_resource_classes
import os_traits

from placement_numa.numa.invalid_flavor import InvalidFlavor

__all__ = [
    "ALIAS_SPEC",
    "AFFINITY_POLICIES",
    "MAX_DEVICES",
    "AliasConfigError",
    "PciAlias",
    "DeviceRequest",
    "parse_aliases",
    "device_requests",
    "pci_resource_class",
    "normalise_traits",
]

ALIAS_SPEC = "pci_passthrough:alias"
MAX_DEVICES = 64  # devices one flavor may ask (each is a request group)
AFFINITY_POLICIES = ("required", "legacy", "preferred", "socket")
_HEX4 = re.compile(r"^[0-9a-fA-F]{4}$")
_KEYS = {
    "name",
    "vendor_id",
    "product_id",
    "device_type",
    "numa_policy",
    "resource_class",
    "traits",
    "capability_type",
    "live_migratable",
}
_DEVICE_TYPES = ("type-PCI", "type-PF", "type-VF")


class AliasConfigError(ValueError):
    """A ``[pci] alias`` line that is not Nova's format (the message names the line)."""


@dataclass(frozen=True, slots=True)
class PciAlias:
    """One alias: its name, the resource class and traits its devices carry in Placement, and
    its ``numa_policy`` (``None``: not set, the flavor's or ``legacy`` applies)."""

    name: str
    resource_class: str
    traits: frozenset[str] = frozenset()
    numa_policy: str | None = None


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One requested device (one unit of ``resource_class`` with ``traits``) from ``alias``;
    ``numa_policy`` is the effective affinity policy (flavor/image, else alias, else
    ``legacy``)."""

    alias: str
    resource_class: str
    traits: frozenset[str]
    numa_policy: str


def pci_resource_class(vendor_id: str, product_id: str, resource_class: str | None) -> str:
    """The Placement resource class of a device: ``resource_class`` (normalised to
    ``CUSTOM_...`` unless standard) or ``CUSTOM_PCI_<VENDOR>_<PRODUCT>`` (upper-case hex), as
    Nova's "PCI in Placement"."""
    if resource_class:
        name = resource_class.strip().upper()
        if name in os_resource_classes.STANDARDS or name.startswith("CUSTOM_"):
            return name
        return str(os_resource_classes.normalize_name(name))
    return f"CUSTOM_PCI_{vendor_id.upper()}_{product_id.upper()}"


def normalise_traits(text: str | Iterable[str] | None) -> frozenset[str]:
    """Trait names from a comma-separated string (or names): standard ``os-traits`` names as
    they are, others normalised to ``CUSTOM_...`` (Nova's device spec and alias rule)."""
    if text is None:
        return frozenset()
    names = text.split(",") if isinstance(text, str) else list(text)
    result = set()
    standard = set(os_traits.get_traits())
    for raw in names:
        name = raw.strip().upper()
        if not name:
            continue
        result.add(
            name
            if name in standard or name.startswith("CUSTOM_")
            else os_traits.normalize_name(name)
        )
    return frozenset(result)


def _alias(entry: Mapping[str, object], line: str) -> PciAlias:
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise AliasConfigError(f"[pci] alias {line}: unknown keys {unknown}")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise AliasConfigError(f"[pci] alias {line}: 'name' is required")
    vendor, product = entry.get("vendor_id"), entry.get("product_id")
    resource_class = entry.get("resource_class")
    for key, value in (("vendor_id", vendor), ("product_id", product)):
        if value is not None and not (isinstance(value, str) and _HEX4.match(value)):
            raise AliasConfigError(f"[pci] alias {line}: {key} must be 4 hex digits")
    if resource_class is not None and not isinstance(resource_class, str):
        raise AliasConfigError(f"[pci] alias {line}: resource_class must be a string")
    if not resource_class and (vendor is None or product is None):
        raise AliasConfigError(
            f"[pci] alias {line}: give resource_class, or vendor_id and product_id"
        )
    policy = entry.get("numa_policy")
    if policy is not None and policy not in AFFINITY_POLICIES:
        raise AliasConfigError(
            f"[pci] alias {line}: numa_policy must be one of {', '.join(AFFINITY_POLICIES)}"
        )
    device_type = entry.get("device_type")
    if device_type is not None and device_type not in _DEVICE_TYPES:
        raise AliasConfigError(
            f"[pci] alias {line}: device_type must be one of {', '.join(_DEVICE_TYPES)}"
        )
    traits = entry.get("traits")
    if traits is not None and not isinstance(traits, str):
        raise AliasConfigError(f"[pci] alias {line}: traits must be a comma-separated string")
    return PciAlias(
        name=name,
        resource_class=pci_resource_class(str(vendor or ""), str(product or ""), resource_class),
        traits=normalise_traits(traits),
        numa_policy=policy if isinstance(policy, str) else None,
    )


def parse_aliases(lines: Iterable[str]) -> dict[str, PciAlias]:
    """``{name: PciAlias}`` from ``[pci] alias`` lines (JSON objects or lists of them).

    Raises ``AliasConfigError`` for a line that is not JSON, a missing name, an unknown key, a
    bad id, policy or device type, or one name given twice (Nova merges same-name aliases of
    different products into one request; we keep one resource class per alias).
    """
    aliases: dict[str, PciAlias] = {}
    for line in lines:
        try:
            loaded = json.loads(line)
        except ValueError as exc:
            raise AliasConfigError(f"[pci] alias {line}: not JSON ({exc})") from None
        entries = loaded if isinstance(loaded, list) else [loaded]
        for entry in entries:
            if not isinstance(entry, dict):
                raise AliasConfigError(f"[pci] alias {line}: not a JSON object")
            alias = _alias(entry, line)
            if alias.name in aliases:
                raise AliasConfigError(f"[pci] alias {line}: alias '{alias.name}' given twice")
            aliases[alias.name] = alias
    return aliases


def device_requests(
    value: str, aliases: Mapping[str, PciAlias], policy: str | None
) -> tuple[DeviceRequest, ...]:
    """The devices of ``pci_passthrough:alias`` (``"a:2,b:1"``; count 1 when omitted), one
    ``DeviceRequest`` per device, in order. ``policy`` (flavor/image) wins over the alias's
    ``numa_policy``; ``legacy`` when neither sets one (Nova's default).

    Raises ``InvalidFlavor`` (400) for a malformed value, a count < 1 or an unknown alias.
    """
    result: list[DeviceRequest] = []
    for part in value.split(","):
        name, _, count_text = part.strip().partition(":")
        name = name.strip()
        count_text = count_text.strip() or "1"
        if not name or not count_text.isdigit() or int(count_text) < 1:
            raise InvalidFlavor(
                [ALIAS_SPEC], f"'{value[:80]}' is not '<alias>:<count>[,<alias>:<count>]'"
            )
        alias = aliases.get(name)
        if alias is None:
            raise InvalidFlavor([ALIAS_SPEC], f"PCI alias '{name}' is not defined in [pci] alias")
        effective = policy or alias.numa_policy or "legacy"
        result.extend(
            DeviceRequest(name, alias.resource_class, alias.traits, effective)
            for _ in range(min(int(count_text), MAX_DEVICES + 1))
        )
    if len(result) > MAX_DEVICES:
        raise InvalidFlavor([ALIAS_SPEC], f"at most {MAX_DEVICES} devices, got {len(result)}")
    return tuple(result)
