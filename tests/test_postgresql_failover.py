"""Issue 23: a PostgreSQL primary killed mid-load, its synchronous standby promoted.

``tests/pg_standby.py`` starts a primary and a synchronous streaming standby on loopback; one
``placement-numa serve`` reaches them through the multi-host libpq URL
(``host=127.0.0.1,127.0.0.1&port=P,S&target_session_attrs=read-write``). ``WRITERS`` clients
create resource providers as fast as they are answered; after ``KILL_AFTER_S`` the primary is
stopped with ``pg_ctl stop -m immediate`` and ``PROMOTE_AFTER_S`` later the standby is promoted.
Asserted:

* every answer is 200 or 503 ``placement.db.unavailable`` with ``Retry-After``; never a 500,
  and the 503s come only between the kill and the promotion (plus the requests in flight);
* writes are acknowledged again after the promotion;
* 0 acknowledged writes lost: every provider acknowledged with 200 exists after the failover
  (listed through the service from the promoted server).
"""

from __future__ import annotations

import threading
import time
import uuid as uuidlib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from placement_numa.app import prepare_database
from placement_numa.settings import Settings
from tests.backends import in_ci
from tests.live_server import LiveServer
from tests.pg_standby import PrimaryStandby, available
from tests.servers import unexpected_tracebacks

pytestmark = pytest.mark.slow

WRITERS = 8
KILL_AFTER_S = 2.0
PROMOTE_AFTER_S = 2.0
AFTER_PROMOTION_S = 3.0
HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}


def test_primary_killed_standby_promoted(tmp_path_factory: pytest.TempPathFactory) -> None:
    reason = available()
    if reason is not None:
        if in_ci():
            pytest.fail(f"PostgreSQL primary/standby unavailable in CI: {reason}")
        pytest.skip(reason)
    with PrimaryStandby() as pair:
        admin = f"postgresql://postgres@127.0.0.1:{pair.primary_port}/postgres"
        from sqlalchemy import create_engine

        engine = create_engine(admin, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.exec_driver_sql("CREATE DATABASE placement")
        engine.dispose()
        url = pair.url("placement")
        prepare_database(Settings(database_url=url))
        log = tmp_path_factory.mktemp("pg-failover") / "serve.log"
        server = LiveServer(url, 19710, env={"PLACEMENT_NUMA_RETRY_AFTER": "1"}, log_path=log)
        with server:
            answers, times = _run(pair, server.base_url)
            assert not unexpected_tracebacks(server.log()), server.log()[-4000:]
            with httpx.Client(base_url=server.base_url, headers=HEADERS, timeout=30) as client:
                listed = client.get("/resource_providers")
                assert listed.status_code == 200
                present = {rp["name"] for rp in listed.json()["resource_providers"]}

    kinds = Counter((status, code) for status, code, *_ in answers)
    killed, promoted = times["killed"], times["promoted"]
    acknowledged = [a for a in answers if a[0] == 200]
    back = min((a[3] for a in acknowledged if a[2] > promoted), default=None)
    print(
        f"\n[pg-failover] writers={WRITERS} answers={len(answers)} acknowledged="
        f"{len(acknowledged)} kinds={dict(kinds)} writes_back_after_promotion_s="
        f"{(back - promoted) if back else float('nan'):.2f}"
    )
    for status, code, sent, received, _name, retry_after in answers:
        assert status in (200, 503), (status, code)
        if status == 503:
            assert code == "placement.db.unavailable", code
            assert retry_after == "1"
            assert received >= times["killing"] and sent <= promoted + 1.0, (sent, received)
    assert back is not None, "no write acknowledged after the promotion"
    lost = [a[4] for a in acknowledged if a[4] not in present]
    assert not lost, f"{len(lost)} acknowledged writes lost: {lost[:5]}"
    assert killed > 0


Answer = tuple[int, str, float, float, str, str | None]  # status, code, sent, received, name, RA


def _run(pair: PrimaryStandby, base_url: str) -> tuple[list[Answer], dict[str, float]]:
    answers: list[Answer] = []
    lock = threading.Lock()
    stop = threading.Event()
    times: dict[str, float] = {}

    def writer() -> None:
        with httpx.Client(base_url=base_url, headers=HEADERS, timeout=30) as client:
            while not stop.is_set():
                name = f"w-{uuidlib.uuid4().hex}"
                sent = time.monotonic()
                response = client.post("/resource_providers", json={"name": name})
                code = ""
                if response.status_code >= 400:
                    code = str(response.json()["errors"][0].get("code", ""))
                with lock:
                    answers.append(
                        (
                            response.status_code,
                            code,
                            sent,
                            time.monotonic(),
                            name,
                            response.headers.get("retry-after"),
                        )
                    )
                if response.status_code == 503:
                    time.sleep(0.1)

    with ThreadPoolExecutor(WRITERS) as pool:
        futures = [pool.submit(writer) for _ in range(WRITERS)]
        try:
            time.sleep(KILL_AFTER_S)
            times["killing"] = time.monotonic()
            pair.kill_primary()
            times["killed"] = time.monotonic()
            time.sleep(PROMOTE_AFTER_S)
            pair.promote()
            times["promoted"] = time.monotonic()
            time.sleep(AFTER_PROMOTION_S)
        finally:
            stop.set()
            for future in futures:
                future.result()
    return answers, times
