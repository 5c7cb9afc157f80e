"""The OpenAPI document as exported to ``api-spec/openapi.json`` (stable, sorted JSON)."""

from __future__ import annotations

import json
from pathlib import Path

from placement_numa.app import build_openapi, create_app
from placement_numa.settings import Settings

__all__ = ["render_openapi", "DEFAULT_PATH"]

DEFAULT_PATH = Path(__file__).resolve().parents[1] / "api-spec" / "openapi.json"


def render_openapi() -> str:
    """Render the app's OpenAPI document (no database is touched) as indented, key-sorted JSON."""
    app = create_app(Settings(database_url="sqlite://", auto_migrate=False))
    return json.dumps(build_openapi(app), indent=2, sort_keys=True) + "\n"
