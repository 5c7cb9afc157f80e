"""Helpers for the NUMA tests: canonical forms of query strings, flavors by name."""

from __future__ import annotations

from typing import Any

from placement_numa.numa.flavor import Flavor


def canon(query_string: str) -> dict[str, Any]:
    """A query string as comparable data: ``resources*`` as dicts, ``required*`` as sets,
    ``same_subtree`` as a set of sets; order and whitespace do not matter."""
    result: dict[str, Any] = {}
    subtrees: set[frozenset[str]] = set()
    for part in "".join(query_string.split()).split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        if key.startswith("resources"):
            result[key] = {rc: int(n) for rc, _, n in (i.partition(":") for i in value.split(","))}
        elif key.startswith("required") or key == "root_required":
            result[key] = frozenset(value.split(","))
        elif key == "same_subtree":
            subtrees.add(frozenset(value.split(",")))
        else:
            result[key] = value
    if subtrees:
        result["same_subtree"] = frozenset(subtrees)
    return result


def flavor(vcpus: int = 8, memory_mb: int = 8192, disk: int = 0, **extra_specs: Any) -> Flavor:
    """A flavor; extra spec keys are written with ``__`` for ``:`` and ``_dot_`` for ``.``."""
    specs = {k.replace("__", ":").replace("_dot_", "."): str(v) for k, v in extra_specs.items()}
    return Flavor(vcpus=vcpus, memory_mb=memory_mb, root_gb=disk, extra_specs=specs)
