"""Patched snapshots share structure with the snapshot they patch (``replace_trees``).

Random chains of tree patches (usage, inventory, trait and aggregate changes; providers added,
deleted, moved; trees added and removed) applied to a random forest, each patch either copying
(the old snapshot stays usable: it must not change) or handed over (``owned=True``: indexes no
one else references are patched in place). After every patch the snapshot equals one built from
scratch from the same rows; the API's fragment cache (``FragmentCache``, keyed by what the
refresh replaced) keeps every entry of untouched providers and
trees (the same objects) and none of the replaced ones; encoded bodies equal the reference
rendering and a fresh build's.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.api import microversion as mv
from placement_numa.api.schemas.allocation_candidates import (
    FragmentCache,
    encode_candidates,
    render_candidates,
)
from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine import SnapshotEngine, StaticFleetSource
from placement_numa.engine.fleet import SHARING_TRAIT, FleetSnapshot
from placement_numa.engine.fleet_patch import replace_trees
from tests.candidate_fleets import AGGS, RCS, TRAITS, forests, inventories, uuid_of
from tests.test_fleet_refresh import canonical

VERSION = mv.Microversion(1, 39)
QUERIES = (
    CandidateQuery(groups=(RequestGroup(suffix=None, resources={"VCPU": 1}),)),
    CandidateQuery(
        groups=(
            RequestGroup(suffix="_A", resources={"MEMORY_MB": 1}),
            RequestGroup(suffix="_B", resources={"DISK_GB": 1}),
        ),
        group_policy="none",
    ),
)

# state: provider id -> {"parent": id | None, "inv": {rc: inventory tuple}, "used": {rc: n},
# "traits": set, "aggs": set}
State = dict[int, dict[str, Any]]


def state_of(fleet: FleetSnapshot) -> State:
    """The live providers of ``fleet`` as editable rows."""
    providers = fleet.providers
    state: State = {}
    for i in sorted(fleet.index_by_uuid.values()):
        p = providers[i]
        state[p.id] = {
            "parent": providers[p.parent].id if p.parent >= 0 else None,
            "inv": {
                rc: (
                    inv.total,
                    inv.reserved,
                    inv.min_unit,
                    inv.max_unit,
                    inv.step_size,
                    inv.allocation_ratio,
                )
                for rc, inv in p.inventories.items()
            },
            "used": {rc: inv.used for rc, inv in p.inventories.items() if inv.used},
            "traits": set(p.traits),
            "aggs": set(p.aggregates),
        }
    return state


def root_of(state: State, pid: int) -> int:
    while state[pid]["parent"] is not None:
        pid = state[pid]["parent"]
    return pid


def rows(state: State, ids: list[int]) -> tuple[list[Any], ...]:
    """``replace_trees`` / ``build`` rows of providers ``ids``."""
    providers, invs, usages, traits, aggs = [], [], [], [], []
    for pid in sorted(ids):
        p = state[pid]
        providers.append((pid, uuid_of(pid), p["parent"], root_of(state, pid)))
        for rc, inv in p["inv"].items():
            invs.append((pid, rc, *inv))
            if p["used"].get(rc):
                usages.append((pid, rc, p["used"][rc]))
        traits.extend((pid, t) for t in p["traits"])
        aggs.extend((pid, a) for a in p["aggs"])
    return providers, invs, usages, traits, aggs


def subtree(state: State, pid: int) -> set[int]:
    found = {pid}
    grew = True
    while grew:
        grew = False
        for other, p in state.items():
            if other not in found and p["parent"] in found:
                found.add(other)
                grew = True
    return found


@st.composite
def edits(draw: Any, state: State, max_id: int) -> State:
    """``state`` after 1-3 random writes (new providers get ids above ``max_id``, as a
    database sequence hands out)."""
    state = {
        pid: {
            **p,
            "inv": dict(p["inv"]),
            "used": dict(p["used"]),
            "traits": set(p["traits"]),
            "aggs": set(p["aggs"]),
        }
        for pid, p in state.items()
    }
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(
                ("usage", "usage", "inventory", "traits", "aggregates", "add", "delete", "move")
            )
        )
        ids = sorted(state)
        if kind == "add" or not ids:
            new_id = max_id = max([max_id, *ids]) + 1
            parent = draw(st.one_of(st.none(), st.sampled_from(ids))) if ids else None
            state[new_id] = {
                "parent": parent,
                "inv": {},
                "used": {},
                "traits": set(),
                "aggs": set(),
            }
            continue
        pid = draw(st.sampled_from(ids))
        p = state[pid]
        if kind == "usage":
            if p["inv"]:
                rc = draw(st.sampled_from(sorted(p["inv"])))
                p["used"][rc] = draw(st.integers(0, p["inv"][rc][0]))
        elif kind == "inventory":
            p["inv"], p["used"] = {}, {}
            for rc in draw(st.sets(st.sampled_from(RCS), max_size=3)):
                *inv, used = draw(inventories())
                p["inv"][rc] = tuple(inv)
                if used:
                    p["used"][rc] = used
        elif kind == "traits":
            p["traits"] = set(draw(st.sets(st.sampled_from((*TRAITS, SHARING_TRAIT)))))
        elif kind == "aggregates":
            p["aggs"] = set(draw(st.sets(st.sampled_from(AGGS))))
        elif kind == "delete":
            if not any(other["parent"] == pid for other in state.values()):
                del state[pid]
        elif kind == "move":
            targets = sorted(set(state) - subtree(state, pid))
            p["parent"] = draw(st.one_of(st.none(), st.sampled_from(targets))) if targets else None
    return state


def warm(fleet: FleetSnapshot, fragments: FragmentCache) -> None:
    """Fill ``fragments`` for ``fleet`` (one response shape) and check the bodies."""
    engine = SnapshotEngine(StaticFleetSource(fleet))
    for query in QUERIES:
        result = engine.search(query)
        expected = render_candidates(result, query, VERSION, nested_aware=True)
        for _ in range(2):
            body = encode_candidates(result, query, VERSION, nested_aware=True, fragments=fragments)
            assert orjson.loads(body) == expected


def bodies(fleet: FleetSnapshot, fragments: FragmentCache | None = None) -> list[Any]:
    engine = SnapshotEngine(StaticFleetSource(fleet))
    found = []
    for query in QUERIES:
        result = engine.search(query)
        body = encode_candidates(result, query, VERSION, nested_aware=True, fragments=fragments)
        found.append(orjson.loads(body))
    return found


def touched_roots(old: State, new: State) -> set[int]:
    """Database ids of the roots, before and after, of every provider that changed."""
    roots = set()
    for pid in set(old) | set(new):
        before = old.get(pid)
        after = new.get(pid)
        same = (
            before is not None
            and after is not None
            and before == after
            and root_of(old, pid) == root_of(new, pid)
        )
        if not same:
            if before is not None:
                roots.add(root_of(old, pid))
            if after is not None:
                roots.add(root_of(new, pid))
    return roots


def patched_by_edits(
    data: st.DataObject, current: FleetSnapshot, state: State, revision: int
) -> tuple[FleetSnapshot, State]:
    """``current`` (whose live rows are ``state``) after 1-3 random writes (``edits``),
    patched at ``revision`` with ``owned`` drawn: the patched snapshot and its rows."""
    new_state = data.draw(edits(state, current.max_id))
    roots = touched_roots(state, new_state)
    replaced = [pid for pid in new_state if root_of(new_state, pid) in roots]
    patched = replace_trees(
        current,
        revision,
        sorted(roots),
        *rows(new_state, replaced),
        owned=data.draw(st.booleans()),
    )
    assert patched is not None
    return patched, new_state


def check_caches(
    cached: dict[object, dict[object, object]],
    patched: FleetSnapshot,
    fragments: FragmentCache,
    stale: set[object],
) -> None:
    """Every entry of ``cached`` (the old snapshot's fragments) is in ``patched``'s, the same
    object, unless it is ``stale``; no stale key is."""
    for shape, before in cached.items():
        after = fragments.get(patched, shape)
        for key, value in before.items():
            if key in stale:
                assert key not in after, key
            else:
                assert after[key] is value, key


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_patches_share_structure_and_equal_a_fresh_build(data: st.DataObject) -> None:
    current = data.draw(forests())
    fragments = FragmentCache()
    warm(current, fragments)
    state = state_of(current)
    held: list[tuple[FleetSnapshot, dict[str, Any], list[Any]]] = []
    for revision in range(2, 2 + data.draw(st.integers(1, 4))):
        new_state = data.draw(edits(state, current.max_id))
        roots = touched_roots(state, new_state)
        replaced = [pid for pid in new_state if root_of(new_state, pid) in roots]
        owned = data.draw(st.booleans())
        index_by_id = current.index_by_id
        stale: set[object] = {index_by_id[pid] for pid in state if root_of(state, pid) in roots}
        stale |= {("root", index_by_id[r]) for r in roots if r in index_by_id}
        stale |= {("root-q", index_by_id[r]) for r in roots if r in index_by_id}
        stale |= {("runs", index_by_id[r]) for r in roots if r in index_by_id}
        cached = {shape: dict(cache) for shape, cache in fragments._shapes.items()}
        del index_by_id
        if not owned:
            held.append((current, canonical(current), bodies(current)))
        providers_id = id(current.providers)
        patched = replace_trees(
            current, revision, sorted(roots), *rows(new_state, replaced), owned=owned
        )
        assert patched is not None
        fresh = FleetSnapshot.build(revision, *rows(new_state, list(new_state)))
        assert canonical(patched) == canonical(fresh)
        # patched in place exactly when handed over (nothing else holds a provider list)
        assert current.handed_over == owned
        assert (id(patched.providers) == providers_id) == owned
        # untouched entries survive as the same objects; replaced ones are gone
        new_indices = {patched.index_by_id[pid] for pid in replaced}
        new_roots = {patched.index_by_id[r] for r in roots if r in patched.index_by_id}
        stale |= new_indices
        stale |= {("root", r) for r in new_roots} | {("root-q", r) for r in new_roots}
        stale |= {("runs", r) for r in new_roots}
        check_caches(cached, patched, fragments, stale)
        for rc in RCS:  # patched per class from the old snapshot's sets (sharing included)
            assert {patched.uuids[r] for r in patched.roots_having(rc)} == {
                fresh.uuids[r] for r in fresh.roots_having(rc)
            }, rc
        assert bodies(patched, fragments) == bodies(fresh)
        warm(patched, fragments)
        current, state = patched, new_state
    for old, before, old_bodies in held:
        assert not old.handed_over
        assert canonical(old) == before
        assert bodies(old) == old_bodies
