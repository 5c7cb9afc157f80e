"""CORS in a real browser: a page on another origin calls the API with ``fetch``.

The service runs with only ``[cors] allowed_origin`` set (the other ``[cors]`` options keep
upstream Placement's defaults). A second HTTP server on another loopback port serves a page
whose script sends ``GET /resource_providers`` with ``x-auth-token`` and
``openstack-api-version``: headers that are not CORS-safelisted, so Chromium sends a preflight
``OPTIONS`` first and only sends the request if the preflight allows them. The script then
reads the exposed ``openstack-api-version`` and ``x-openstack-request-id`` response headers.
A page from an origin that is not allowed fails the same fetch.

Skipped when Chromium or chromedriver is missing, except under CI (``.ci/run`` installs them).
"""

from __future__ import annotations

import http.server
import json
import random
import shutil
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.servers import free_port, running, service_env
from tests.test_docs_browser import _browser_or_skip, start_chrome

pytestmark = pytest.mark.slow

COMMAND = shutil.which("placement-numa", path=str(Path(sys.executable).parent)) or "placement-numa"

PAGE = """<!doctype html><html><body><script>
window.result = null;
fetch("%(api)s/resource_providers", {
  headers: {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
}).then(async (r) => {
  window.result = JSON.stringify({
    status: r.status,
    version: r.headers.get("openstack-api-version"),
    request_id: r.headers.get("x-openstack-request-id"),
    body: await r.json()
  });
}).catch((e) => { window.result = JSON.stringify({error: String(e)}); });
</script></body></html>
"""


def _ports(count: int) -> list[int]:
    ports = list(range(19280, 19298))
    random.shuffle(ports)
    chosen: list[int] = []
    for _ in range(count):
        chosen.append(free_port(p for p in ports if p not in chosen))
    return chosen


@contextmanager
def _page_server(port: int, api: str) -> Iterator[str]:
    """Serve ``PAGE`` at ``http://127.0.0.1:<port>/`` (another origin than the API)."""
    body = (PAGE % {"api": api}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_browser_fetch_from_another_origin(tmp_path: Path) -> None:
    chromium, driver_path = _browser_or_skip()
    from selenium.webdriver.support.ui import WebDriverWait

    api_port, page_port, other_port = _ports(3)
    origin = f"http://127.0.0.1:{page_port}"
    conf = tmp_path / "placement.conf"
    conf.write_text(
        f"[cors]\nallowed_origin = {origin}\n"
        f"[placement_database]\nconnection = sqlite:///{tmp_path / 'cors.sqlite'}\n"
    )
    argv = [COMMAND, "serve", "--config-file", str(conf), "--port", str(api_port)]
    env = service_env()
    with (
        running(argv, api_port, tmp_path / "serve.log", env=env, cwd=tmp_path) as service,
        _page_server(page_port, service.base_url) as allowed_page,
        _page_server(other_port, service.base_url) as other_page,
    ):
        browser = start_chrome(chromium, driver_path, tmp_path)
        try:
            browser.set_page_load_timeout(60)
            results = []
            for page in (allowed_page, other_page):
                browser.get(page + "/")
                WebDriverWait(browser, 60).until(
                    lambda b: b.execute_script("return window.result") is not None
                )
                results.append(json.loads(browser.execute_script("return window.result")))
        finally:
            browser.quit()
        log = service.log_text()
    allowed, other = results
    assert allowed.get("status") == 200, allowed
    assert allowed["body"] == {"resource_providers": []}
    assert allowed["version"] == "placement 1.39"
    assert allowed["request_id"].startswith("req-")
    assert "error" in other, other  # the browser refused the answer to an unlisted origin
    assert '"OPTIONS /resource_providers" status: 200' in log  # the preflight
