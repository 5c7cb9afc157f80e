"""placement-numa's Nova plugins (``integrations/nova``, issue 28) in Nova 34's own scheduler
classes, against a live placement-numa holding the demo fleet.

Nova runs in its own virtualenv (``.nova-venv`` made by ``.ci/run``, or the interpreter named by
``PLACEMENT_NUMA_NOVA_PYTHON``) through ``tests/nova_plugins_run.py``; the test is skipped when
there is none (fails in CI). Each case compares what Nova's filter handler, weigher handler and
claim did with placement-numa's own answer to the same flavor.
"""

from __future__ import annotations

import os
import uuid as uuidlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from placement_numa.cli import main
from tests.live_server import LiveServer
from tests.test_nova_differential import ask_nova
from tests.test_nova_differential import nova as nova_python  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow  # needs the Nova virtualenv that .ci/run makes
ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve().parent / "nova_plugins_run.py"
PORT = 19081

CASES: dict[str, dict[str, Any]] = {
    "two-cells": {
        "flavor": {
            "vcpus": 8,
            "memory_mb": 8192,
            "root_gb": 20,
            "extra_specs": {"hw:numa_nodes": "2"},
        }
    },
    # no DISK_GB: Nova keys no candidate to a NUMA host's compute node (nothing allocated from
    # the root); the filter gives those hosts their aligned candidates
    "two-cells-boot-from-volume": {
        "flavor": {"vcpus": 8, "memory_mb": 8192, "extra_specs": {"hw:numa_nodes": "2"}}
    },
    "pinned-1g-pages": {
        "flavor": {
            "vcpus": 8,
            "memory_mb": 16384,
            "root_gb": 40,
            "extra_specs": {
                "hw:numa_nodes": "2",
                "hw:cpu_policy": "dedicated",
                "hw:mem_page_size": "1GB",
            },
        }
    },
    "image-numa-and-large-pages": {
        "flavor": {
            "vcpus": 2,
            "memory_mb": 4096,
            "root_gb": 20,
            "extra_specs": {"hw:mem_page_size": "any"},
        },
        "image": {"hw_numa_nodes": "2", "hw_mem_page_size": "large"},
    },
    "image-cells-uneven": {
        "flavor": {"vcpus": 4, "memory_mb": 4096, "root_gb": 20, "extra_specs": {}},
        "image": {
            "hw_numa_nodes": "2",
            "hw_numa_cpus.0": "0",
            "hw_numa_mem.0": "1024",
            "hw_numa_cpus.1": "1-3",
            "hw_numa_mem.1": "3072",
        },
    },
    # Nova refuses an image page size the flavor does not allow: placement-numa's 400 fails
    # every host (NoValidHost), as Nova's own NUMATopologyFilter would find no fit
    "invalid-image-page-size": {
        "flavor": {"vcpus": 2, "memory_mb": 4096, "root_gb": 20, "extra_specs": {}},
        "image": {"hw_numa_nodes": "2", "hw_mem_page_size": "large"},
    },
    # 20 pinned CPUs: no cell and no host has them; Nova's GET finds no host either
    "fits-nowhere": {
        "flavor": {
            "vcpus": 20,
            "memory_mb": 32768,
            "root_gb": 20,
            "extra_specs": {"hw:cpu_policy": "dedicated"},
        }
    },
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    from placement_numa.app import prepare_database
    from placement_numa.settings import Settings

    url = f"sqlite:///{tmp_path_factory.mktemp('nova-plugins') / 'db.sqlite'}"
    prepare_database(Settings(database_url=url))
    with LiveServer(url, PORT, log_path=tmp_path_factory.mktemp("log") / "serve.log") as live:
        assert main(["demo", "--url", live.base_url]) == 0
        yield live


def run_nova(python: str, request: dict[str, Any]) -> dict[str, Any]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "integrations" / "nova")}
    return ask_nova(python, request, script=SCRIPT, env=environment)


def ranked_hosts(server: LiveServer, case: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """placement-numa's hosts in rank order, and each host's best allocations."""
    body = {key: value for key, value in case.items() if key in ("flavor", "image")}
    with server.client() as http:
        answer = http.post("/allocation_candidates", json=body).json()
    order: list[str] = []
    best: dict[str, Any] = {}
    for request in answer.get("allocation_requests", []):  # none on a 400
        host = request["numa"]["host"]
        if host not in best:
            order.append(host)
            best[host] = {rp: a["resources"] for rp, a in request["allocations"].items()}
    return order, best


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_nova_schedules_on_placement_numa_rank_and_claims_aligned_candidates(
    server: LiveServer,
    nova_python: str,  # noqa: F811
    case: str,
) -> None:
    consumer = str(uuidlib.uuid4())
    request = {"url": server.base_url, "instance_uuid": consumer, "claim": True, **CASES[case]}
    order, best = ranked_hosts(server, CASES[case])  # before Nova claims
    result = run_nova(nova_python, request)

    # once per scheduling request, not once per host (never when Nova's GET found no host)
    assert result["posts"] == (1 if result["get_hosts"] else 0)
    expected = [host for host in order if host in result["get_hosts"]]
    assert result["passed"] == sorted(expected)  # hosts without a NUMA candidate dropped
    assert result["weighed"] == expected  # placement-numa's rank
    if not expected:
        assert result["host"] is None and not result["claimed"]
        return
    assert result["claimed"] and result["host"] == expected[0]
    if case == "two-cells-boot-from-volume":  # Nova had no candidate for the host it got
        assert result["nova_candidates"][expected[0]] == 0
    assert result["allocations"] == best[expected[0]]  # the aligned candidate, claimed
    for host in expected:  # every host's candidates are placement-numa's
        assert result["candidates"][host][0] == {
            rp: {"resources": resources} for rp, resources in best[host].items()
        }
    with server.client() as http:
        http.delete(f"/allocations/{consumer}")


def test_multi_create_asks_again_for_each_instance(
    server: LiveServer,
    nova_python: str,  # noqa: F811
) -> None:
    """Three pinned two-cell guests in one request (Nova's multi-create): one query per instance,
    each claim on the aligned candidate ranked best after the claims before it."""
    consumers = [str(uuidlib.uuid4()) for _ in range(3)]
    case = CASES["pinned-1g-pages"]
    request = {
        "url": server.base_url,
        "instance_uuid": consumers[0],
        "more_instances": consumers[1:],
        "claim": True,
        **case,
    }
    result = run_nova(nova_python, request)
    try:
        assert result["posts"] == 3
        instances = [result, *result["more"]]
        assert all(i["claimed"] for i in instances[:2]), instances
        claimed = [sorted(i["allocations"]) for i in instances if i["claimed"]]
        assert len({tuple(c) for c in claimed}) == len(claimed)  # never the same providers twice
    finally:
        with server.client() as http:
            for consumer in consumers:
                http.delete(f"/allocations/{consumer}")


def test_against_openstack_placement_hosts_pass_unchanged(
    nova_python: str,  # noqa: F811
) -> None:
    """OpenStack Placement 16 answers 405 to POST /allocation_candidates: the filter is a no-op
    (one warning), Nova's own candidates are claimed (turning placement-numa off is safe)."""
    from benchmarks.upstream import upstream_placement
    from tests.live_server import HEADERS, free_port

    with upstream_placement(free_port(19091), workers=1) as base:
        with httpx.Client(base_url=base, headers=HEADERS) as http:
            for name in ("flat-1", "flat-2"):
                uuid = http.post("/resource_providers", json={"name": name}).json()["uuid"]
                inventories = {
                    "VCPU": {"total": 16},
                    "MEMORY_MB": {"total": 32768},
                    "DISK_GB": {"total": 500},
                }
                body = {"resource_provider_generation": 0, "inventories": inventories}
                assert http.put(f"/resource_providers/{uuid}/inventories", json=body).is_success
        request = {"url": base, "instance_uuid": str(uuidlib.uuid4()), "claim": True}
        result = run_nova(nova_python, {**request, **CASES["two-cells"]})
    assert result["get_hosts"] == ["flat-1", "flat-2"]
    assert result["posts"] == 1
    assert result["passed"] == ["flat-1", "flat-2"]
    assert result["claimed"]


def test_extra_request_groups_keep_novas_candidates(
    server: LiveServer,
    nova_python: str,  # noqa: F811
) -> None:
    """A request with an extra group (a device, as a port or PCI in Placement adds): hosts without
    a NUMA candidate still fail, but the passing hosts keep Nova's candidates, whose mappings Nova
    reads for the group after the claim (placement-numa's would lack the group)."""
    consumer = str(uuidlib.uuid4())
    group = {"requester_id": "nic1", "resources": {"CUSTOM_PCI_8086_1572": 1}}
    # the NIC hosts' cells have 4 VCPUs each: Nova's flat query needs them on one cell
    small = {
        "flavor": {
            "vcpus": 4,
            "memory_mb": 4096,
            "root_gb": 20,
            "extra_specs": {"hw:numa_nodes": "2"},
        }
    }
    request = {
        "url": server.base_url,
        "instance_uuid": consumer,
        "claim": True,
        "requested_groups": [group],
        **small,
    }
    order, _ = ranked_hosts(server, small)
    result = run_nova(nova_python, request)
    try:
        assert result["posts"] == 1
        assert result["get_hosts"] == ["nic-2s-1", "nic-2s-2"]  # the hosts with that device
        assert result["weighed"] == [host for host in order if host in result["get_hosts"]]
        assert result["claimed"]
        claimed = [rc for resources in result["allocations"].values() for rc in resources]
        assert "CUSTOM_PCI_8086_1572" in claimed
    finally:
        with server.client() as http:
            http.delete(f"/allocations/{consumer}")


def test_with_the_scheduler_patch_the_filter_asks_nothing(
    server: LiveServer,
    nova_python: str,  # noqa: F811
) -> None:
    """With the patch series' scheduler (its query is placement-numa's, each candidate keeping
    numa.rank) the filter sends no query of its own, and the weigher orders hosts by that rank."""
    consumer = str(uuidlib.uuid4())
    case = CASES["two-cells"]
    order, best = ranked_hosts(server, case)
    request = {
        "url": server.base_url,
        "instance_uuid": consumer,
        "claim": True,
        "scheduler_posts": True,
        **case,
    }
    result = run_nova(nova_python, request)
    try:
        assert result["posts"] == 0
        assert result["weighed"] == order
        assert result["claimed"] and result["allocations"] == best[order[0]]
    finally:
        with server.client() as http:
            http.delete(f"/allocations/{consumer}")
