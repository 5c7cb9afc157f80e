"""Write a ``FleetSnapshot`` (from ``tests.candidate_fleets``) through the HTTP API, and turn
``CandidateQuery`` objects into query strings and responses into candidate keys."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlencode

from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine.fleet import FleetSnapshot


def seed_fleet(api: Any, fleet: FleetSnapshot) -> None:
    """Create every provider of ``fleet`` with its uuid, inventories, usage, traits, aggregates."""
    v = "1.28"
    custom = {t for p in fleet.providers for t in p.traits if t.startswith("CUSTOM_")}
    custom |= {"CUSTOM_A", "CUSTOM_B"}  # names the random queries use
    for name in sorted(custom):
        assert api.put(f"/traits/{name}", version=v).status_code in (201, 204)
    for p in fleet.providers:
        body: dict[str, Any] = {"name": f"rp-{p.uuid}", "uuid": p.uuid}
        if p.parent >= 0:
            body["parent_provider_uuid"] = fleet.providers[p.parent].uuid
        r = api.post("/resource_providers", json=body, version=v)
        assert r.status_code in (200, 201), r.text
    for p in fleet.providers:
        base = f"/resource_providers/{p.uuid}"
        gen = api.get(base, version=v).json()["generation"]
        if p.inventories:
            loose = {
                rc: {
                    "total": inv.total,
                    "allocation_ratio": inv.allocation_ratio,
                    "max_unit": max(inv.total, 1),
                }
                for rc, inv in p.inventories.items()
            }
            r = api.put(
                f"{base}/inventories",
                json={"resource_provider_generation": gen, "inventories": loose},
                version=v,
            )
            assert r.status_code == 200, r.text
            gen = r.json()["resource_provider_generation"]
            for rc, inv in p.inventories.items():
                if inv.used:
                    r = api.put(
                        f"/allocations/{uuid.uuid4()}",
                        json={
                            "allocations": {p.uuid: {"resources": {rc: inv.used}}},
                            "project_id": "p",
                            "user_id": "u",
                            "consumer_generation": None,
                        },
                        version=v,
                    )
                    assert r.status_code == 204, r.text
            gen = api.get(base, version=v).json()["generation"]
            final = {
                rc: {
                    "total": inv.total,
                    "reserved": inv.reserved,
                    "min_unit": inv.min_unit,
                    "max_unit": inv.max_unit,
                    "step_size": inv.step_size,
                    "allocation_ratio": inv.allocation_ratio,
                }
                for rc, inv in p.inventories.items()
            }
            r = api.put(
                f"{base}/inventories",
                json={"resource_provider_generation": gen, "inventories": final},
                version=v,
            )
            assert r.status_code == 200, r.text
            gen = r.json()["resource_provider_generation"]
        if p.traits:
            r = api.put(
                f"{base}/traits",
                json={"resource_provider_generation": gen, "traits": sorted(p.traits)},
                version=v,
            )
            assert r.status_code == 200, r.text
            gen = r.json()["resource_provider_generation"]
        if p.aggregates:
            r = api.put(
                f"{base}/aggregates",
                json={"resource_provider_generation": gen, "aggregates": sorted(p.aggregates)},
                version=v,
            )
            assert r.status_code == 200, r.text


def query_string(query: CandidateQuery) -> str:
    """``query`` as Placement's query string (1.39 grammar)."""
    pairs: list[tuple[str, str]] = []
    for g in query.groups:
        s = g.suffix or ""
        if g.resources:
            pairs.append((f"resources{s}", ",".join(f"{k}:{v}" for k, v in g.resources.items())))
        traits = sorted(g.required_traits) + [f"!{t}" for t in sorted(g.forbidden_traits)]
        if traits:
            pairs.append((f"required{s}", ",".join(traits)))
        for any_of in g.any_traits:
            pairs.append((f"required{s}", "in:" + ",".join(sorted(any_of))))
        for aggs in g.member_of:
            pairs.append((f"member_of{s}", "in:" + ",".join(sorted(aggs))))
        if g.forbidden_aggregates:
            pairs.append((f"member_of{s}", "!in:" + ",".join(sorted(g.forbidden_aggregates))))
        if g.in_tree:
            pairs.append((f"in_tree{s}", g.in_tree))
    if query.group_policy:
        pairs.append(("group_policy", query.group_policy))
    for names in query.same_subtree:
        pairs.append(("same_subtree", ",".join(sorted(names))))
    root = sorted(query.root_required) + [f"!{t}" for t in sorted(query.root_forbidden)]
    if root:
        pairs.append(("root_required", ",".join(root)))
    if query.limit:
        pairs.append(("limit", str(query.limit)))
    return urlencode(pairs)


def response_keys(body: dict[str, Any], query: CandidateQuery) -> list[tuple[object, ...]]:
    """Candidate keys (uuid form) of a 1.34+ response, in response order."""
    keys = []
    for item in body["allocation_requests"]:
        allocations = tuple(
            sorted(
                (u, rc, amount)
                for u, r in item["allocations"].items()
                for rc, amount in r["resources"].items()
            )
        )
        mappings = tuple(
            (g.suffix, tuple(sorted(item["mappings"][g.suffix or ""]))) for g in query.groups
        )
        keys.append((allocations, mappings))
    return keys


def uuid_keys(fleet: FleetSnapshot, keys: set[tuple[Any, ...]]) -> set[tuple[object, ...]]:
    """Oracle keys (provider indices) in uuid form."""
    u = [p.uuid for p in fleet.providers]
    return {
        (
            tuple(sorted((u[p], rc, a) for p, rc, a in allocations)),
            tuple((s, tuple(sorted(u[p] for p in ps))) for s, ps in mappings),
        )
        for allocations, mappings in keys
    }
