"""Logs, request ids and proxy headers of a real served process (``placement-numa serve
--config-file``), read back from the log file it writes (oslo.log).

``test_text_log_file``: ``[DEFAULT] debug = true`` and ``log_file``: the file holds uvicorn's own
lines, DEBUG lines, and one access line per request in upstream Placement's format with the
request ids ``[<global> <local> <user> <project> ...]``; Nova's ``X-Openstack-Request-Id`` is
the global id when it is ``req-<uuid>`` and is dropped otherwise; the response carries the
local id. ``[oslo_middleware] enable_proxy_headers_parsing = true``: ``X-Forwarded-*`` and
``Forwarded`` set the client address (access line), scheme and host (``Location``), from any
peer. ``[healthcheck] backends = disable_by_file``: the service drains while the file exists.

``test_json_log_dir``: ``use_json`` and ``log_dir``: every line (uvicorn's included) is a JSON
object with oslo.log's ``context`` and the access line's fields; proxy headers are ignored by
default.
"""

from __future__ import annotations

import json
import logging
import random
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.servers import free_port, running, service_env

pytestmark = pytest.mark.slow

COMMAND = shutil.which("placement-numa", path=str(Path(sys.executable).parent)) or "placement-numa"
GLOBAL_ID = "req-11111111-2222-4333-8444-555555555555"
LOCAL_ID = re.compile(r"^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _port() -> int:
    ports = list(range(19260, 19280))
    random.shuffle(ports)
    return free_port(ports)


def _serve(tmp_path: Path, conf: str, port: int) -> list[str]:
    path = tmp_path / "placement.conf"
    path.write_text(
        conf + f"\n[placement_database]\nconnection = sqlite:///{tmp_path / 'db.sqlite'}\n"
    )
    return [COMMAND, "serve", "--config-file", str(path), "--port", str(port)]


def _wait_for(path: Path, needle: str, timeout: float = 30.0) -> str:
    """The file's text once it contains ``needle`` (handlers flush per record)."""
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text() if path.exists() else ""
        if needle in text or time.monotonic() > deadline:
            return text
        time.sleep(0.1)


def test_text_log_file(tmp_path: Path) -> None:
    log_file = tmp_path / "logs" / "placement.log"
    log_file.parent.mkdir()
    drain = tmp_path / "drain"
    port = _port()
    argv = _serve(
        tmp_path,
        f"[DEFAULT]\ndebug = true\nlog_file = {log_file}\n"
        "[oslo_middleware]\nenable_proxy_headers_parsing = true\n"
        f"[healthcheck]\nbackends = disable_by_file\ndisable_by_file_path = {drain}\n",
        port,
    )
    env = service_env()
    with running(argv, port, tmp_path / "stdout.log", env=env, cwd=tmp_path) as service:
        with service.client() as client:
            nova = client.get("/resource_providers", headers={"x-openstack-request-id": GLOBAL_ID})
            bogus = client.get("/traits", headers={"x-openstack-request-id": "req-not-a-uuid"})
            forwarded = client.put(
                "/traits/CUSTOM_BEHIND_PROXY",
                headers={
                    "x-forwarded-for": "203.0.113.7",
                    "x-forwarded-proto": "https",
                    "x-forwarded-host": "placement.example.com",
                },
            )
            rfc7239 = client.put(
                "/traits/CUSTOM_RFC7239",
                headers={"forwarded": "for=198.51.100.9;proto=https;host=api.example.org"},
            )
            healthy = client.get("/healthcheck")
            drain.write_text("")
            drained = client.get("/healthcheck")
        text = _wait_for(log_file, '"GET /healthcheck" status: 503')
    assert nova.status_code == 200 and bogus.status_code == 200
    local = nova.headers["x-openstack-request-id"]
    assert LOCAL_ID.match(local) and local != GLOBAL_ID
    assert LOCAL_ID.match(bogus.headers["x-openstack-request-id"])
    assert (
        forwarded.headers["location"] == "https://placement.example.com/traits/CUSTOM_BEHIND_PROXY"
    )
    assert rfc7239.headers["location"] == "https://api.example.org/traits/CUSTOM_RFC7239"
    assert healthy.status_code == 200 and healthy.text == "OK"
    assert drained.status_code == 503 and "DISABLED BY FILE" in drained.text

    lines = text.splitlines()
    assert any("uvicorn.error" in line and "Started server process" in line for line in lines)
    assert any(" DEBUG " in line for line in lines), "debug = true not honoured"
    nova_line = next(line for line in lines if local in line and "placement_numa.access" in line)
    assert f"[{GLOBAL_ID} {local} admin admin " in nova_line
    assert re.search(
        r'\] 127\.0\.0\.1 "GET /resource_providers" status: 200 len: \d+ microversion: 1\.39'
        r" time: \d+\.\d{6}$",
        nova_line,
    ), nova_line
    # every line of that request carries both ids (the DEBUG "Starting request" line too)
    mine = [line for line in lines if local in line]
    assert len(mine) >= 2 and all(GLOBAL_ID in line for line in mine)
    bogus_line = next(
        line
        for line in lines
        if bogus.headers["x-openstack-request-id"] in line and "access" in line
    )
    assert f"[None {bogus.headers['x-openstack-request-id']} admin admin " in bogus_line
    assert "req-not-a-uuid" not in text
    assert any('203.0.113.7 "PUT /traits/CUSTOM_BEHIND_PROXY" status: 201' in x for x in lines)
    assert any('198.51.100.9 "PUT /traits/CUSTOM_RFC7239" status: 201' in x for x in lines)
    assert any('"GET /healthcheck" status: 503' in line for line in lines)
    assert "Traceback" not in text


def test_json_log_dir(tmp_path: Path) -> None:
    log_dir = tmp_path / "var-log"
    log_dir.mkdir()
    port = _port()
    argv = _serve(
        tmp_path,
        f"[DEFAULT]\nuse_json = true\nlog_dir = {log_dir}\nlog_file = placement-api.log\n",
        port,
    )
    with running(argv, port, tmp_path / "stdout.log", env=service_env(), cwd=tmp_path) as service:
        with service.client() as client:
            response = client.get(
                "/resource_providers",
                headers={"x-openstack-request-id": GLOBAL_ID, "x-forwarded-for": "203.0.113.7"},
            )
            unauthenticated = httpx.get(service.base_url + "/resource_providers", timeout=30)
        text = _wait_for(
            log_dir / "placement-api.log", unauthenticated.headers["x-openstack-request-id"]
        )
    local = response.headers["x-openstack-request-id"]
    records = [json.loads(line) for line in text.splitlines()]  # every line is JSON
    assert any(r["name"] == "uvicorn.error" for r in records)
    access = next(
        r
        for r in records
        if r["name"] == "placement_numa.access" and r["context"].get("request_id") == local
    )
    assert access["context"]["global_request_id"] == GLOBAL_ID
    assert access["context"]["user"] == "admin"
    extra = access["extra"]
    assert extra["client"] == "127.0.0.1"  # proxy headers ignored unless enabled
    assert extra["method"] == "GET" and extra["path"] == "/resource_providers"
    assert extra["route"] == "/resource_providers" and extra["status"] == 200
    assert extra["microversion"] == "1.39" and extra["length"] == int(
        response.headers["content-length"]
    )
    assert isinstance(extra["duration_ms"], float)
    refused = next(
        r
        for r in records
        if r["name"] == "placement_numa.access"
        and r["context"].get("request_id") == unauthenticated.headers["x-openstack-request-id"]
    )
    assert refused["extra"]["status"] == 401 and refused["extra"]["microversion"] == "-"


@pytest.fixture
def root_logging() -> Iterator[None]:
    """Restore the root logger (handlers, level) and the excepthook oslo.log's setup replaces."""
    root = logging.getLogger()
    handlers, level, excepthook = list(root.handlers), root.level, sys.excepthook
    try:
        yield
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
            if handler not in handlers:
                handler.close()
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
        sys.excepthook = excepthook


def test_deprecated_env_and_reload(tmp_path: Path, root_logging: None) -> None:
    """``PLACEMENT_NUMA_LOG_JSON`` still wins over the file (with a deprecation warning);
    ``reload_logging`` picks up a new ``log_file`` and ``debug``; ``log_config_append``
    replaces oslo.log's own handlers."""
    from placement_numa.observability.logs import reload_logging
    from placement_numa.service_logging import setup_service_logging
    from placement_numa.settings import Settings, load_config

    first, second = tmp_path / "first.log", tmp_path / "second.log"
    conf_path = tmp_path / "placement.conf"
    conf_path.write_text(f"[DEFAULT]\nlog_file = {first}\n")
    conf = setup_service_logging(Settings(config_file=conf_path, log_json=True))
    log = logging.getLogger("placement_numa.test_logs")
    log.debug("not at debug yet")
    log.info("first line")
    records = [json.loads(line) for line in first.read_text().splitlines()]
    assert [r["message"] for r in records][-1] == "first line"
    assert any("PLACEMENT_NUMA_LOG_JSON is deprecated" in r["message"] for r in records)
    assert not any(r["message"] == "not at debug yet" for r in records)

    conf_path.write_text(f"[DEFAULT]\nlog_file = {second}\ndebug = true\n")
    assert reload_logging(conf)
    log.debug("debug now")
    assert json.loads(second.read_text().splitlines()[-1])["message"] == "debug now"

    conf_path.write_text("[DEFAULT]\nlog_file = [unbalanced\ndebug = maybe\n")
    assert not reload_logging(conf)  # does not parse: previous logging kept
    log.info("still second")
    assert "still second" in second.read_text()

    appended = tmp_path / "appended.log"
    logging_ini = tmp_path / "logging.conf"
    logging_ini.write_text(
        "[loggers]\nkeys = root\n[handlers]\nkeys = file\n[formatters]\nkeys = plain\n"
        "[logger_root]\nlevel = INFO\nhandlers = file\n"
        f"[handler_file]\nclass = FileHandler\nargs = ('{appended}',)\nformatter = plain\n"
        "[formatter_plain]\nformat = APPENDED %(name)s %(message)s\n"
    )
    conf_path.write_text(f"[DEFAULT]\nlog_config_append = {logging_ini}\n")
    setup_service_logging(Settings(config_file=conf_path), load_config(conf_path))
    log.info("through the operator's file")
    assert "APPENDED placement_numa.test_logs through the operator's file" in appended.read_text()


def test_control_characters_from_clients_never_forge_a_line(tmp_path: Path) -> None:
    """Issue 29: ``%0A`` (and any control character) in a request's path or query string is
    written escaped: each record stays one line, so a client cannot forge a log line."""
    log_file = tmp_path / "placement.log"
    port = _port()
    argv = _serve(tmp_path, f"[DEFAULT]\nlog_file = {log_file}\n", port)
    forged = "2026-11-26 14:00:00.000 1 INFO placement_numa.access [None req-x admin] forged"
    path = "/resource_providers/x%0A" + forged.replace(" ", "%20") + "%0D%1B%5B31m%E2%80%A8"
    with running(argv, port, tmp_path / "stdout.log", env=service_env(), cwd=tmp_path) as service:
        with service.client() as client:
            answered = client.get(path)
            queried = client.get("/resource_providers?name=a%0Ab%09c")
        text = _wait_for(log_file, "name=a")
    assert answered.status_code == 404 and queried.status_code == 200
    lines = text.splitlines()
    assert not any(line.startswith(forged[:30]) for line in lines), text
    access = next(line for line in lines if "forged" in line)
    assert '"GET /resource_providers/x\\n2026-11-26 14:00:00.000 1 INFO' in access
    assert 'forged\\r\\x1b[31m\\u2028" status: 404' in access
    assert any('"GET /resource_providers?name=a%0Ab%09c" status: 200' in line for line in lines)
