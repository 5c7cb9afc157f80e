"""A flavor catalogue in Nova's flavor format (``[metrics] flavors_file``, issue 31).

Accepted documents (JSON or YAML): the body of Nova's ``GET /flavors/detail``
(``{"flavors": [...]}``) or a plain list of flavors, each as Nova shows a flavor:

* ``name``, ``vcpus``, ``ram`` (MiB), ``disk`` (root, GiB), ``OS-FLV-EXT-DATA:ephemeral``
  (GiB), ``swap`` (MiB; Nova shows ``""`` for none);
* ``extra_specs`` (Nova API 2.61+) or ``properties`` (``openstack flavor show -f json``: a
  mapping, or its ``key='value', ...`` text).

Our request's names (``memory_mb``, ``root_gb``, ``ephemeral_gb``) are accepted too. Raises
``CatalogueError`` (a ``ValueError`` naming the file and the entry) for anything else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from placement_numa.engine import CandidateEngine
from placement_numa.numa.engine_rank import CellIndex
from placement_numa.numa.flavor import Flavor
from placement_numa.observability.capacity_gauges import CatalogueFigures
from placement_numa.services.capacity import MAX_FLAVORS, FlavorAsk, fleet_capacity
from placement_numa.services.stranded import stranded

__all__ = ["CatalogueError", "load_catalogue", "parse_catalogue", "catalogue_figures"]

_PROPERTY = re.compile(r"\s*([^=,\s][^=]*?)\s*=\s*'([^']*)'\s*(?:,|$)")


class CatalogueError(ValueError):
    """The flavors file cannot be read as a catalogue (the message says where)."""


def _number(entry: dict[str, Any], *keys: str) -> int:
    for key in keys:
        value = entry.get(key)
        if value not in (None, ""):
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise CatalogueError(f"{key} must be a whole number, not {value!r}")
            try:
                return int(value)
            except ValueError:
                raise CatalogueError(f"{key} must be a whole number, not {value!r}") from None
    return 0


def _specs(entry: dict[str, Any]) -> dict[str, str]:
    specs = entry.get("extra_specs", entry.get("properties", {})) or {}
    if isinstance(specs, str):
        return {m.group(1): m.group(2) for m in _PROPERTY.finditer(specs)}
    if not isinstance(specs, dict):
        raise CatalogueError("extra_specs/properties must be a mapping")
    return {str(k): str(v) for k, v in specs.items()}


def _flavor(entry: Any, n: int) -> FlavorAsk:
    if not isinstance(entry, dict):
        raise CatalogueError(f"flavor {n} is not a mapping")
    name = str(entry.get("name") or f"flavor-{n}")
    try:
        flavor = Flavor(
            vcpus=_number(entry, "vcpus"),
            memory_mb=_number(entry, "ram", "memory_mb"),
            root_gb=_number(entry, "disk", "root_gb"),
            ephemeral_gb=_number(entry, "OS-FLV-EXT-DATA:ephemeral", "ephemeral_gb"),
            swap=_number(entry, "swap"),
            extra_specs=_specs(entry),
            name=name,
        )
    except CatalogueError as exc:
        raise CatalogueError(f"flavor {name!r}: {exc}") from None
    if flavor.vcpus < 1 or flavor.memory_mb < 1:
        raise CatalogueError(f"flavor {name!r}: vcpus and ram must be at least 1")
    return FlavorAsk(name, flavor)


def parse_catalogue(document: Any) -> list[FlavorAsk]:
    """The flavors of a parsed document (see the module docstring; at most ``MAX_FLAVORS``)."""
    entries = document.get("flavors") if isinstance(document, dict) else document
    if not isinstance(entries, list) or not entries:
        raise CatalogueError("expected a non-empty list of flavors, or {'flavors': [...]}")
    if len(entries) > MAX_FLAVORS:
        raise CatalogueError(f"{len(entries)} flavors: at most {MAX_FLAVORS}")
    return [_flavor(entry, n) for n, entry in enumerate(entries, start=1)]


def load_catalogue(path: Path) -> list[FlavorAsk]:
    """The catalogue in the file ``path`` (JSON, else YAML). Raises ``CatalogueError``."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise CatalogueError(f"{path}: {exc.strerror or exc}") from None
    try:
        document = json.loads(text)
    except ValueError:
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise CatalogueError(f"{path}: neither JSON nor YAML ({exc})") from None
    try:
        return parse_catalogue(document)
    except CatalogueError as exc:
        raise CatalogueError(f"{path}: {exc}") from None


def catalogue_figures(
    engine: CandidateEngine, index: CellIndex, flavors: Sequence[FlavorAsk]
) -> CatalogueFigures:
    """The ``/metrics`` figures of ``flavors`` on the engine's current snapshot: each flavor's
    capacity (``services.capacity``; per aggregate of the compute nodes too) and the fleet's
    stranded capacity and fragmentation for the catalogue (``services.stranded``)."""
    fleet = engine.snapshot()
    answers = fleet_capacity(engine=engine, index=index, flavors=flavors, fleet=fleet)
    per_aggregate: dict[tuple[str, str], int] = {}
    for answer in answers:
        for host in answer.hosts:
            root = fleet.index_by_uuid.get(host.uuid)
            if root is None or not host.count:
                continue
            for aggregate in fleet.providers[root].aggregates:
                key = (answer.flavor, aggregate)
                per_aggregate[key] = per_aggregate.get(key, 0) + host.count
    lost = stranded(fleet, fleet.roots, answers)
    return CatalogueFigures(
        revision=fleet.revision,
        capacity={a.flavor: a.total for a in answers},
        per_aggregate=per_aggregate,
        free=lost.free,
        stranded=lost.stranded,
        fragmentation=lost.fragmentation,
    )
