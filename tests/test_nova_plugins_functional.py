"""placement-numa's Nova plugins in Nova 34's own functional framework (issue 28): the patched
Nova of ``tests/test_nova_functional.py`` with ``NUMACandidatesFilter`` and ``NUMARankWeigher``
enabled, against a live placement-numa (``tests/nova_functional/plugin_scenarios.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_nova_functional import nova as nova_func  # noqa: F401  (fixture)
from tests.test_nova_functional import run_nova_tests

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # the patched Nova virtualenv, minutes of fake-libvirt runs


def test_plugin_scenarios(
    nova_func: str,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "integrations" / "nova"))
    run_nova_tests(nova_func, tmp_path, "plugin_scenarios")
