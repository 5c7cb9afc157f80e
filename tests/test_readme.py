"""README lists every setting and every command (a newcomer's reference)."""

from __future__ import annotations

import argparse
from pathlib import Path

from placement_numa.cli import build_parser
from placement_numa.settings import Settings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_every_setting_is_in_the_readme() -> None:
    missing = [
        f"PLACEMENT_NUMA_{name.upper()}"
        for name in Settings.model_fields
        if f"`PLACEMENT_NUMA_{name.upper()}`" not in README
    ]
    assert not missing, f"add to README's settings table: {missing}"


def test_every_command_is_in_the_readme() -> None:
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    missing = [name for name in action.choices if f"`{name}" not in README]
    assert not missing, f"add to README's command table: {missing}"
