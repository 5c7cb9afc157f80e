"""The API reference, generated from ``api-spec/openapi.json`` (the document the service serves).

``.. openapi-reference::`` renders every path and method of the document, grouped by tag: the
operation's summary and description, the microversion it appeared in, its parameters (path,
query, header), the fields of its JSON request body (nested objects as ``a.b``, maps keyed by a
uuid or name as ``a.{key}.b``) and of its documented response bodies, and its responses. Where
the document carries ``x-min-microversion`` (an operation, a parameter, a body field; see
``placement_numa/api/openapi_microversions.py``) the reference says "since 1.x"; a field
without one is as old as its operation. Nothing here is written by hand: a new route, parameter
or field shows up on the next build, and ``placement-numa export-openapi --check`` (CI) keeps
the document equal to the app.

Options: ``:tags: a, b`` renders only those tags (in that order); ``:exclude-tags:``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

KEY = "x-min-microversion"
_METHODS = ("get", "post", "put", "patch", "delete")
_MAX_DEPTH = 4


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _since(own: str | None, floor: str) -> str:
    """The later of a field's own microversion and its operation's."""
    if own is None or _version_key(own) <= _version_key(floor):
        return floor
    return own


def _cell(text: str) -> str:
    """One line of a list-table cell (descriptions may span lines)."""
    return " ".join(str(text).split()) or " "


def _resolve(schema: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with a ``$ref`` followed (once per level)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        target = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
        return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _type(schema: dict[str, Any], document: dict[str, Any]) -> str:
    """A short type name: ``string``, ``integer | null``, ``array of string``, ``object``."""
    schema = _resolve(schema, document)
    if "anyOf" in schema or "oneOf" in schema:
        names = [_type(s, document) for s in schema.get("anyOf", schema.get("oneOf", []))]
        return " | ".join(dict.fromkeys(names))
    kind = schema.get("type")
    if kind == "array":
        return "array of " + _type(schema.get("items", {}), document)
    if isinstance(kind, list):
        return " | ".join(kind)
    if kind is None:
        return "object" if "properties" in schema or "patternProperties" in schema else "any"
    if "enum" in schema:
        return f"{kind}: " + ", ".join(f"``{v}``" for v in schema["enum"])
    return str(kind)


def _object_branch(schema: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """The object alternative of an ``anyOf`` or ``oneOf`` (``X | null``, or the shapes of a
    field across microversions: the first object), else ``schema`` itself."""
    schema = _resolve(schema, document)
    for option in schema.get("anyOf", schema.get("oneOf", [])):
        option = _resolve(option, document)
        if "properties" in option or "patternProperties" in option:
            return option
        if isinstance(option.get("additionalProperties"), dict):  # a map
            return option
    return schema


def _fields(
    schema: dict[str, Any], document: dict[str, Any], prefix: str, floor: str, depth: int = 0
) -> Iterator[tuple[str, str, bool, str, str]]:
    """``(name, type, required, since, description)`` of every field, nested ones flattened."""
    schema = _object_branch(schema, document)
    if depth > _MAX_DEPTH:
        return
    required = set(schema.get("required", []))
    for name, sub in sorted(schema.get("properties", {}).items()):
        since = _since(sub.get(KEY), floor)
        resolved = _resolve(sub, document)
        description = resolved.get("description", sub.get("description", ""))
        if "default" in sub and sub["default"] is not None:
            if description and not description.rstrip().endswith((".", ")", ":")):
                description += "."
            description = f"{description} Default: ``{json.dumps(sub['default'])}``.".strip()
        yield f"{prefix}{name}", _type(sub, document), name in required, since, description
        yield from _fields(sub, document, f"{prefix}{name}.", since, depth + 1)
        items = resolved.get("items")
        if isinstance(items, dict):
            yield from _fields(items, document, f"{prefix}{name}[].", since, depth + 1)
    for _pattern, sub in sorted(schema.get("patternProperties", {}).items()):
        yield from _fields(sub, document, f"{prefix}{{key}}.", floor, depth + 1)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        yield from _fields(extra, document, f"{prefix}{{key}}.", floor, depth + 1)


def _table(title: str, header: list[str], rows: list[list[str]], widths: str) -> list[str]:
    lines = [f".. list-table:: {title}", "   :header-rows: 1", f"   :widths: {widths}", ""]
    for row in [header, *rows]:
        lines.append(f"   * - {_cell(row[0])}")
        lines += [f"     - {_cell(cell)}" for cell in row[1:]]
    return [*lines, ""]


def _operation(path: str, method: str, op: dict[str, Any], document: dict[str, Any]) -> list[str]:
    """reStructuredText of one operation."""
    floor = op.get(KEY, "1.0")
    title = f"{method.upper()} {path}"
    lines = [title, "-" * len(title), ""]
    if op.get("summary"):
        lines += [f"**{op['summary']}**", ""]
    lines += [f"*Since microversion {floor}.*" if floor != "1.0" else "*Since 1.0.*", ""]
    lines += [*str(op.get("description", "")).strip().splitlines(), ""]
    params = [
        [
            f"``{p['name']}``",
            p["in"],
            "yes" if p.get("required") else "no",
            _type(p.get("schema", {}), document),
            _since(p.get(KEY), floor),
            p.get("description", ""),
        ]
        for p in op.get("parameters", [])
    ]
    if params:
        lines += _table(
            "Parameters",
            ["name", "in", "req.", "type", "since", "description"],
            params,
            "16 8 6 11 7 52",
        )
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
    if "schema" in body:
        schema = _resolve(body["schema"], document)
        if schema.get("description"):
            lines += [f"Request body: {_cell(schema['description'])}", ""]
        rows = [
            [f"``{n}``", t, "yes" if r else "no", s, d]
            for n, t, r, s, d in _fields(schema, document, "", floor)
        ]
        if rows:
            lines += _table(
                "Request body fields",
                ["field", "type", "req.", "since", "description"],
                rows,
                "24 14 6 7 49",
            )
    responses = []
    for status, response in sorted(op.get("responses", {}).items()):
        responses.append([f"``{status}``", response.get("description", "")])
        content = response.get("content", {}).get("application/json", {})
        schema = _resolve(content.get("schema", {}), document)
        rows = [[f"``{n}``", t, s, d] for n, t, _r, s, d in _fields(schema, document, "", floor)]
        if rows and status.startswith("2"):
            lines += _table(
                f"Response {status} fields",
                ["field", "type", "since", "description"],
                rows,
                "25 15 7 53",
            )
    lines += _table("Responses", ["status", "meaning"], responses, "10 90")
    return lines


class OpenAPIReference(SphinxDirective):
    """``.. openapi-reference::``: every operation of the configured OpenAPI document."""

    has_content = False
    option_spec = {"tags": directives.unchanged, "exclude-tags": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        """Parse the document and render it as sections, one per tag then per operation."""
        source = Path(self.config.openapi_document)
        self.env.note_dependency(str(source))
        document = json.loads(source.read_text())
        by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
        for path, item in sorted(document["paths"].items()):
            for method in _METHODS:
                if method in item:
                    tag = (item[method].get("tags") or ["other"])[0].replace("_", " ")
                    by_tag.setdefault(tag, []).append((path, method, item[method]))
        wanted = [t.strip() for t in self.options.get("tags", "").split(",") if t.strip()]
        excluded = {t.strip() for t in self.options.get("exclude-tags", "").split(",")}
        tags = wanted or sorted(by_tag, key=lambda t: (t.lower() != "versions", t.lower()))
        lines: list[str] = []
        for tag in tags:
            if tag in excluded or tag not in by_tag:
                continue
            heading = tag[:1].upper() + tag[1:]
            lines += [heading, "=" * len(heading), ""]
            for path, method, op in by_tag[tag]:
                lines += _operation(path, method, op, document)
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, str(source)), node)
        return node.children


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the directive and ``openapi_document`` (path of the OpenAPI JSON)."""
    app.add_config_value("openapi_document", "", "env")
    app.add_directive("openapi-reference", OpenAPIReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
