"""``/docs``: Swagger UI served from this service, so an offline control plane sees the API
documentation (no CDN). The assets (Swagger UI 5, which reads OpenAPI 3.1) come from the
``fastapi-offline`` package's static files, served by FastAPI's "self-hosting JavaScript and CSS
for docs" recipe: ``/docs/assets/swagger-ui-bundle.js``, ``/docs/assets/swagger-ui.css`` and
the favicon, all public like ``/docs`` itself (``api.auth.PUBLIC_PATHS``).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["install_docs", "DOCS_ASSETS", "ASSET_PATHS"]

DOCS_ASSETS = "/docs/assets"
ASSET_PATHS = frozenset(
    {
        f"{DOCS_ASSETS}/swagger-ui-bundle.js",
        f"{DOCS_ASSETS}/swagger-ui.css",
        f"{DOCS_ASSETS}/favicon.png",
    }
)


def _assets_dir() -> Path:
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


def install_docs(app: FastAPI, title: str) -> None:
    """Add ``GET /docs`` (Swagger UI over ``/openapi.json``) and its local assets to ``app``
    (created with ``docs_url=None``)."""
    app.mount(DOCS_ASSETS, StaticFiles(directory=_assets_dir()), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{title} - API documentation",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon.png",
        )
