"""The documentation tree builds without a warning, and its generated pages read right in a
real browser (headless Chromium from Debian's packages, driven with Selenium).

The build is ``sphinx-build -W`` (warnings are errors), as ``tox -e docs`` and ``.ci/run`` run
it. Then, in the browser:

* the API reference shows every path and method of ``api-spec/openapi.json``, with the
  microversion that introduced an operation, a parameter and a body field;
* the configuration reference shows our own sections with their real defaults;
* the settings table has a row per ``Settings`` field; the policy reference names every rule.

Skipped without Sphinx installed (``pip install -r doc/requirements.txt``) or a browser,
except under CI (``.ci/run`` installs both).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from placement_numa.policies import list_rules
from placement_numa.settings import Settings
from tests.backends import in_ci
from tests.test_docs_browser import CHROME_FLAGS, _browser_or_skip

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML tree of ``sphinx-build -W`` (fails on any warning, with the build's output)."""
    try:
        import sphinx  # noqa: F401
    except ImportError:
        if in_ci():
            pytest.fail("sphinx must be installed in CI (.ci/run: doc/requirements.txt)")
        pytest.skip("sphinx not installed (pip install -r doc/requirements.txt)")
    out = tmp_path_factory.mktemp("html")
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(out / ".doctrees"), str(ROOT / "doc" / "source"), str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout + build.stderr
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Any:
    chromium, driver_path = _browser_or_skip()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="chrome-profile-", dir=tmp_path_factory.mktemp("chrome"))
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _open(browser: Any, site: Path, page: str) -> str:
    """Load ``page`` of the built site; its visible text."""
    from selenium.webdriver.common.by import By

    browser.get((site / page).as_uri())
    return str(browser.find_element(By.CSS_SELECTOR, "div.body").text)


def _section_rows(browser: Any, section_id: str, caption: str) -> dict[str, list[str]]:
    """``{first cell: cells}`` of the table captioned ``caption`` in section ``section_id``."""
    from selenium.webdriver.common.by import By

    section = browser.find_element(By.ID, section_id)
    for table in section.find_elements(By.CSS_SELECTOR, "table"):
        if table.find_element(By.CSS_SELECTOR, "caption").text.strip() == caption:
            rows = {}
            for row in table.find_elements(By.CSS_SELECTOR, "tbody tr"):
                cells = [cell.text for cell in row.find_elements(By.CSS_SELECTOR, "td")]
                rows[cells[0]] = cells
            return rows
    raise AssertionError(f"no table {caption!r} in #{section_id}")


def test_api_reference_shows_every_operation_and_its_microversions(
    site: Path, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    document = json.loads((ROOT / "api-spec" / "openapi.json").read_text())
    _open(browser, site, "reference/api.html")
    titles = {
        h.text.strip().rstrip("¶").strip()
        for h in browser.find_elements(By.CSS_SELECTOR, "div.body h3")
    }
    wanted = {
        f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    }
    assert wanted <= titles, sorted(wanted - titles)

    section = browser.find_element(By.ID, "get-allocation-candidates")
    assert "Since microversion 1.10." in section.text
    params = _section_rows(browser, "get-allocation-candidates", "Parameters")
    assert params["same_subtree"][4] == "1.36"
    assert params["root_required"][4] == "1.35"
    fields = _section_rows(browser, "put-allocations-consumer-uuid", "Request body fields")
    assert fields["consumer_generation"][3] == "1.28"
    assert fields["consumer_type"][3] == "1.38"
    assert fields["mappings"][3] == "1.34"
    browser.save_screenshot(str(site / "api.png"))


def test_configuration_and_policy_references(site: Path, browser: Any) -> None:
    text = _open(browser, site, "configuration/config.html")
    assert "placement_database" in text and "max_pool_size" in text
    assert "Default: 10" in " ".join(text.split()) or "Default\n10" in text

    text = _open(browser, site, "configuration/settings.html")
    missing = [n for n in Settings.model_fields if f"PLACEMENT_NUMA_{n.upper()}" not in text]
    assert not missing

    text = _open(browser, site, "configuration/policy.html")
    assert not [rule.name for rule in list_rules() if rule.name not in text]
    assert (site / "_static" / "placement-numa.conf.sample").is_file()
    assert (site / "_static" / "placement-numa.policy.yaml.sample").is_file()
