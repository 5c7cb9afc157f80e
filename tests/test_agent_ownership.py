"""One writer per provider tree: ``placement-numa agent`` refuses a compute node that
nova-compute manages (issue 28), against a real served placement-numa (``LiveServer``).

The Nova-side trees are what Nova 34's resource tracker writes: the root's inventory (flat, or
only ``DISK_GB`` once the cells are reported below it) and its traits (``COMPUTE_NODE`` and
``OWNER_NOVA`` always, the driver's ``COMPUTE_*`` capabilities and ``HW_CPU_*`` flags).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import os_traits
import pytest

from placement_numa.cli import main
from placement_numa.cli.failures import EXIT_NOVA_MANAGED
from tests.live_server import LiveServer
from tests.sysfs_fixtures import two_socket_intel

PORT = 19061
NOVA_TRAITS = [
    os_traits.COMPUTE_NODE,
    os_traits.OWNER_NOVA,
    os_traits.COMPUTE_NET_VIF_MODEL_VIRTIO,
    os_traits.HW_CPU_X86_AVX2,
    os_traits.HW_CPU_HYPERTHREADING,
]
FLAT = {
    "VCPU": {"total": 80, "allocation_ratio": 4.0},
    "MEMORY_MB": {"total": 65536, "reserved": 512},
    "DISK_GB": {"total": 500},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    from placement_numa.app import prepare_database
    from placement_numa.settings import Settings

    url = f"sqlite:///{tmp_path_factory.mktemp('ownership') / 'db.sqlite'}"
    prepare_database(Settings(database_url=url))
    with LiveServer(url, PORT, log_path=tmp_path_factory.mktemp("log") / "serve.log") as live:
        yield live


@pytest.fixture
def http(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def nova_compute_node(
    http: httpx.Client, name: str, inventories: dict[str, Any], traits: list[str]
) -> str:
    """Register compute node ``name`` the way nova-compute does; its uuid."""
    created = http.post("/resource_providers", json={"name": name})
    assert created.status_code == 200, created.text
    uuid: str = created.json()["uuid"]
    if inventories:
        replace(http, name, "inventories", inventories)
    replace(http, name, "traits", traits)
    return uuid


def replace(http: httpx.Client, name: str, what: str, value: Any) -> None:
    """Replace the ``what`` (``traits`` or ``inventories``) of provider ``name`` with ``value``,
    as another writer would (generation read just before)."""
    uuid = http.get(f"/resource_providers?name={name}").json()["resource_providers"][0]["uuid"]
    generation = http.get(f"/resource_providers/{uuid}").json()["generation"]
    body = {"resource_provider_generation": generation, what: value}
    assert http.put(f"/resource_providers/{uuid}/{what}", json=body).status_code == 200


def snapshot(http: httpx.Client) -> dict[str, int]:
    """``{provider name: generation}`` of every provider: any write changes it."""
    found = http.get("/resource_providers").json()["resource_providers"]
    return {p["name"]: p["generation"] for p in found}


def agent(server: LiveServer, sys: Path, host: str, *extra: str) -> int:
    return main(["agent", "--sysfs-root", str(sys), "--hostname", host, "--disk-gb", "500",
                 "--placement-url", server.base_url, *extra])  # fmt: skip


def agent_writing_nothing(
    server: LiveServer, http: httpx.Client, sys: Path, host: str, *extra: str
) -> int:
    """Run the agent; assert that no provider was created or changed; its exit code."""
    before = snapshot(http)
    code = agent(server, sys, host, *extra)
    assert snapshot(http) == before
    return code


@pytest.mark.parametrize(
    ("inventories", "traits"),
    [
        (FLAT, NOVA_TRAITS),  # stock Nova 34: the reproduction
        ({"DISK_GB": {"total": 500}}, NOVA_TRAITS),  # a Nova reporting NUMA cells itself
        ({"DISK_GB": {"total": 500}}, [os_traits.HW_CPU_X86_AVX2]),  # an older Nova's flags
        (FLAT, []),  # a Nova that sets no trait: its flat inventory
    ],
    ids=["stock-nova", "numa-reporting-nova", "cpu-flags-only", "flat-inventory-only"],
)
def test_refuses_a_tree_nova_compute_manages_and_writes_nothing(
    server: LiveServer,
    http: httpx.Client,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    request: pytest.FixtureRequest,
    inventories: dict[str, Any],
    traits: list[str],
) -> None:
    host = f"nova-{request.node.callspec.id}"
    nova_compute_node(http, host, inventories, traits)

    code = agent_writing_nothing(server, http, two_socket_intel(tmp_path), host, "--once")
    assert code == EXIT_NOVA_MANAGED
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "\n" not in errors[0]
    assert f"compute node {host} " in errors[0] and "managed by nova-compute" in errors[0]


def test_refuses_a_host_nova_compute_reports_under_its_short_name(
    server: LiveServer, http: httpx.Client, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """nova-compute registered the host as ``short1``; the agent runs as ``short1.example.org``:
    a second tree would count the host twice, so nothing is written (the override does not
    apply: the agent would create its own tree beside Nova's)."""
    nova_compute_node(http, "short1", FLAT, NOVA_TRAITS)
    sys = two_socket_intel(tmp_path)
    for extra in (("--once",), ("--once", "--take-over-from-nova")):
        code = agent_writing_nothing(server, http, sys, "short1.example.org", *extra)
        assert code == EXIT_NOVA_MANAGED
    assert "is compute node short1 " in caplog.text


def test_a_second_run_of_the_agent_on_its_own_tree_is_not_refused(
    server: LiveServer, http: httpx.Client, tmp_path: Path
) -> None:
    """The agent's own root carries DISK_GB, HW_CPU_HYPERTHREADING (an SMT host) and an
    operator's custom trait: none is a sign of Nova."""
    sys = two_socket_intel(tmp_path)
    assert agent(server, sys, "ours", "--once") == 0
    root = http.get("/resource_providers?name=ours").json()["resource_providers"][0]
    traits = http.get(f"/resource_providers/{root['uuid']}/traits").json()["traits"]
    assert os_traits.HW_CPU_HYPERTHREADING in traits
    http.put("/traits/CUSTOM_RACK_7")
    replace(http, "ours", "traits", [*traits, "CUSTOM_RACK_7"])

    assert agent_writing_nothing(server, http, sys, "ours", "--once") == 0


def test_take_over_from_a_stopped_nova_compute_then_runs_without_override(
    server: LiveServer, http: httpx.Client, tmp_path: Path
) -> None:
    """A stock Nova compute node with a guest, its service disabled: the override moves the guest
    onto a cell and removes Nova's traits; the next plain run passes and writes nothing."""
    disabled = [*NOVA_TRAITS, os_traits.COMPUTE_STATUS_DISABLED, "CUSTOM_RACK_7"]
    uuid = nova_compute_node(http, "retired", FLAT, disabled)
    consumer = "7a4c1f0e-1111-4222-8333-944445555666"
    allocation = {
        "allocations": {uuid: {"resources": {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}}},
        "project_id": "00000000-0000-0000-0000-00000000000a",
        "user_id": "00000000-0000-0000-0000-00000000000b",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }
    assert http.put(f"/allocations/{consumer}", json=allocation).status_code == 204
    sys = two_socket_intel(tmp_path)

    assert agent(server, sys, "retired", "--once", "--take-over-from-nova") == 0

    traits = http.get(f"/resource_providers/{uuid}/traits").json()["traits"]
    assert sorted(traits) == ["CUSTOM_RACK_7", os_traits.HW_CPU_HYPERTHREADING]
    assert set(http.get(f"/resource_providers/{uuid}/inventories").json()["inventories"]) == {
        "DISK_GB"
    }
    held = http.get(f"/allocations/{consumer}").json()["allocations"]
    assert sorted(r for a in held.values() for r in a["resources"]) == [
        "DISK_GB",
        "MEMORY_MB",
        "VCPU",
    ]
    assert uuid not in {p for p, a in held.items() if "VCPU" in a["resources"]}
    assert agent_writing_nothing(server, http, sys, "retired", "--once") == 0


def test_take_over_of_a_compute_service_not_disabled_is_refused(
    server: LiveServer, http: httpx.Client, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    nova_compute_node(http, "still-enabled", FLAT, NOVA_TRAITS)
    sys = two_socket_intel(tmp_path)
    extra = ("--once", "--take-over-from-nova")
    assert agent_writing_nothing(server, http, sys, "still-enabled", *extra) == EXIT_NOVA_MANAGED
    assert "its service is not disabled" in caplog.text


def test_periodic_agent_stops_when_nova_compute_writes_its_tree(
    server: LiveServer, http: httpx.Client, tmp_path: Path
) -> None:
    """nova-compute started on a host the agent manages puts its inventory and traits back on
    the root: the periodic agent refuses and exits rather than fight it."""
    sys = two_socket_intel(tmp_path)
    assert agent(server, sys, "contested", "--once") == 0
    replace(http, "contested", "inventories", FLAT)

    code = agent_writing_nothing(server, http, sys, "contested", "--interval", "0.1")
    assert code == EXIT_NOVA_MANAGED


def test_take_over_needs_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    code = main(["agent", "--sysfs-root", str(two_socket_intel(tmp_path)), "--disk-gb", "1",
                 "--take-over-from-nova", "--placement-url", "http://127.0.0.1:9"])  # fmt: skip
    assert code == 2
    assert "--take-over-from-nova needs --once" in caplog.text
