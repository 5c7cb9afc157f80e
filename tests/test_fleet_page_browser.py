"""The fleet page (``/numa/fleet``, issue 31) in a real headless browser (Chromium and
chromedriver, driven with Selenium as ``test_docs_browser``): ``placement-numa serve --demo``
with a flavor catalogue, the browser sends the token header (Chrome DevTools
``Network.setExtraHTTPHeaders``, as an operator's proxy would), loads the first view, sorts by
free PCPU and clicks through to a host, whose page lists its cells and guests. The page loads
no script and nothing from another origin.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from tests.servers import running, service_env
from tests.test_docs_browser import CHROME_FLAGS, COMMAND, _browser_or_skip

pytestmark = pytest.mark.slow

PORT = 19241
CATALOGUE = [
    {"name": "m1.pinned", "vcpus": 4, "ram": 4096, "disk": 10,
     "extra_specs": {"hw:cpu_policy": "dedicated"}},
    {"name": "m1.two-cell", "vcpus": 8, "ram": 8192, "disk": 10,
     "extra_specs": {"hw:numa_nodes": "2"}},
]  # fmt: skip


def test_first_view_then_click_through_to_a_host(tmp_path: Path) -> None:
    chromium, driver_path = _browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    flavors = tmp_path / "flavors.json"
    flavors.write_text(json.dumps(CATALOGUE))
    env = service_env(
        PLACEMENT_NUMA_DATABASE_URL=f"sqlite:///{tmp_path / 'fleet.sqlite'}",
        PLACEMENT_NUMA_METRICS_FLAVORS_FILE=str(flavors),
    )
    argv = [COMMAND, "serve", "--demo", "--port", str(PORT)]
    with running(argv, PORT, tmp_path / "serve.log", env=env, cwd=tmp_path) as service:
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for flag in CHROME_FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={tempfile.mkdtemp(dir=tmp_path)}")
        browser = webdriver.Chrome(service=Service(driver_path), options=options)
        try:
            browser.set_page_load_timeout(60)
            browser.execute_cdp_cmd("Network.enable", {})
            browser.execute_cdp_cmd(
                "Network.setExtraHTTPHeaders",
                {"headers": {"x-auth-token": "admin", "x-roles": "admin"}},
            )

            def loaded(b: webdriver.Chrome) -> bool:  # the demo loads its hosts after start
                b.get(service.base_url + "/numa/fleet")
                return "Fleet: 10 hosts" in b.find_element(By.TAG_NAME, "h1").text

            WebDriverWait(browser, 60, poll_frequency=1).until(loaded)
            flavors_shown = browser.find_elements(By.CSS_SELECTOR, "#flavors td")
            assert "m1.pinned" in [td.text for td in flavors_shown]
            assert browser.find_elements(By.CSS_SELECTOR, "#stranded tr")
            assert len(browser.find_elements(By.CSS_SELECTOR, "#hosts svg")) > 10
            assert not browser.find_elements(By.CSS_SELECTOR, "script")
            browser.find_element(By.LINK_TEXT, "Free PCPU").click()
            WebDriverWait(browser, 30).until(lambda b: "sort=free_pcpu" in b.current_url)
            first = browser.find_element(By.CSS_SELECTOR, "a.host")
            name = first.text
            browser.save_screenshot(str(tmp_path / "fleet.png"))
            first.click()
            WebDriverWait(browser, 30).until(
                lambda b: b.find_elements(By.CSS_SELECTOR, "h1#host")
            )
            assert browser.find_element(By.CSS_SELECTOR, "h1#host").text == name
            assert "/numa/fleet/hosts/" in browser.current_url
            assert "cell 0" in browser.page_source
            assert browser.find_elements(By.CSS_SELECTOR, "#guests, p.muted")
            resources = browser.execute_script(
                "return performance.getEntriesByType('resource').map(e => e.name)"
            )
        finally:
            browser.quit()
    assert resources == [], resources  # nothing fetched but the page itself
    assert (tmp_path / "fleet.png").stat().st_size > 10_000
