"""``/docs`` in a real headless browser (Chromium and chromedriver from Debian's packages,
driven with Selenium): with the Swagger UI assets served by the service itself (no CDN; the
browser runs with background networking off), the page renders the operations list.

Skipped when Chromium or chromedriver is missing, except under CI (``.ci/run`` installs them).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.backends import in_ci
from tests.servers import running, service_env

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
COMMAND = shutil.which("placement-numa", path=str(BIN)) or "placement-numa"
CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,2000",
)


def _browser_or_skip() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not (chromium and driver):
        if in_ci():
            pytest.fail("chromium and chromium-driver must be installed in CI (.ci/run)")
        pytest.skip(
            "chromium / chromedriver not installed (apt-get install chromium chromium-driver)"
        )
    return chromium, driver


def start_chrome(chromium: str, driver_path: str, tmp_path: Path) -> Any:
    """A headless Chromium (Selenium ``webdriver.Chrome``) with ``CHROME_FLAGS`` and a fresh
    profile under ``tmp_path``; the caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="chrome-profile-", dir=tmp_path)
    options.add_argument(f"--user-data-dir={profile}")
    return webdriver.Chrome(service=Service(driver_path), options=options)


def test_docs_render_the_operations_list(tmp_path: Path) -> None:
    chromium, driver_path = _browser_or_skip()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    env = service_env(PLACEMENT_NUMA_DATABASE_URL=f"sqlite:///{tmp_path / 'docs.sqlite'}")
    with running(
        [COMMAND, "serve", "--port", "19240"], 19240, tmp_path / "serve.log", env=env, cwd=tmp_path
    ) as service:
        browser = start_chrome(chromium, driver_path, tmp_path)
        try:
            browser.set_page_load_timeout(60)
            browser.get(service.base_url + "/docs")
            WebDriverWait(browser, 60).until(
                lambda b: len(b.find_elements(By.CSS_SELECTOR, ".opblock")) > 20
            )
            operations = browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")
            paths = {element.text.replace("\u200b", "") for element in operations}
            browser.save_screenshot(str(tmp_path / "docs.png"))
            scripts = [
                element.get_attribute("src")
                for element in browser.find_elements(By.CSS_SELECTOR, "script[src]")
            ]
        finally:
            browser.quit()
        log = service.log_text()
    assert "/resource_providers/{uuid}" in paths and "/allocation_candidates" in paths
    assert len(operations) >= 40
    assert scripts and all(src.startswith(service.base_url) for src in scripts), scripts
    assert "GET /openapi.json" in log or "/openapi.json" in log
    assert (tmp_path / "docs.png").stat().st_size > 10_000
