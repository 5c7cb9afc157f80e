"""``.. placement-numa-cli::``: every command and sub-command of ``placement-numa``, generated
from its argparse parser (``placement_numa.cli.build_parser``): usage, help, every option with
its help text, and the exit codes the parser documents. A new command or option is on the page
at the next build.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

__all__ = ["commands", "setup"]

_UNDERLINES = "-~^"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help(parser: argparse.ArgumentParser, name: str) -> str:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.dest == name:
                    return str(choice.help or "")
    return ""


def commands(
    parser: argparse.ArgumentParser, prefix: str = "placement-numa"
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """``(full command, help, parser)`` of every command under ``parser``, depth first."""
    for name, sub in _subcommands(parser).items():
        full = f"{prefix} {name}"
        yield full, _help(parser, name), sub
        yield from commands(sub, full)


def _escape(text: str) -> str:
    """Plain help text as reStructuredText (no markup characters interpreted)."""
    text = " ".join(str(text).split())
    for char in "\\*`|":
        text = text.replace(char, "\\" + char)
    return re.sub(r"(\w)_(?=\W|$)", r"\1\\_", text)


def _options(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        names = ", ".join(action.option_strings) or action.dest
        metavar = "" if action.nargs == 0 else f" {action.metavar or action.dest.upper()}"
        help_text = action.help or ""
        if "%(default)" in help_text:
            help_text = help_text.replace("%(default)s", str(action.default))
        rows += [f"   * - ``{names}{metavar if action.option_strings else ''}``"]
        rows += [f"     - {_escape(help_text) or ' '}"]
    if not rows:
        return []
    header = [".. list-table::", "   :header-rows: 0", "   :widths: 35 65", ""]
    return [*header, *rows, ""]


def _lines(parser: argparse.ArgumentParser) -> list[str]:
    lines: list[str] = []
    for full, help_text, sub in commands(parser):
        depth = full.count(" ") - 1
        title = f"``{full}``"
        lines += [title, _UNDERLINES[min(depth, 2)] * len(title), ""]
        if help_text:
            lines += [_escape(help_text[:1].upper() + help_text[1:]) + ".", ""]
        if sub.description and sub.description != help_text:
            lines += [_escape(sub.description), ""]
        usage = sub.format_usage().strip().removeprefix("usage: ")
        lines += [".. code-block:: text", "", *("   " + u for u in usage.splitlines()), ""]
        lines += _options(sub)
        if sub.epilog:
            lines += [_escape(sub.epilog), ""]
    return lines


class CliReference(SphinxDirective):
    """Render ``placement_numa.cli.build_parser()``."""

    def run(self) -> list[nodes.Node]:
        """The top-level epilog (exit codes), then one section per command."""
        from placement_numa.cli import build_parser

        parser = build_parser()
        lines = []
        if parser.epilog:
            lines += [_escape(parser.epilog[:1].upper() + parser.epilog[1:]), ""]
        lines += _lines(parser)
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, "placement-numa --help"), node)
        return node.children


def setup(app: Sphinx) -> dict[str, Any]:
    """Register ``placement-numa-cli``."""
    app.add_directive("placement-numa-cli", CliReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
