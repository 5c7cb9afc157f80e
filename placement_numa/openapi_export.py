"""The OpenAPI document as exported to ``api-spec/openapi.json`` (stable, sorted JSON).

``DEFAULT_PATH`` is the document of a source checkout. An installed copy (a wheel in
site-packages) has no checkout: ``checkout_spec_path()`` is then ``None`` and
``placement-numa export-openapi`` writes to standard output or to ``--output``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

__all__ = ["render_openapi", "DEFAULT_PATH", "checkout_spec_path"]

_CHECKOUT = Path(__file__).resolve().parents[1]
DEFAULT_PATH = _CHECKOUT / "api-spec" / "openapi.json"


def checkout_spec_path() -> Path | None:
    """``api-spec/openapi.json`` of the source checkout this package runs from, or ``None``
    when it runs from an installed copy (no ``pyproject.toml`` beside the package)."""
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "placement_numa").is_dir():
        return DEFAULT_PATH
    return None


def render_openapi() -> str:
    """Render the app's OpenAPI document (no database is touched) as indented, key-sorted JSON.

    The app is built with ``auth_strategy=noauth2`` (the document does not depend on it); its
    start-up warning, meant for servers, is muted here."""
    from placement_numa.app import build_openapi, create_app
    from placement_numa.settings import Settings

    auth_log = logging.getLogger("placement_numa.api.auth")
    previous = auth_log.level
    auth_log.setLevel(logging.ERROR)
    try:
        app = create_app(
            Settings(database_url="sqlite://", auto_migrate=False, auth_strategy="noauth2")
        )
    finally:
        auth_log.setLevel(previous)
    return json.dumps(build_openapi(app), indent=2, sort_keys=True) + "\n"
