"""NUMA extension API against the real service: distance matrices, and
``POST /allocation_candidates`` on the demo fleet (real machine shapes,
``placement_numa.cli.demo``).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from placement_numa.cli.demo import HostShape, _cells, demo_fleet, load_fleet, load_host
from tests.conftest import PlacementAPI

V = "1.39"


def sender(api: PlacementAPI) -> Any:
    def send(method: str, path: str, body: Any) -> tuple[int, Any]:
        response = api.request(method, path, json=body, version=V)
        return response.status_code, (response.json() if response.content else None)

    return send


def two_cell_host(api: PlacementAPI, name: str = "host") -> dict[str, Any]:
    return load_host(sender(api), HostShape(name, _cells(2, 4, 4, {4: 4096})))


def distances(*rows: list[int]) -> dict[str, dict[str, int]]:
    return {str(a): {str(b): d for b, d in enumerate(row)} for a, row in enumerate(rows)}


# --- distance matrices ----------------------------------------------------------------------


def test_distances_lifecycle(api: PlacementAPI) -> None:
    host = two_cell_host(api)
    path = f"/resource_providers/{host['root']}/numa_distances"
    root_generation = api.get(f"/resource_providers/{host['root']}", version=V).json()["generation"]
    missing = api.get(path, version=V)
    assert missing.status_code == 404
    assert missing.json()["errors"][0]["code"] == "placement_numa.numa_distances.not_found"

    created = api.put(
        path, json={"generation": None, "distances": distances([10, 21], [21, 10])}, version=V
    )
    assert created.status_code == 200, created.text
    body = created.json()
    assert body["generation"] == 1
    assert body["cells"] == {"0": host["cells"][0], "1": host["cells"][1]}
    assert body["distances"] == {"0": {"0": 10, "1": 21}, "1": {"0": 21, "1": 10}}
    assert api.get(path, version=V).json() == body

    stale = api.put(
        path, json={"generation": None, "distances": distances([10, 20], [20, 10])}, version=V
    )
    assert stale.status_code == 409
    assert stale.json()["errors"][0]["code"] == "placement.concurrent_update"
    replaced = api.put(
        path, json={"generation": 1, "distances": distances([10, 20], [20, 10])}, version=V
    )
    assert replaced.status_code == 200 and replaced.json()["generation"] == 2
    assert (
        api.put(
            path, json={"generation": 1, "distances": distances([10, 20], [20, 10])}, version=V
        ).status_code
        == 409
    )
    # the provider's own generation is untouched
    assert (
        api.get(f"/resource_providers/{host['root']}", version=V).json()["generation"]
        == root_generation
    )
    assert api.delete(path + "?generation=1", version=V).status_code == 409
    assert api.delete(path, version=V).status_code == 204
    assert api.get(path, version=V).status_code == 404


INVALID = [
    pytest.param(distances([10, 21]), "rows are for NUMA cells [0]", id="missing-row"),
    pytest.param(distances([10, 21], [21]), "not square", id="short-row"),
    pytest.param(distances([11, 21], [21, 10]), "diagonal must be 10", id="diagonal"),
    pytest.param(distances([10, 255], [21, 10]), "outside 10..254", id="too-far"),
    pytest.param(distances([10, 9], [9, 10]), "outside 10..254", id="too-near"),
    pytest.param({"0": {"0": 10, "x": 21}, "1": {"0": 21, "1": 10}}, "integers >= 0", id="bad-key"),
    pytest.param(
        distances([10, 21, 21], [21, 10, 21], [21, 21, 10]),
        "tree has cells [0, 1]",
        id="extra-cell",
    ),
]


@pytest.mark.parametrize(("matrix", "words"), INVALID)
def test_distances_validated_against_the_tree(api: PlacementAPI, matrix: Any, words: str) -> None:
    host = two_cell_host(api)
    response = api.put(
        f"/resource_providers/{host['root']}/numa_distances",
        json={"generation": None, "distances": matrix},
        version=V,
    )
    assert response.status_code == 400, response.text
    error = response.json()["errors"][0]
    assert words in error["detail"]
    if "integers >= 0" not in words:
        assert error["code"] == "placement_numa.numa_distances.invalid"


def test_distances_errors(api: PlacementAPI) -> None:
    host = two_cell_host(api)
    cell = host["cells"][0]
    not_root = api.put(
        f"/resource_providers/{cell}/numa_distances",
        json={"generation": None, "distances": distances([10])},
        version=V,
    )
    assert not_root.status_code == 400 and "not a compute node" in not_root.text
    unknown = api.get(f"/resource_providers/{uuid.uuid4()}/numa_distances", version=V)
    assert unknown.status_code == 404
    assert unknown.json()["errors"][0]["code"] == "placement.resource_provider.not_found"
    bad_body = api.put(
        f"/resource_providers/{host['root']}/numa_distances",
        json={"distances": distances([10, 21], [21, 10])},
        version=V,
    )
    assert bad_body.status_code == 400 and "generation" in bad_body.text


# --- POST /allocation_candidates on the demo fleet --------------------------------------------


def post(api: PlacementAPI, **body: Any) -> Any:
    response = api.post("/allocation_candidates", json=body, version=V)
    assert response.status_code == 200, response.text
    return response.json()


def host_of(body: Any, names: dict[str, str], request: Any) -> str:
    root = body["provider_summaries"][next(iter(request["allocations"]))]["root_provider_uuid"]
    return names[root]


def test_demo_fleet(api: PlacementAPI) -> None:
    """One load of the demo fleet (a few hundred API calls), then every ranking check on it."""
    fleet = load_fleet(sender(api), demo_fleet())
    for check in (
        check_two_cell_flavor_gets_the_closest_cells_first,
        check_limit_and_closest_off,
        check_non_numa_flavor_only_on_hosts_not_reshaped,
        check_wide_flavor_needs_distribution,
        check_hugepage_flavor,
        check_query_form_and_errors,
    ):
        check(api, fleet)


def check_two_cell_flavor_gets_the_closest_cells_first(
    api: PlacementAPI, fleet: dict[str, Any]
) -> None:
    names = {host["root"]: name for name, host in fleet.items()}
    flavor = {
        "vcpus": 8,
        "memory_mb": 8192,
        "root_gb": 10,
        "extra_specs": {
            "hw:numa_nodes": "2",
            "hw:cpu_policy": "dedicated",
            "hw:mem_page_size": "small",
        },
    }
    body = post(api, flavor=flavor)
    requests = body["allocation_requests"]
    first: dict[str, Any] = {}
    for request in requests:
        first.setdefault(host_of(body, names, request), request["numa"])
        cells = request["numa"]["cells"]
        assert len(cells) == 2  # guest cells on distinct host cells, always
    # pinned CPUs: the host not reshaped has no PCPU, so no fallback either
    assert set(first) == {"intel-2s-1", "intel-2s-2", "amd-nps4-1", "amd-nps4-2", "amd-2s-nps4"}
    for name in ("amd-nps4-1", "amd-nps4-2", "amd-2s-nps4"):
        assert first[name]["average_distance"] == 10.5, (name, first[name])
        assert first[name]["cells"] in ([0, 1], [2, 3], [4, 5], [6, 7])
    assert first["amd-nps4-1"]["cells"] == [0, 1]  # equal scores: lower-numbered cells
    assert first["amd-nps4-2"]["cells"] == [2, 3]  # cells 0 and 1 are partly used: better spread
    assert first["intel-2s-1"]["average_distance"] == 15.5
    # rank order: width, then distance, then spread; by default diversified: each host's best
    # first (in rank order), then each host's second best, ...
    keys = [
        (r["numa"]["width"], r["numa"]["average_distance"], r["numa"]["spread"]) for r in requests
    ]
    hosts = len(first)
    assert keys[:hosts] == sorted(keys[:hosts])
    assert len({host_of(body, names, r) for r in requests[:hosts]}) == hosts
    strict = post(api, flavor=flavor, diversify=False)["allocation_requests"]
    strict_keys = [
        (r["numa"]["width"], r["numa"]["average_distance"], r["numa"]["spread"]) for r in strict
    ]
    assert strict_keys == sorted(strict_keys)
    assert sorted(strict_keys) == sorted(keys)
    # identical guest cells are interchangeable: each host-cell set once unless asked
    every = post(api, flavor=flavor, every_ordering=True, diversify=False)["allocation_requests"]
    assert len(every) == 2 * len(strict)
    assert {tuple(r["numa"]["cells"]) for r in every} == {tuple(r["numa"]["cells"]) for r in strict}
    assert "group_policy=isolate" in requests[0]["numa"]["explain"]
    mapping = requests[0]["mappings"]
    assert set(mapping) == {"", "_MEM1", "_PROC1", "_MEM2", "_PROC2"}


def check_limit_and_closest_off(api: PlacementAPI, fleet: dict[str, Any]) -> None:
    flavor = {"vcpus": 4, "memory_mb": 4096, "extra_specs": {"hw:numa_nodes": "2"}}
    body = post(api, flavor=flavor, limit=3)
    assert len(body["allocation_requests"]) == 3
    assert all(r["numa"]["average_distance"] == 10.5 for r in body["allocation_requests"])
    plain = post(api, flavor=flavor, limit=3, prefer_closest_numa_nodes=False)
    assert any(r["numa"]["average_distance"] != 10.5 for r in plain["allocation_requests"])


def check_non_numa_flavor_only_on_hosts_not_reshaped(
    api: PlacementAPI, fleet: dict[str, Any]
) -> None:
    names = {host["root"]: name for name, host in fleet.items()}
    body = post(api, flavor={"vcpus": 2, "memory_mb": 2048})
    hosts = [host_of(body, names, r) for r in body["allocation_requests"]]
    assert sorted(hosts) == ["legacy-1", "legacy-non-numa"]
    assert body["allocation_requests"][0]["numa"]["explain"] == (
        "resources=VCPU:2,MEMORY_MB:2048&required=!HW_NUMA_ROOT"
    )


def check_wide_flavor_needs_distribution(api: PlacementAPI, fleet: dict[str, Any]) -> None:
    """20 dedicated CPUs: wider than any cell. Without KEP-2902 distribution no NUMA fit;
    with it, the narrowest even split per host (2 cells of 10 on Intel, 3 cells of 7/7/6 on AMD)."""
    names = {host["root"]: name for name, host in fleet.items()}
    flavor = {"vcpus": 20, "memory_mb": 16384, "extra_specs": {"hw:cpu_policy": "dedicated"}}
    assert post(api, flavor=flavor)["allocation_requests"] == []
    body = post(api, flavor=flavor, distribute_cpus_across_numa=True)
    first: dict[str, Any] = {}
    for request in body["allocation_requests"]:
        first.setdefault(host_of(body, names, request), request)
    assert first["intel-2s-1"]["numa"]["width"] == 2
    pcpus = sorted(
        r["resources"].get("PCPU", 0) for r in first["intel-2s-1"]["allocations"].values()
    )
    assert pcpus[-2:] == [10, 10]
    assert first["amd-2s-nps4"]["numa"]["width"] == 3
    assert first["amd-2s-nps4"]["numa"]["cells"] in ([0, 1, 2], [0, 1, 3], [4, 5, 6])
    assert "intel-2s-2" not in first or first["intel-2s-2"]["numa"]["width"] >= 2
    widths = [r["numa"]["width"] for r in body["allocation_requests"]]
    assert widths == sorted(widths)


def check_hugepage_flavor(api: PlacementAPI, fleet: dict[str, Any]) -> None:
    names = {host["root"]: name for name, host in fleet.items()}
    body = post(
        api,
        flavor={
            "vcpus": 4,
            "memory_mb": 4096,
            "extra_specs": {
                "hw:numa_nodes": "2",
                "hw:cpu_policy": "dedicated",
                "hw:mem_page_size": "1GB",
            },
        },
    )
    hosts = {host_of(body, names, r) for r in body["allocation_requests"]}
    assert hosts == {"amd-2s-nps4"}
    large = post(
        api,
        flavor={"vcpus": 2, "memory_mb": 2048, "extra_specs": {"hw:mem_page_size": "large"}},
        image={"hw_mem_page_size": "2MB"},
    )
    hosts = [host_of(large, names, r) for r in large["allocation_requests"]]
    assert set(hosts) == {"intel-2s-1", "intel-2s-2", "amd-nps4-1", "amd-nps4-2", "legacy-1"}
    # the host not reshaped (and not HW_NON_NUMA) is the spec's fallback, ranked after NUMA fits
    assert hosts[-1] == "legacy-1" and hosts.count("legacy-1") == 1
    assert large["allocation_requests"][-1]["numa"]["fallback"] is True
    assert large["allocation_requests"][-1]["numa"]["explain"] == (
        "resources=VCPU:2,MEMORY_MB:2048&required=!HW_NON_NUMA,!HW_NUMA_ROOT"
    )


def check_query_form_and_errors(api: PlacementAPI, fleet: dict[str, Any]) -> None:
    body = post(
        api,
        query={
            "resources_P": "PCPU:2",
            "required_P": "HW_NUMA_ROOT",
            "resources_M": "MEMORY_MB:1024",
            "required_M": "MEMORY_PAGE_SIZE_LARGE",
            "same_subtree": ["_P,_M"],
            "group_policy": "none",
        },
        limit=5,
    )
    assert len(body["allocation_requests"]) == 5
    assert all(r["numa"]["width"] == 1 for r in body["allocation_requests"])
    # two groups free to land on one cell (group_policy=none): their amounts are summed per
    # provider, as GET /allocation_candidates does
    shared = post(
        api,
        query={
            "resources_A": "PCPU:1",
            "required_A": "HW_NUMA_ROOT",
            "resources_B": "PCPU:1",
            "required_B": "HW_NUMA_ROOT",
            "group_policy": "none",
        },
        limit=1000,
    )
    same_cell = [
        r for r in shared["allocation_requests"] if r["mappings"]["_A"] == r["mappings"]["_B"]
    ]
    assert same_cell
    assert all(
        r["allocations"][r["mappings"]["_A"][0]]["resources"] == {"PCPU": 2} for r in same_cell
    )
    bad = api.post(
        "/allocation_candidates",
        json={"flavor": {"vcpus": 4, "memory_mb": 4096, "extra_specs": {"hw:numa_nodes": "3"}}},
        version=V,
    )
    assert bad.status_code == 400
    error = bad.json()["errors"][0]
    assert error["code"] == "placement_numa.flavor.invalid" and "hw:numa_nodes" in error["detail"]
    both = api.post(
        "/allocation_candidates",
        json={"flavor": {"vcpus": 1, "memory_mb": 1}, "query": {}},
        version=V,
    )
    assert both.status_code == 400
    old = api.post(
        "/allocation_candidates", json={"flavor": {"vcpus": 1, "memory_mb": 1}}, version="1.35"
    )
    assert old.status_code == 404


def test_distance_put_is_visible_to_the_next_post(api: PlacementAPI) -> None:
    """The cell index is cached per process by revision: a matrix PUT shows in the very next
    POST, and POSTs with no write in between read nothing new."""
    from placement_numa.api.cell_index_dep import cell_index_for_state

    host = two_cell_host(api)
    path = f"/resource_providers/{host['root']}/numa_distances"
    flavor = {"vcpus": 2, "memory_mb": 2048, "extra_specs": {"hw:numa_nodes": "2"}}

    def average() -> Any:
        requests = post(api, flavor=flavor, limit=1)["allocation_requests"]
        assert len(requests) == 1
        return requests[0]["numa"]["average_distance"]

    before = average()
    matrix = distances([10, 21], [21, 10])
    put = api.put(path, json={"generation": None, "distances": matrix}, version=V)
    assert put.status_code == 200, put.text
    assert average() == 15.5 != before
    cache = cell_index_for_state(api.client.app.state)  # type: ignore[attr-defined]
    loads = cache.loads
    assert average() == 15.5 and cache.loads == loads  # nothing written: no reload
    body = {"generation": put.json()["generation"], "distances": distances([10, 31], [31, 10])}
    assert api.put(path, json=body, version=V).status_code == 200
    assert average() == 20.5 and cache.loads == loads + 1


def test_renaming_a_cell_never_breaks_a_read(api: PlacementAPI) -> None:
    """Issue 29: cells are known by the provider each id stood for when the matrix was
    written, so a cell renamed away from ``<host>_NUMA<id>`` (or even to another cell's id)
    keeps its id: the matrix, its cells and the ranking's distances read as before."""
    host = two_cell_host(api, "renamed")
    path = f"/resource_providers/{host['root']}/numa_distances"
    flavor = {"vcpus": 2, "memory_mb": 2048, "extra_specs": {"hw:numa_nodes": "2"}}
    put = api.put(path, json={"generation": None, "distances": distances([10, 21], [21, 10])})
    assert put.status_code == 200, put.text
    before = put.json()
    for cell, name in ((host["cells"][0], "socket-a"), (host["cells"][1], "renamed_NUMA0")):
        assert api.put(f"/resource_providers/{cell}", json={"name": name}).status_code == 200
    after = api.get(path, version=V)
    assert after.status_code == 200, after.text
    assert after.json() == before
    requests = post(api, flavor=flavor, limit=1)["allocation_requests"]
    assert requests[0]["numa"]["average_distance"] == 15.5
    # A write keeps the ids too; a new matrix over the renamed cells is accepted.
    body = {"generation": before["generation"], "distances": distances([10, 31], [31, 10])}
    replaced = api.put(path, json=body, version=V)
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["cells"] == before["cells"]
