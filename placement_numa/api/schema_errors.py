"""Pydantic validation errors worded as Placement's JSON-schema errors.

Placement validates bodies with ``jsonschema`` and puts its message in the 400 detail, e.g.
``JSON does not validate: 'project_id' is a required property  Failed validating 'required' in
schema``. Clients and conformance suites match on those phrases, so ``describe`` words the first
pydantic error the same way (the message of jsonschema's validator, then its name).
"""

from __future__ import annotations

import pprint
import reprlib
import textwrap
from typing import Any

__all__ = ["describe", "short_repr"]

# Values are quoted exactly while small; big or deep ones are abbreviated, so an error message
# (and the work to build it) stays bounded whatever the client sent.
_SHORT = reprlib.Repr()
_SHORT.maxlevel = 4
_SHORT.maxstring = 256
_SHORT.maxother = 256
_SHORT.maxlong = 64
_SHORT.maxdict = _SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxset = 16


def short_repr(value: Any) -> str:
    """``repr(value)``, abbreviated (``...``) past 256 characters per string, 16 items per
    container and 4 levels of nesting."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        if isinstance(value, str) and len(value) > _SHORT.maxstring:
            return repr(value[: _SHORT.maxstring]) + "..."
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
            return f"<an integer of {value.bit_length()} bits>"
        return repr(value)
    return _SHORT.repr(value)


_TYPE_NAMES = {
    "int": "integer",
    "string": "string",
    "str": "string",
    "dict": "object",
    "model": "object",
    "list": "array",
    "bool": "boolean",
    "float": "number",
}


def _type_name(error_type: str) -> str | None:
    if error_type in ("model_type", "model_attributes_type", "dict_type"):
        return "object"
    if error_type.endswith("_type") or error_type.startswith(("int_", "string_", "bool_")):
        return _TYPE_NAMES.get(error_type.split("_")[0])
    return None


def _message(item: Any) -> tuple[str, str]:
    """``(message, validator)`` for one pydantic error item."""
    kind: str = item["type"]
    loc = tuple(item.get("loc", ()))
    value = item.get("input")
    ctx = item.get("ctx") or {}
    if kind == "value_error":
        # Custom validators raise ValueError with jsonschema's own sentence ("'x' is not a 'uuid'").
        text = str(ctx.get("error", item["msg"]))
        return text, ("format" if " is not a '" in text else "value")
    if kind.startswith("uuid_"):
        return f"{short_repr(value)} is not a 'uuid'", "format"
    if kind == "missing":
        return f"'{loc[-1]}' is a required property", "required"
    if kind == "extra_forbidden":
        message = f"Additional properties are not allowed ('{loc[-1]}' was unexpected)"
        return message, "additionalProperties"
    if loc and loc[-1] == "[key]" and kind == "string_pattern_mismatch":
        return (
            f"{short_repr(value)} does not match any of the regexes: '{ctx.get('pattern', '')}'",
            "additionalProperties",
        )
    if kind == "string_pattern_mismatch":
        return f"{short_repr(value)} does not match '{ctx.get('pattern', '')}'", "pattern"
    if kind == "string_too_short":
        if ctx.get("min_length") == 1:
            return f"{short_repr(value)} should be non-empty", "minLength"
        return f"{short_repr(value)} is too short", "minLength"
    if kind == "string_too_long":
        return f"{short_repr(value)} is too long", "maxLength"
    if kind == "too_short":
        validator = "minProperties" if isinstance(value, dict) else "minItems"
        if ctx.get("min_length") == 1:
            return f"{short_repr(value)} should be non-empty", validator
        return f"{short_repr(value)} is too short", validator
    if kind == "too_long":
        validator = "maxProperties" if isinstance(value, dict) else "maxItems"
        return f"{short_repr(value)} is too long", validator
    if kind in ("greater_than_equal", "greater_than"):
        bound = ctx.get("ge", ctx.get("gt"))
        return f"{short_repr(value)} is less than the minimum of {bound}", "minimum"
    if kind in ("less_than_equal", "less_than"):
        bound = ctx.get("le", ctx.get("lt"))
        return f"{short_repr(value)} is greater than the maximum of {bound}", "maximum"
    if kind in ("literal_error", "enum"):
        return f"{short_repr(value)} is not one of {ctx.get('expected', '')}", "enum"
    type_name = _type_name(kind)
    if type_name is not None:
        return f"{short_repr(value)} is not of type '{type_name}'", "type"
    where = ".".join(str(p) for p in loc)
    return (f"{where}: {item['msg']}" if where else str(item["msg"])), kind


_OBJECT_VALIDATORS = {"required", "additionalProperties"}
# Keys of a leaf schema in the order Placement's schemas write them (its message prints the dict).
_KEY_ORDER = ("type", "format", "pattern", "minLength", "maxLength")


def _instance_path(item: Any) -> tuple[Any, ...]:
    """Where in the instance jsonschema reports ``item``: the object itself for a missing or
    unexpected key (``required``, ``additionalProperties``), else the value's location."""
    loc = tuple(item.get("loc", ()))
    if "[key]" in loc:
        return loc[: loc.index("[key]") - 1]
    if item["type"] in ("missing", "extra_forbidden"):
        return loc[:-1]
    return loc


def _relevance(item: Any) -> tuple[int, tuple[tuple[bool, Any], ...]]:
    """jsonschema's ``best_match`` order: the shallowest error, then among siblings the one
    latest in the instance (its key compares instance paths and keeps the greatest)."""
    path = _instance_path(item)
    return -len(path), tuple((isinstance(p, str), p) for p in path)


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved: dict[str, Any] = root.get("$defs", {}).get(ref.split("/")[-1], {})
        return resolved
    return schema


def _leaf(root: dict[str, Any], path: tuple[Any, ...]) -> tuple[str, dict[str, Any]] | None:
    """``(schema path, sub-schema)`` of the string value at ``path``, through ``properties``
    and ``items`` only (the shapes Placement's schemas share with ours); else ``None``."""
    schema, where = _resolve(root, root), ""
    for part in path:
        if isinstance(part, str) and part in schema.get("properties", {}):
            schema, where = schema["properties"][part], f"{where}['properties']['{part}']"
        elif isinstance(part, int) and isinstance(schema.get("items"), dict):
            schema, where = schema["items"], f"{where}['items']"
        else:
            return None
        schema = _resolve(schema, root)
    if schema.get("type") != "string":
        return None
    return where, schema


def _details(item: Any, validator: str, message: str, schema: dict[str, Any]) -> str | None:
    """jsonschema's ``in schema[...]:  {sub-schema}  On instance[...]:  value`` for an error on
    a string value, or ``None`` where our schema cannot say what Placement's would print."""
    path = _instance_path(item)
    leaf = _leaf(schema, path)
    if leaf is None or not path:
        return None
    where, sub = leaf
    shown = {key: sub[key] for key in _KEY_ORDER if key in sub}
    if validator == "format" and message.endswith("is not a 'uuid'"):
        shown["format"] = "uuid"
        shown = {key: shown[key] for key in _KEY_ORDER if key in shown}
    instance = "".join(f"[{p!r}]" for p in path)
    # jsonschema pretty-prints the sub-schema (72 columns, indented 4) and Placement's error
    # formatter turns each line break into a blank.
    dump = textwrap.indent(pprint.pformat(shown, width=72, sort_dicts=False), "    ")
    dump = dump.replace("\n", " ")
    return f"{where}: {dump}  On instance{instance}:     {short_repr(item.get('input'))}"


def _schema_path(loc: tuple[Any, ...], validator: str) -> str:
    """jsonschema's ``schema['properties'][...]`` suffix, for top-level fields only (deeper
    paths go through patternProperties that pydantic does not report)."""
    path = loc[:-1] if validator in _OBJECT_VALIDATORS else loc
    if len(path) == 1 and isinstance(path[0], str):
        return f"['properties']['{path[0]}']"
    return ""


def describe(errors: list[Any], schema: dict[str, Any] | None = None) -> str:
    """Placement's wording of the error jsonschema would report among a pydantic
    ``ValidationError.errors()`` list (``best_match``: the shallowest, then the latest sibling).

    Example: ``"'project_id' is a required property  Failed validating 'required' in schema"``;
    ``"0 is less than the minimum of 1  Failed validating 'minimum' in
    schema['properties']['total']"``. With ``schema`` (the model's JSON schema), an error on a
    string value reached through properties and list items carries the sub-schema and the
    instance as Placement prints them: ``"'x' is not a 'uuid'  Failed validating 'format' in
    schema['items']:     {'type': 'string', 'format': 'uuid'}  On instance[1]:     'x'"``.
    """
    if not errors:
        return "Invalid input."
    item = max(errors, key=_relevance)
    message, validator = _message(item)
    details = _details(item, validator, message, schema) if schema is not None else None
    if details is None:
        details = _schema_path(tuple(item.get("loc", ())), validator)
    return f"{message}  Failed validating '{validator}' in schema{details}"
