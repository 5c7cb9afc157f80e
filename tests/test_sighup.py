"""SIGHUP to a served process under load: policy and logging reloaded, zero failed requests.

For one worker ``serve`` reloads in place (``placement_numa.reload``); for several, uvicorn's
supervisor replaces each worker once its successor is ready; with ``--prefork`` the
supervisor and each forked worker reload in place. Load: 4 threads with keep-alive
clients GET /resource_providers throughout; every answer must be a 200. The proof of the reload:
placement.conf is switched (before the signal) to a second policy file that forbids listing
traits, and to JSON log lines.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.servers import HEADERS, free_port, running, service_env

pytestmark = pytest.mark.slow

SERVE = str(Path(sys.executable).with_name("placement-numa"))


def _conf(tmp_path: Path, policy: Path, *, json_logs: bool) -> str:
    return (
        f"[DEFAULT]\nuse_json = {str(json_logs).lower()}\n"
        f"[placement_database]\nconnection = sqlite:///{tmp_path / 'hup.sqlite'}\n"
        f"[api]\nauth_strategy = noauth2\n[oslo_policy]\npolicy_file = {policy}\n"
    )


def _load(base_url: str, stop: threading.Event, results: list[int | str]) -> None:
    with httpx.Client(base_url=base_url, headers=HEADERS, timeout=30) as client:
        while not stop.is_set():
            try:
                results.append(client.get("/resource_providers").status_code)
            except httpx.HTTPError as exc:
                results.append(f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize(
    ("workers", "mode"),
    [(1, []), (2, []), (2, ["--prefork"])],
    ids=["one-worker", "two-workers", "two-workers-prefork"],
)
def test_sighup_reloads_policy_and_logging_without_failed_requests(
    tmp_path: Path, workers: int, mode: list[str]
) -> None:
    open_policy = tmp_path / "open.yaml"
    open_policy.write_text('"placement:traits:list": "@"\n')
    closed_policy = tmp_path / "closed.yaml"
    closed_policy.write_text('"placement:traits:list": "!"\n')
    conf = tmp_path / "placement.conf"
    conf.write_text(_conf(tmp_path, open_policy, json_logs=False))
    port = free_port(range(19800, 19840))
    argv = [SERVE, "serve", "--config-file", str(conf), "--port", str(port)]
    argv += ["--workers", str(workers), *mode]
    env = {k: v for k, v in service_env().items() if k != "PLACEMENT_NUMA_AUTH_STRATEGY"}
    with running(argv, port, tmp_path / "serve.log", env=env, timeout=120) as service:
        with service.client() as client:
            assert client.get("/traits").status_code == 200
        stop = threading.Event()
        results: list[int | str] = []
        threads = [
            threading.Thread(target=_load, args=(service.base_url, stop, results)) for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        try:
            time.sleep(1.0)
            conf.write_text(_conf(tmp_path, closed_policy, json_logs=True))
            os.kill(service.process.pid, signal.SIGHUP)
            _wait_for_traits_status(service.base_url, 403, timeout=90)
            time.sleep(1.0)  # load continues on the reloaded process(es)
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)
        assert service.process.poll() is None, "the server exited on SIGHUP"
        failures = [r for r in results if r != 200]
        assert not failures and len(results) > 20, (failures[:5], len(results))
        with service.client() as client:
            client.get("/resource_providers")
        time.sleep(0.5)
        lines = service.log_text().splitlines()
        json_lines = [line for line in lines if line.startswith("{")]
        assert json_lines, lines[-10:]
        assert any(json.loads(line).get("name") == "placement_numa.access" for line in json_lines)


def _wait_for_traits_status(base_url: str, status: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with httpx.Client(base_url=base_url, headers=HEADERS, timeout=30) as client:
            # several workers: ask more than once, any worker may answer
            codes = {client.get("/traits").status_code for _ in range(6)}
        if codes == {status}:
            return
        assert time.monotonic() < deadline, codes
        time.sleep(0.3)


def test_a_bad_file_on_sighup_keeps_the_running_configuration(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:traits:list": "@"\n')
    conf = tmp_path / "placement.conf"
    conf.write_text(_conf(tmp_path, policy, json_logs=False))
    port = free_port(range(19840, 19860))
    argv = [SERVE, "serve", "--config-file", str(conf), "--port", str(port)]
    env = {k: v for k, v in service_env().items() if k != "PLACEMENT_NUMA_AUTH_STRATEGY"}
    with running(argv, port, tmp_path / "serve.log", env=env, timeout=120) as service:
        conf.write_text("not an ini file\n")
        os.kill(service.process.pid, signal.SIGHUP)
        deadline = time.monotonic() + 30
        while "reload refused" not in service.log_text():
            assert time.monotonic() < deadline, service.log_text()[-2000:]
            time.sleep(0.2)
        with service.client() as client:
            assert client.get("/traits").status_code == 200
        assert service.process.poll() is None
