"""The fleet page (``/numa/fleet``, issue 31) in a real headless browser (Chromium and
chromedriver, driven with Selenium as ``test_docs_browser``): ``placement-numa serve --demo``
with a flavor catalogue, the browser sends the token header (Chrome DevTools
``Network.setExtraHTTPHeaders``, as an operator's proxy would), loads the first view, sorts by
free PCPU and clicks through to a host, whose page lists its cells and guests. The page loads
no script and nothing from another origin.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest

from tests.servers import running, service_env
from tests.test_docs_browser import COMMAND, _browser_or_skip, start_chrome

pytestmark = pytest.mark.slow

PORT = 19241
CATALOGUE = [
    {"name": "m1.pinned", "vcpus": 4, "ram": 4096, "disk": 10,
     "extra_specs": {"hw:cpu_policy": "dedicated"}},
    {"name": "m1.two-cell", "vcpus": 8, "ram": 8192, "disk": 10,
     "extra_specs": {"hw:numa_nodes": "2"}},
]  # fmt: skip


def _claim(base_url: str) -> tuple[str, str]:
    """Claim one m1.pinned through the API: (consumer uuid, host name)."""
    consumer = str(uuid.uuid4())
    flavor = {**CATALOGUE[0], "memory_mb": 4096, "root_gb": 10}
    del flavor["ram"], flavor["disk"], flavor["name"]
    body = {"flavor": flavor, "consumer_uuid": consumer, "consumer_generation": None,
            "project_id": "p", "user_id": "u"}  # fmt: skip
    headers = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
    r = httpx.post(base_url + "/allocation_candidates/claim", json=body, headers=headers)
    assert r.status_code == 200, r.text
    return consumer, str(r.json()["allocation_request"]["numa"]["host"])


def test_first_view_then_click_through_to_a_host(tmp_path: Path) -> None:
    chromium, driver_path = _browser_or_skip()
    from selenium import webdriver
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
        browser = start_chrome(chromium, driver_path, tmp_path)
        try:
            browser.set_page_load_timeout(60)
            browser.execute_cdp_cmd("Network.enable", {})
            browser.execute_cdp_cmd(
                "Network.setExtraHTTPHeaders",
                {"headers": {"x-auth-token": "admin", "x-roles": "admin"}},
            )

            def loaded(b: webdriver.Chrome) -> bool:  # the demo loads its hosts after start
                b.get(service.base_url + "/numa/fleet")
                heading = b.find_element(By.TAG_NAME, "h1").text
                return "Fleet: 10 hosts" in heading and "Counting the" not in b.page_source

            WebDriverWait(browser, 60, poll_frequency=1).until(loaded)
            consumer, host = _claim(service.base_url)
            browser.get(service.base_url + "/numa/fleet")
            flavors_shown = browser.find_elements(By.CSS_SELECTOR, "#flavors td")
            assert "m1.pinned" in [td.text for td in flavors_shown]
            assert browser.find_elements(By.CSS_SELECTOR, "#stranded tr")
            assert len(browser.find_elements(By.CSS_SELECTOR, "#hosts svg")) > 10
            assert not browser.find_elements(By.CSS_SELECTOR, "script")
            browser.find_element(By.LINK_TEXT, "Free PCPU").click()
            WebDriverWait(browser, 30).until(lambda b: "sort=free_pcpu" in b.current_url)
            browser.save_screenshot(str(tmp_path / "fleet.png"))
            browser.find_element(By.LINK_TEXT, host).click()
            WebDriverWait(browser, 30).until(lambda b: b.find_elements(By.CSS_SELECTOR, "h1#host"))
            assert browser.find_element(By.CSS_SELECTOR, "h1#host").text == host
            assert "/numa/fleet/hosts/" in browser.current_url
            assert len(browser.find_elements(By.CSS_SELECTOR, "table.cells tr")) >= 3
            guests = browser.find_elements(By.CSS_SELECTOR, "#guests tr.guest")
            assert [g.find_element(By.TAG_NAME, "td").text for g in guests] == [consumer]
            assert "4 PCPU" in guests[0].text
            resources = browser.execute_script(
                "return performance.getEntriesByType('resource').map(e => e.name)"
            )
        finally:
            browser.quit()
    assert resources == [], resources  # nothing fetched but the page itself
    assert (tmp_path / "fleet.png").stat().st_size > 10_000
