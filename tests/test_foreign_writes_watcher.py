"""The foreign-write watcher, one check at a time, in-process (``ForeignWriteWatcher.check()``
called between writes), on every backend: the races a live switch-over makes normal.

The service's own watcher is off (``foreign_write_staleness = 0``) so each check here is the
only one. A foreign write is raw SQL as upstream Placement writes it (a consumer and an
allocation, the provider's generation bumped), or an operator's (an inventory changed, no
generation bumped).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

from placement_numa.app import create_app
from placement_numa.db.foreign_writes import ForeignWriteWatcher
from placement_numa.db.kept_generations import aggregate, apply, expected, moved_aggregate
from placement_numa.settings import Settings
from tests.backends import TestDatabase, reset_rows
from tests.conftest import PlacementAPI
from tests.test_fleet_refresh import _aggregates, _allocate, _host, _inventory, _rp, _traits


@pytest.fixture
def quiet_app(test_database: TestDatabase) -> Iterator[FastAPI]:
    """The real application with no watcher of its own, on a freshly reset database."""
    settings = Settings(
        database_url=test_database.url,
        auto_migrate=False,
        auth_strategy="noauth2",
        foreign_write_staleness=0,
    )
    application = create_app(settings)
    with application.state.database.write() as conn:
        reset_rows(conn)
    yield application
    application.state.database.dispose()


@pytest.fixture
def api(quiet_app: FastAPI) -> Iterator[PlacementAPI]:
    with TestClient(quiet_app, raise_server_exceptions=False) as client:
        yield PlacementAPI(client)


@pytest.fixture
def other_writer(test_database: TestDatabase) -> Iterator[Engine]:
    """A connection pool of another writer (upstream Placement, an operator)."""
    engine = create_engine(test_database.url)
    yield engine
    engine.dispose()


def _watcher(app: FastAPI) -> ForeignWriteWatcher:
    watcher = ForeignWriteWatcher(app.state.database, 1.0)
    assert watcher.check() is False  # the baseline
    return watcher


def _candidates(api: PlacementAPI, vcpu: int) -> int:
    r = api.get(f"/allocation_candidates?resources=VCPU:{vcpu}", version="1.39")
    assert r.status_code == 200, r.text
    return len(r.json()["allocation_requests"])


def _foreign_allocation(engine: Engine, provider: str, vcpu: int) -> None:
    """What upstream Placement writes for one allocation of ``vcpu`` VCPU on ``provider``."""
    consumer = str(uuid.uuid4())
    with engine.begin() as conn:
        rp_id = conn.execute(
            text("SELECT id FROM resource_providers WHERE uuid = :u"), {"u": provider}
        ).scalar_one()
        external = f"foreign-{consumer[:8]}"
        conn.execute(text("INSERT INTO projects (external_id) VALUES (:e)"), {"e": external})
        conn.execute(text("INSERT INTO users (external_id) VALUES (:e)"), {"e": external})
        conn.execute(
            text(
                "INSERT INTO consumers (uuid, project_id, user_id, generation) SELECT"
                " :c, p.id, u.id, 1 FROM projects p, users u"
                " WHERE p.external_id = :e AND u.external_id = :e"
            ),
            {"c": consumer, "e": external},
        )
        conn.execute(
            text(
                "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id,"
                " used) VALUES (:rp, :c, 0, :n)"
            ),
            {"rp": rp_id, "c": consumer, "n": vcpu},
        )
        conn.execute(
            text("UPDATE resource_providers SET generation = generation + 1 WHERE id = :i"),
            {"i": rp_id},
        )


def _vcpu_host(api: PlacementAPI, total: int) -> str:
    rp = _rp(api, "h1")
    _inventory(api, rp, {"VCPU": {"total": total}})
    return rp


def test_foreign_write_right_after_ours_on_the_same_provider(
    quiet_app: FastAPI, api: PlacementAPI, other_writer: Engine
) -> None:
    """The race of issue 19: check, our write to the provider (the engine refreshes at once),
    the other writer's allocation on it, check: found, and the candidate is gone."""
    rp = _rp(api, "h1")
    watcher = _watcher(quiet_app)
    _inventory(api, rp, {"VCPU": {"total": 4}})
    assert _candidates(api, 4) == 1  # our refresh reads the provider before the foreign write
    _foreign_allocation(other_writer, rp, 4)
    assert _candidates(api, 1) == 1  # not seen yet: the snapshot follows our revision
    assert watcher.check() is True
    assert _candidates(api, 1) == 0
    assert watcher.check() is False  # recorded once


def test_foreign_write_before_ours_is_inside_our_refresh(
    quiet_app: FastAPI, api: PlacementAPI, other_writer: Engine
) -> None:
    """The other order: the foreign allocation commits first, then our inventory write (whose
    generation includes it): every refresh after our commit reads both."""
    rp = _vcpu_host(api, 4)
    watcher = _watcher(quiet_app)
    _foreign_allocation(other_writer, rp, 4)
    _inventory(api, rp, {"VCPU": {"total": 6}})
    assert _candidates(api, 2) == 1 and _candidates(api, 3) == 0
    watcher.check()  # either answer is correct here; the candidates already are
    assert _candidates(api, 3) == 0


def test_a_second_worker_finds_the_first_ones_record_explained(
    quiet_app: FastAPI, api: PlacementAPI, other_writer: Engine
) -> None:
    """Two workers' watchers: the one that records a foreign write names the provider with its
    generation, so the other does not record it again; a later foreign write is still seen."""
    rp = _vcpu_host(api, 8)
    first, second = _watcher(quiet_app), _watcher(quiet_app)
    _foreign_allocation(other_writer, rp, 2)
    assert first.check() is True
    assert second.check() is False
    assert _candidates(api, 6) == 1 and _candidates(api, 7) == 0
    _foreign_allocation(other_writer, rp, 2)
    assert second.check() is True
    assert first.check() is False
    assert _candidates(api, 4) == 1 and _candidates(api, 5) == 0


def test_sql_that_bumps_no_generation_is_seen_by_the_totals(
    quiet_app: FastAPI, api: PlacementAPI, other_writer: Engine
) -> None:
    """An operator's ``UPDATE inventories`` alone, in an interval with no write of ours."""
    rp = _vcpu_host(api, 4)
    watcher = _watcher(quiet_app)
    assert _candidates(api, 8) == 0
    with other_writer.begin() as conn:
        conn.execute(text("UPDATE inventories SET total = 8"))
    assert watcher.check() is True
    assert _candidates(api, 8) == 1
    with other_writer.begin() as conn:
        conn.execute(text("UPDATE inventories SET allocation_ratio = 2.0"))
    assert watcher.check() is True
    assert _candidates(api, 16) == 1
    del rp


def test_our_own_writes_are_never_foreign(quiet_app: FastAPI, api: PlacementAPI) -> None:
    """Every kind of write through us, with a check after each: nothing is foreign (a false
    positive would reload trees for nothing)."""
    watcher = _watcher(quiet_app)
    host = _host(api, "a")
    assert watcher.check() is False
    other = _rp(api, "b")
    steps = [
        lambda: _inventory(api, host["cell"], {"VCPU": {"total": 4}}),
        lambda: _traits(api, host["cell"], ["HW_CPU_X86_AVX2"]),
        lambda: _aggregates(api, host["root"], [str(uuid.uuid4())]),
        lambda: _allocate(api, str(uuid.uuid4()), {host["cell"]: {"VCPU": 2}}, None),
        lambda: api.put("/traits/CUSTOM_GOLD", version="1.39"),
        lambda: api.put("/resource_classes/CUSTOM_FPGA", version="1.39"),
        lambda: api.put(
            f"/resource_providers/{other}",
            json={"name": "b", "parent_provider_uuid": host["root"]},
            version="1.39",
        ),
        lambda: api.delete(f"/resource_providers/{other}", version="1.39"),
    ]
    for step in steps:
        step()
        assert watcher.check() is False
        assert watcher.check() is False
    _inventory(api, host["cell"], {"VCPU": {"total": 8}})
    _traits(api, host["cell"], [])  # two writes to one provider in one interval
    assert watcher.check() is False
    assert watcher.found == 0


def test_full_reads_only_when_something_foreign_moved(
    quiet_app: FastAPI, api: PlacementAPI, other_writer: Engine
) -> None:
    """Steady state: a check reads the one-row provider aggregate, not every generation, while
    only our writes happened (creations and deletions included); a foreign generation bump, a
    foreign deletion or creation each take one full read, which finds them; the next check is
    cheap again."""
    host = _host(api, "a")
    watcher = _watcher(quiet_app)
    reads = watcher.full_reads

    def check(found: bool, full: int) -> None:
        nonlocal reads
        assert watcher.check() is found
        assert watcher.full_reads - reads == full
        reads = watcher.full_reads

    check(False, 0)
    _inventory(api, host["cell"], {"VCPU": {"total": 4}})
    other = _rp(api, "b")
    check(False, 0)
    api.delete(f"/resource_providers/{other}", version="1.39")
    _traits(api, host["cell"], ["HW_CPU_X86_AVX2"])
    check(False, 0)
    _foreign_allocation(other_writer, host["cell"], 1)
    check(True, 1)
    check(False, 0)
    _inventory(api, host["cell"], {"VCPU": {"total": 6}})
    _foreign_allocation(other_writer, host["cell"], 1)  # after ours, on the same provider
    check(True, 1)
    check(False, 0)
    gone = _rp(api, "c")
    check(False, 0)
    with other_writer.begin() as conn:
        for sql in (  # the provider is its own root (MariaDB checks the key row by row)
            "UPDATE resource_providers SET root_provider_id = NULL WHERE uuid = :u",
            "DELETE FROM resource_providers WHERE uuid = :u",
        ):
            conn.execute(text(sql), {"u": gone})
    check(True, 1)
    check(False, 0)
    with other_writer.begin() as conn:  # a provider as upstream creates it
        conn.execute(
            text("INSERT INTO resource_providers (uuid, name, generation) VALUES (:u, 'd', 0)"),
            {"u": str(uuid.uuid4())},
        )
    check(True, 1)
    check(False, 0)
    assert watcher.found == 4


def test_the_kept_aggregate_follows_our_rows() -> None:
    """``moved_aggregate`` (step by step) equals ``aggregate`` recomputed, through random
    creations, bumps and deletions (the highest id's included), several rows per provider."""
    rng = random.Random(19)
    generations = {p: rng.randrange(5) for p in range(1, 40)}
    kept, next_id = aggregate(generations), 40
    for revision in range(200):
        rows: list[tuple[int, str, int | None, int | None]] = []
        for _ in range(rng.randrange(4)):
            if rng.random() < 0.3:
                p, next_id = next_id, next_id + 1
            else:
                p = rng.choice([*generations, next_id - 1])
            gone = rng.random() < 0.2
            generation = None if gone else generations.get(p, 0) + rng.randrange(3)
            rows.append((revision, "provider", p, generation))
        left = expected(rows)
        kept = moved_aggregate(kept, generations, left)
        apply(generations, left)
        assert kept == aggregate(generations)
