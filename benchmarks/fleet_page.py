"""The fleet page ``/numa/fleet`` (issue 31) in headless Chromium at fleet scale: the first
view's time to ``load`` as the browser measures it (Navigation Timing: ``loadEventEnd`` from
the navigation's start) and the server's part (``responseEnd - requestStart``), with the
service's CPU seconds per view (``/proc``) and the load average.

Fleet: ``scale.py``'s mixed fleet (SQL-seeded SQLite, 7 providers per host, guests on 60%),
served by ``placement-numa serve`` (one worker, noauth2) with ``capacity.py``'s six flavors as
``[metrics] flavors_file`` (``--no-catalogue``: none). The first view after start is cold (the
worker loads the fleet and starts counting the catalogue in the background; the view waits at
most 1 s for it); the script then reloads until the count is shown (its wall and CPU time
printed) and measures ``--rounds`` warm views (p50). ``--screenshot PATH`` saves a PNG of the
last view.

    python benchmarks/fleet_page.py --hosts 10000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from capacity import FLAVORS  # benchmarks/capacity.py
from proc_cpu import cpu_seconds, descendants
from scale import seeded
from side_by_side import SERVER_PIDS, ours

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", "--window-size=1280,1800")  # fmt: skip


def browser() -> Any:
    """Headless Chromium sending the token header to every request."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='pn-chrome-')}")
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.set_page_load_timeout(300)
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd(
        "Network.setExtraHTTPHeaders", {"headers": {"x-auth-token": "admin", "x-roles": "admin"}}
    )
    return driver


def view(driver: Any, url: str, pids: list[int]) -> tuple[float, float, float, int]:
    """(load ms, server ms, service CPU s, bytes) of one navigation to ``url``."""
    cpu = cpu_seconds(pids)
    driver.get(url)
    timing = driver.execute_script(
        "const t = performance.getEntriesByType('navigation')[0];"
        "return [t.loadEventEnd, t.responseEnd - t.requestStart, t.transferSize];"
    )
    return float(timing[0]), float(timing[1]), cpu_seconds(pids) - cpu, int(timing[2])


def main() -> int:
    """Seed (once), serve, measure; prints one line per view."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-page", type=int, default=50)
    parser.add_argument("--port", type=int, default=19242)
    parser.add_argument("--no-catalogue", action="store_true")
    parser.add_argument("--screenshot", type=Path)
    parser.add_argument("--db", help="SQLite file (default /tmp/pn-fleet-page-<hosts>.sqlite)")
    args = parser.parse_args()
    if not 1 <= args.hosts <= 100_000 or not 1 <= args.rounds <= 20:
        parser.error("--hosts 1..100000, --rounds 1..20")
    url = seeded(args.hosts, args.db or f"/tmp/pn-fleet-page-{args.hosts}.sqlite")
    env = {}
    if not args.no_catalogue:
        catalogue = Path(tempfile.mkdtemp(prefix="pn-fleet-page-")) / "flavors.json"
        catalogue.write_text(json.dumps(FLAVORS))
        env["PLACEMENT_NUMA_METRICS_FLAVORS_FILE"] = str(catalogue)
    with ours(args.port, url, workers=1, **env) as base:
        pids = descendants(SERVER_PIDS[base])
        page = f"{base}/numa/fleet?per_page={args.per_page}"
        driver = browser()
        try:
            loads = []
            load, server, cpu, size = view(driver, page, pids)
            print(f"cold: load {load:.0f} ms, server {server:.0f} ms, service CPU {cpu:.2f} s, "
                  f"{size / 1024:.0f} KiB")  # fmt: skip
            started, cpu = time.perf_counter(), cpu_seconds(pids)
            while "Counting the flavors" in driver.page_source:
                if time.perf_counter() - started > 600:
                    raise SystemExit("the catalogue was not counted in 600 s")
                time.sleep(1)
                driver.get(page)
            if not args.no_catalogue:
                print(f"catalogue counted {time.perf_counter() - started:.1f} s after the cold "
                      f"view (service CPU {cpu_seconds(pids) - cpu:.1f} s)")  # fmt: skip
            for _ in range(args.rounds):
                load, server, cpu, size = view(driver, page, pids)
                print(f"warm: load {load:.0f} ms, server {server:.0f} ms, service CPU "
                      f"{cpu:.2f} s")  # fmt: skip
                loads.append(load)
            if args.screenshot is not None:
                driver.save_screenshot(str(args.screenshot))
        finally:
            driver.quit()
    catalogue_text = "no catalogue" if args.no_catalogue else f"{len(FLAVORS)} flavors"
    print(
        f"{args.hosts} hosts, {catalogue_text}, {args.per_page} per page: warm p50 load "
        f"{statistics.median(loads):.0f} ms; load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
