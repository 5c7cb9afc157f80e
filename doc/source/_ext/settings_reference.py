"""``.. placement-numa-settings::``: every ``Settings`` field as a table, generated.

One row per field of ``placement_numa.settings.Settings`` (or of the class named in the
directive's argument, e.g. ``placement_numa.agent.settings.AgentSettings``): its environment
variable (the class's ``env_prefix`` + the field name, upper case), default, ``placement.conf``
option (``conf_option`` in the field's ``json_schema_extra``) and description. The table cannot
drift from the code: a new field is a new row on the next build.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

__all__ = ["setting_rows", "setup"]


def _load(path: str) -> Any:
    module, _dot, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _default(field: Any) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
    else:
        value = field.default
    if value is None:
        return "*unset*"
    if value == "":
        return "*empty*"
    if isinstance(value, bool):
        return f"``{str(value).lower()}``"
    return f"``{value}``"


def setting_rows(cls: Any) -> list[tuple[str, str, str, str]]:
    """``(variable, default, placement.conf option, description)`` of every field of ``cls``."""
    prefix = str(cls.model_config.get("env_prefix", ""))
    rows = []
    for name, field in cls.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        option = str(extra.get("conf", ""))
        section, _dot, key = option.partition(".")
        conf = f"``[{section}] {key}``" if option else ""
        description = " ".join(str(field.description or "").split())
        rows.append((f"``{prefix}{name.upper()}``", _default(field), conf, description))
    return rows


class SettingsTable(SphinxDirective):
    """The table of one settings class (default: ``placement_numa.settings.Settings``)."""

    optional_arguments = 1

    def run(self) -> list[nodes.Node]:
        """Render the class's fields as a list-table."""
        cls = _load(self.arguments[0] if self.arguments else "placement_numa.settings.Settings")
        lines = [
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: 30 15 25 40",
            "",
            "   * - variable",
            "     - default",
            "     - placement.conf",
            "     - meaning",
        ]
        for row in setting_rows(cls):
            lines.append(f"   * - {row[0]}")
            lines += [f"     - {cell or ' '}" for cell in row[1:]]
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, "settings"), node)
        return node.children


def setup(app: Sphinx) -> dict[str, Any]:
    """Register ``placement-numa-settings``."""
    app.add_directive("placement-numa-settings", SettingsTable)
    app.add_directive("placement-numa-nova-differences", NovaDifferences)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


class NovaDifferences(SphinxDirective):
    """``.. placement-numa-nova-differences::``: the documented differences from Nova, from
    ``tests/nova_differences.py`` (the table the differential test classifies against)."""

    def run(self) -> list[nodes.Node]:
        """Render ``DIFFERENCES`` as a list-table: id, rule, Nova, ours, why."""
        differences = importlib.import_module("tests.nova_differences").DIFFERENCES
        lines = [".. list-table::", "   :header-rows: 1", "   :widths: 14 18 24 24 20", ""]
        lines += ["   * - id", "     - rule", "     - Nova", "     - ours", "     - why"]
        for d in differences:
            cells = [f"``{d.id}``", d.rule, d.nova, d.ours, d.why]
            lines.append(f"   * - {_markdown(cells[0])}")
            lines += [f"     - {_markdown(cell)}" for cell in cells[1:]]
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, "nova_differences"), node)
        return node.children


def _markdown(text: str) -> str:
    """Markdown inline code (`x`) as reStructuredText (``x``), on one line."""
    text = " ".join(str(text).split())
    return re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", text)
