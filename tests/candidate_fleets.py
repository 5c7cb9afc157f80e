"""Hypothesis strategies for the candidate engine: random small forests and random queries.

Forests: 1-3 compute trees (root, children, grandchildren) plus 0-2 sharing providers
(``MISC_SHARES_VIA_AGGREGATE``) in random aggregates, random inventories (reserved, min/max unit,
step size, allocation ratio), partial usage, traits and aggregates. Queries: an optional
unsuffixed group and up to three suffixed groups (resourceless ones inside ``same_subtree``),
with required / any-of / forbidden traits, member_of (any-of and forbidden), in_tree,
group_policy, same_subtree and root_required.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup
from placement_numa.engine.fleet import SHARING_TRAIT, FleetSnapshot

RCS = ("VCPU", "MEMORY_MB", "DISK_GB")
TRAITS = ("CUSTOM_A", "CUSTOM_B", "HW_NUMA_ROOT")
AGGS = ("a0000000-0000-4000-8000-000000000001", "a0000000-0000-4000-8000-000000000002")


def uuid_of(pid: int) -> str:
    return f"00000000-0000-0000-0000-{pid:012d}"


@st.composite
def inventories(draw: Any) -> tuple[int, int, int, int, int, float, int]:
    total = draw(st.integers(2, 8))
    reserved = draw(st.sampled_from((0, 0, 0, 1)))
    min_unit = draw(st.sampled_from((1, 1, 1, 2)))
    max_unit = draw(st.sampled_from((total, total, min_unit + 1)))
    step = draw(st.sampled_from((1, 1, 1, 2)))
    ratio = draw(st.sampled_from((1.0, 1.0, 1.5)))
    used = draw(st.sampled_from((0, 0, 1, total - 1, total)))
    used = min(used, int((total - reserved) * ratio))  # writable through the API
    return total, reserved, min_unit, max_unit, step, ratio, used


@st.composite
def forests(draw: Any, max_providers: int = 8) -> FleetSnapshot:
    """A random small forest as a ``FleetSnapshot`` (provider ids from 1, uuids from ids)."""
    rows: list[tuple[int, str, int | None, int]] = []
    next_id = 1

    def add(parent: int | None, root: int | None) -> int:
        nonlocal next_id
        pid = next_id
        next_id += 1
        rows.append((pid, uuid_of(pid), parent, root if root is not None else pid))
        return pid

    for _ in range(draw(st.integers(1, 3))):
        if len(rows) >= max_providers:
            break
        root = add(None, None)
        for _ in range(draw(st.integers(0, 2))):
            if len(rows) >= max_providers:
                break
            child = add(root, root)
            for _ in range(draw(st.integers(0, 1))):
                if len(rows) < max_providers:
                    add(child, root)
    sharing: list[int] = []
    for _ in range(draw(st.integers(0, 2))):
        if len(rows) < max_providers:
            sharing.append(add(None, None))
    inv_rows, usage_rows, trait_rows, agg_rows = [], [], [], []
    for pid, *_ in rows:
        for rc in draw(st.sets(st.sampled_from(RCS), min_size=1, max_size=3)):
            total, reserved, min_unit, max_unit, step, ratio, used = draw(inventories())
            inv_rows.append((pid, rc, total, reserved, min_unit, max_unit, step, ratio))
            if used:
                usage_rows.append((pid, rc, used))
        for trait in draw(st.sets(st.sampled_from(TRAITS), max_size=3)):
            trait_rows.append((pid, trait))
        if pid in sharing:
            trait_rows.append((pid, SHARING_TRAIT))
        for agg in draw(st.sets(st.sampled_from(AGGS), max_size=2)):
            agg_rows.append((pid, agg))
    return FleetSnapshot.build(1, rows, inv_rows, usage_rows, trait_rows, agg_rows)


@st.composite
def groups(draw: Any, suffix: str | None, resourceless: bool, fleet_size: int) -> RequestGroup:
    if resourceless:
        resources: dict[str, int] = {}
    else:
        rcs = draw(st.sets(st.sampled_from(RCS), min_size=1, max_size=2 if suffix is None else 1))
        resources = {rc: draw(st.sampled_from((1, 1, 2, 3))) for rc in sorted(rcs)}
    required: set[str] = set()
    forbidden: set[str] = set()
    any_traits: list[set[str]] = []
    member_of: list[set[str]] = []
    forbidden_aggs: set[str] = set()
    in_tree = None
    # each constraint kind with a small probability, so that most queries have answers
    kinds = draw(st.lists(st.integers(0, 17), max_size=2))
    if 0 in kinds:
        required = {draw(st.sampled_from(TRAITS))}
    if 1 in kinds:
        forbidden = {draw(st.sampled_from(TRAITS))} - required
    if 2 in kinds:
        any_traits = [set(draw(st.permutations(TRAITS))[:2])]
    if 3 in kinds:
        member_of = [draw(st.sets(st.sampled_from(AGGS), min_size=1, max_size=2))]
    if 4 in kinds:
        forbidden_aggs = {draw(st.sampled_from(AGGS))}
    if 5 in kinds:
        in_tree = uuid_of(draw(st.integers(1, fleet_size + 1)))
    if resourceless and not (
        required or forbidden or any_traits or member_of or forbidden_aggs or in_tree
    ):
        required = {draw(st.sampled_from(TRAITS))}  # a group needs one parameter to exist
    return RequestGroup(
        suffix=suffix,
        resources=resources,
        required_traits=frozenset(required),
        any_traits=tuple(frozenset(s) for s in any_traits),
        forbidden_traits=frozenset(forbidden),
        member_of=tuple(frozenset(s) for s in member_of),
        forbidden_aggregates=frozenset(forbidden_aggs),
        in_tree=in_tree,
    )


@st.composite
def queries(draw: Any, fleet_size: int, max_slots: int = 4) -> CandidateQuery:
    """A random query with at most ``max_slots`` search slots."""
    chosen: list[RequestGroup] = []
    slots = 0
    if draw(st.booleans()):
        group = draw(groups(None, False, fleet_size))
        chosen.append(group)
        slots += len(group.resources)
    count = draw(st.integers(0 if chosen else 1, max(0, min(3, max_slots - slots))))
    suffixes = [f"_S{i}" for i in range(count)]
    same_subtree: list[frozenset[str]] = []
    if len(suffixes) >= 2 and draw(st.booleans()):
        same_subtree.append(frozenset(draw(st.sets(st.sampled_from(suffixes), min_size=2))))
    in_subtree = set().union(*same_subtree) if same_subtree else set()
    for suffix in suffixes:
        resourceless = suffix in in_subtree and draw(st.integers(0, 2)) == 0
        chosen.append(draw(groups(suffix, resourceless, fleet_size)))
    if all(not g.resources for g in chosen):
        chosen[-1] = RequestGroup(suffix=chosen[-1].suffix, resources={"VCPU": 1})
    root_required: set[str] = set()
    root_forbidden: set[str] = set()
    root_kind = draw(st.integers(0, 7))
    if root_kind == 0:
        root_required = {draw(st.sampled_from(TRAITS))}
    elif root_kind == 1:
        root_forbidden = {draw(st.sampled_from(TRAITS))}
    return CandidateQuery(
        groups=tuple(chosen),
        group_policy=draw(st.sampled_from(("none", "isolate"))),
        same_subtree=tuple(same_subtree),
        root_required=frozenset(root_required),
        root_forbidden=frozenset(root_forbidden),
    )


def with_copies(fleet: FleetSnapshot, copies: int) -> FleetSnapshot:
    """``fleet`` plus ``copies`` clones of each tree (same inventories, usage, traits and
    aggregates), so that look-alike roots exist and the engine's replay path is exercised."""
    providers = fleet.providers
    rows: list[tuple[int, str, int | None, int]] = []
    inventories: list[tuple[int, str, int, int, int, int, int, float]] = []
    usages: list[tuple[int, str, int]] = []
    traits: list[tuple[int, str]] = []
    aggregates: list[tuple[int, str]] = []
    next_id = 1

    def emit(p_index: int, new_id: int, parent: int | None, root: int) -> None:
        p = providers[p_index]
        rows.append((new_id, uuid_of(new_id), parent, root))
        for rc, inv in p.inventories.items():
            inventories.append(
                (
                    new_id,
                    rc,
                    inv.total,
                    inv.reserved,
                    inv.min_unit,
                    inv.max_unit,
                    inv.step_size,
                    inv.allocation_ratio,
                )
            )
            if inv.used:
                usages.append((new_id, rc, inv.used))
        traits.extend((new_id, t) for t in p.traits)
        aggregates.extend((new_id, a) for a in p.aggregates)

    for copy in range(copies + 1):
        for root in fleet.roots:
            if copy and providers[root].sharing:
                continue
            ids: dict[int, int] = {}
            for member in fleet.tree[root]:
                ids[member] = next_id
                next_id += 1
            for member in fleet.tree[root]:
                parent = providers[member].parent
                emit(member, ids[member], ids[parent] if parent >= 0 else None, ids[root])
    return FleetSnapshot.build(1, rows, inventories, usages, traits, aggregates)
