"""The microversion that introduced each operation and body field, in the OpenAPI document.

The API declares microversions in two places, and this module reads both into the document as
``x-min-microversion`` (a string such as ``"1.28"``), which the API reference of the docs
(``doc/source/_ext/openapi_reference.py``) renders:

* operations: the route's ``require_version(mv.X)`` gate (``api/deps.py``); a route without a
  gate exists from 1.0;
* request body fields: the request shapes are one pydantic class per microversion, named
  ``<Shape>V<major>_<minor>`` (``AllocationsPutV1_28``, ``ReshaperV1_34``). A field's version
  is the oldest version among the classes of that shape in the same module that have the field
  (inherited or declared). A shape without a version suffix gets no annotation: its fields are
  as old as the operation.

Query parameters carry theirs in ``api/openapi_doc.py``'s table (``since=`` a named gate).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import fastapi.routing
from fastapi.routing import APIRoute
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import core_schema

from placement_numa.api import microversion as mv

__all__ = ["KEY", "VersionedJsonSchema", "annotate_operations", "field_versions"]

KEY = "x-min-microversion"
_VERSIONED = re.compile(r"^(?P<shape>\w+?)V(?P<major>\d+)_(?P<minor>\d+)$")


def field_versions(model: type[BaseModel]) -> dict[str, mv.Microversion]:
    """``{field name: first microversion}`` of a versioned request shape; ``{}`` for others.

    ``AllocationsPutV1_38`` -> ``{"allocations": 1.0, "project_id": 1.8,
    "consumer_generation": 1.28, "mappings": 1.34, "consumer_type": 1.38}`` (its siblings
    ``AllocationsPutV1_0``, ``V1_8``, ... in ``api/schemas/allocations.py``).
    """
    match = _VERSIONED.match(model.__name__)
    if match is None:
        return {}
    module = sys.modules.get(model.__module__)
    siblings: list[tuple[mv.Microversion, type[BaseModel]]] = []
    for value in vars(module).values() if module is not None else ():
        other = _VERSIONED.match(getattr(value, "__name__", ""))
        if (
            other is not None
            and other.group("shape") == match.group("shape")
            and isinstance(value, type)
            and issubclass(value, BaseModel)
        ):
            version = mv.Microversion(int(other.group("major")), int(other.group("minor")))
            siblings.append((version, value))
    found: dict[str, mv.Microversion] = {}
    for version, sibling in sorted(siblings, key=lambda pair: pair[0]):
        for name in sibling.model_fields:
            found.setdefault(name, version)
    return {name: found[name] for name in model.model_fields if name in found}


class VersionedJsonSchema(GenerateJsonSchema):
    """pydantic's JSON Schema generator, adding ``x-min-microversion`` to each property of a
    versioned request shape (``body_doc`` in ``api/deps.py`` uses it)."""

    def generate(
        self, schema: core_schema.CoreSchema, mode: JsonSchemaMode = "validation"
    ) -> JsonSchemaValue:
        """The JSON Schema of ``schema``, number bounds in JSON Schema's words everywhere."""
        value = super().generate(schema, mode=mode)
        _name_bounds(value)
        return value

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        """The model's schema, its properties annotated by :func:`field_versions`."""
        value = super().model_schema(schema)
        versions = field_versions(schema["cls"])
        properties = value.get("properties", {})
        for name, version in versions.items():
            if name in properties:
                properties[name][KEY] = str(version)
        return value


_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def _name_bounds(value: Any) -> None:
    """Say in JSON Schema's words, in place, two rules pydantic enforces but words otherwise:

    * number bounds: pydantic cannot push ``Field(ge=1)`` into a type that has a
      ``BeforeValidator`` (``JsonInt``) and leaves ``ge``/``le``/``gt``/``lt`` under their own
      names, which JSON Schema ignores (the document allowed ``"total": 0``);
    * dict keys: a ``dict`` whose key type has a pattern (``dict[UuidKey, ...]``) becomes
      ``patternProperties``, which leaves other keys free; pydantic refuses them, so
      ``additionalProperties: false``.
    """
    if isinstance(value, dict):
        if value.get("type") in ("integer", "number"):
            for short, name in _BOUNDS.items():
                if short in value:  # the tighter bound where both are given
                    bound = value.pop(short)
                    tighter = max if name.endswith("inimum") else min
                    bound = tighter(bound, value.get(name, bound))
                    integral = value["type"] == "integer" and float(bound).is_integer()
                    value[name] = int(bound) if integral else bound
        if "patternProperties" in value and "properties" not in value:
            value.setdefault("additionalProperties", False)
        for item in value.values():
            _name_bounds(item)
    elif isinstance(value, list):
        for item in value:
            _name_bounds(item)


def _routes(routes: Iterable[Any]) -> Iterator[Any]:
    """Every route of the app, those of included routers too (FastAPI 0.16x keeps included
    routers as nodes and flattens them with ``iter_route_contexts``; older ones flatten on
    ``include_router``)."""
    flatten = getattr(fastapi.routing, "iter_route_contexts", None)
    yield from flatten(list(routes)) if flatten is not None else routes


def _gate(route: Any) -> mv.Microversion:
    """The route's ``require_version`` gate (its own or its router's), else 1.0."""
    gates = [
        gate
        for dep in route.dependant.dependencies
        if isinstance(gate := getattr(dep.call, "min_version", None), mv.Microversion)
    ]
    return max(gates, default=mv.MIN_VERSION)


def annotate_operations(document: dict[str, Any], routes: Iterable[Any]) -> None:
    """Set ``x-min-microversion`` on every operation of ``document`` from its route's gate."""
    paths = document.get("paths", {})
    for route in _routes(routes):
        original = getattr(route, "original_route", route)
        if not isinstance(original, APIRoute) or route.path_format not in paths:
            continue
        for method in route.methods:
            operation = paths[route.path_format].get(method.lower())
            if isinstance(operation, dict):
                operation[KEY] = str(_gate(route))
