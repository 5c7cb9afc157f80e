"""Issue 31's exactness check on issue 21's mixed fleet (``benchmarks/mixed_fleet.py``: sizes
mixed, 1 GiB pages on about a quarter of the hosts, guests on 30%), 8 hosts x 2 cells: for
each of ``benchmarks/capacity.py``'s six flavors (one-cell, two-cell, pinned, pinned two-cell,
1 GiB pages, ``mixed`` CPUs), claiming it alone through ``POST /allocation_candidates/claim``
on a fresh copy of the fleet succeeds exactly as many times, per host, as ``POST
/allocation_candidates/capacity`` answered, then answers 409 ``no_room``. Seeded with
``POST /resource_providers/batch`` (the benchmark's entries, standard page traits added) and
the guests' ``PUT /allocations``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from capacity import FLAVORS, _standard_traits  # noqa: E402  (benchmarks/capacity.py)
from mixed_fleet import batch_entries, host_specs  # noqa: E402

from tests.conftest import PlacementAPI  # noqa: E402
from tests.test_capacity_api import V, claim_until_full  # noqa: E402

HOSTS = 8


def seed(api: PlacementAPI) -> None:
    for size in ("4", "2048", "1048576"):
        api.put(f"/traits/CUSTOM_MEMORY_PAGE_SIZE_{size}", version=V)
    for n, spec in enumerate(host_specs(HOSTS, 2, 21)):
        entries, tree = batch_entries(spec)
        _standard_traits(entries)
        r = api.post("/resource_providers/batch", json={"resource_providers": entries}, version=V)
        assert r.status_code == 200, r.text
        for g, guest in enumerate(spec.guests):
            body = {
                "allocations": {
                    tree["root"]: {"resources": {"DISK_GB": guest.disk_gb}},
                    tree[f"cell{guest.cell}"]: {"resources": {"VCPU": guest.vcpu}},
                    tree[f"cell{guest.cell}_{guest.page}"]: {
                        "resources": {"MEMORY_MB": guest.memory_mb}
                    },
                },
                "project_id": "bench",
                "user_id": "bench",
                "consumer_generation": None,
                "consumer_type": "INSTANCE",
            }
            consumer = f"00000000-0000-4000-8000-{n:06d}{g:06d}"
            r = api.put(f"/allocations/{consumer}", json=body, version=V)
            assert r.status_code == 204, r.text


@pytest.mark.parametrize("flavor", FLAVORS, ids=[f["name"] for f in FLAVORS])
def test_mixed_fleet_claims_match_capacity(api: PlacementAPI, flavor: dict[str, Any]) -> None:
    seed(api)
    r = api.post("/allocation_candidates/capacity", json={"flavors": [flavor]}, version=V)
    assert r.status_code == 200, r.text
    (answer,) = r.json()["capacity"]
    per_host = {h["host"]: h["count"] for h in answer["hosts"] if h["count"]}
    body = {k: v for k, v in flavor.items() if k != "name"}
    claimed = claim_until_full(api, body, answer["total"])
    assert dict(claimed) == per_host
    assert sum(claimed.values()) == answer["total"]
