"""Bounded ranked search == exhaustive ranking (pure, in memory, runs once).

The NUMA service searches roots in ascending order of the best key they can offer
(``NumaRanker.bound``, the engine's ``rank_bound`` hook) and stops at ``limit``; the previous
exhaustive path (every candidate of every root ranked; KEP-2902 widths host by host) is kept as
the reference (``exhaustive=True``). These properties check, on random fleets:

* the bound of a root is <= the rank key of each of its candidates (and ``None`` only for roots
  without candidates);
* order and content of the answer, with and without ``limit``, equal the reference, for random
  generic queries (``query_candidates``) and random NUMA flavors (``flavor_candidates``, with
  and without ``distribute_cpus_across_numa``), on fleets with look-alike hosts.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine import SnapshotEngine, StaticFleetSource
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.options import candidate_roots
from placement_numa.engine.plan import plan_query
from placement_numa.engine.replay import RootSearch, RootView
from placement_numa.numa.engine_rank import CellIndex, NumaRanker
from placement_numa.numa.flavor import Flavor
from placement_numa.numa.page_sizes import provider_traits
from placement_numa.services.numa_candidates import (
    NumaOptions,
    RankedCandidate,
    flavor_candidates,
    query_candidates,
)
from placement_numa.services.numa_search import anchors_distinct as _anchors_distinct
from tests.candidate_fleets import forests, queries, uuid_of, with_copies

PROPERTY = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def answer(found: list[RankedCandidate]) -> list[Any]:
    return [
        (r.candidate.anchor, r.candidate.chosen, r.candidate.allocations, r.score, r.fallback)
        for r in found
    ]


@st.composite
def matrices(draw: Any, cells: int) -> dict[int, dict[int, int]] | None:
    if draw(st.booleans()):
        return None
    far = {(a, b): draw(st.sampled_from((11, 12, 21, 30))) for a in range(cells) for b in range(a)}
    return {
        a: {b: 10 if a == b else far[(max(a, b), min(a, b))] for b in range(cells)}
        for a in range(cells)
    }


@st.composite
def numa_fleets(draw: Any, max_hosts: int = 5) -> tuple[FleetSnapshot, CellIndex]:
    """Compute nodes of 1-4 NUMA cells (PCPU and/or VCPU, small and 2 MiB page children, random
    usage), some repeated as look-alikes, some non-NUMA hosts; random cell ids and SLITs."""
    rows: list[tuple[int, str, int | None, int]] = []
    inventories: list[tuple[int, str, int, int, int, int, int, float]] = []
    usages: list[tuple[int, str, int]] = []
    traits: list[tuple[int, str]] = []
    cell_ids: dict[str, int] = {}
    distances: dict[str, Any] = {}
    names: dict[str, str] = {}
    next_id = 1

    def add(parent: int | None, root: int | None) -> int:
        nonlocal next_id
        pid = next_id
        next_id += 1
        rows.append((pid, uuid_of(pid), parent, root if root is not None else pid))
        return pid

    shapes = draw(
        st.lists(
            st.tuples(
                st.sampled_from((0, 1, 2, 2, 3, 4, 4)),  # cells (0: non-NUMA host)
                st.integers(1, 3),  # copies
                st.integers(0, 2**16),  # seed of inventories and usage
            ),
            min_size=1,
            max_size=max_hosts,
        )
    )
    for cells, copies, seed in shapes:
        matrix = draw(matrices(cells)) if cells else None
        permuted = draw(st.permutations(range(cells)))
        for copy in range(copies):
            salt = seed + (copy if draw(st.booleans()) else 0)  # look-alike or not
            root = add(None, None)
            names[uuid_of(root)] = f"host{root}"
            inventories.append((root, "DISK_GB", 100, 0, 1, 100, 1, 1.0))
            if not cells:
                inventories.append((root, "VCPU", 8, 0, 1, 8, 1, 1.0))
                inventories.append((root, "MEMORY_MB", 8192, 0, 1, 8192, 1, 1.0))
                continue
            if matrix is not None:
                distances[uuid_of(root)] = matrix
            for c in range(cells):
                cell = add(root, root)
                if (salt >> c) & 1 == 0:
                    cell_ids[uuid_of(cell)] = permuted[c]
                traits.append((cell, "HW_NUMA_ROOT"))
                for k, rc in enumerate(("PCPU", "VCPU")):
                    total = (salt >> (4 + 2 * c + k)) % 3 * 2 + 2
                    inventories.append((cell, rc, total, 0, 1, total, 1, 1.0))
                    used = (salt >> (10 + c + k)) % 3
                    if used:
                        usages.append((cell, rc, min(used, total)))
                for size_kb, mb in ((4, 4096), (2048, 2048)):
                    if size_kb == 2048 and (salt >> (14 + c)) & 1:
                        continue
                    page = add(cell, root)
                    step = max(1, size_kb // 1024)
                    inventories.append((page, "MEMORY_MB", mb, 0, step, mb, step, 1.0))
                    traits.extend((page, t) for t in provider_traits(size_kb))
                    if (salt >> (16 + c)) & 1:
                        usages.append((page, "MEMORY_MB", mb // 2))
    fleet = FleetSnapshot.build(1, rows, inventories, usages, traits)
    return fleet, CellIndex(cell_ids, distances, names)


@st.composite
def flavors(draw: Any) -> tuple[Flavor, NumaOptions]:
    vcpus = draw(st.integers(2, 6))
    specs: dict[str, str] = {}
    nodes = draw(st.sampled_from((None, 1, 2, 2, 2, 3)))
    if nodes is not None and nodes <= vcpus:
        specs["hw:numa_nodes"] = str(nodes)
    policy = draw(st.sampled_from((None, "dedicated", "shared")))
    if policy:
        specs["hw:cpu_policy"] = policy
    page = draw(st.sampled_from((None, "small", "2MB", "any", "large")))
    if page:
        specs["hw:mem_page_size"] = page
    if draw(st.integers(0, 3)) == 0:  # numbered group with group_policy=none: filtered anchors
        specs["resources1:DISK_GB"] = "1"
        specs["group_policy"] = "none"
    memory = draw(st.sampled_from((512, 1024, 2048)))
    options = NumaOptions(
        limit=draw(st.sampled_from((None, 1, 2, 3, 5, 8))),
        prefer_closest=draw(st.booleans()),
        distribute=draw(st.booleans()),
    )
    return Flavor(vcpus=vcpus, memory_mb=memory, extra_specs=specs), options


@PROPERTY
@given(numa_fleets(), flavors())
def test_flavor_candidates_equal_the_exhaustive_ranking(
    fleet_index: tuple[FleetSnapshot, CellIndex], flavor_options: tuple[Flavor, NumaOptions]
) -> None:
    fleet, index = fleet_index
    flavor, options = flavor_options
    engine = SnapshotEngine(StaticFleetSource(fleet))
    kwargs: dict[str, Any] = dict(
        database=None, engine=engine, flavor=flavor, image=None, options=options, index=index
    )
    try:
        reference = flavor_candidates(**kwargs, exhaustive=True)
    except Exception as error:  # an invalid random flavor is rejected the same way
        try:
            flavor_candidates(**kwargs)
        except Exception as again:
            assert type(again) is type(error)
            return
        raise AssertionError("bounded search accepted an invalid flavor") from error
    assert answer(flavor_candidates(**kwargs)) == answer(reference)


def _bounds_hold(fleet: FleetSnapshot, query: CandidateQuery, ranker: NumaRanker) -> None:
    plan = plan_query(fleet, query)
    searcher = RootSearch(plan)
    for root in candidate_roots(plan):
        bound = ranker.bound(RootView(searcher, root))
        keys = [
            ranker.rank(c, fleet)
            for c in RootSearch(plan).candidates(root)
            if _anchors_distinct(c, ranker.distinct)
        ]
        if bound is None:
            assert not keys
        else:
            assert all(bound <= key for key in keys), (bound, keys)


@PROPERTY
@given(st.data())
def test_generic_queries_equal_the_exhaustive_ranking(data: st.DataObject) -> None:
    fleet = with_copies(data.draw(forests(max_providers=6)), copies=data.draw(st.integers(0, 2)))
    query = data.draw(queries(len(fleet.providers), max_slots=3))
    cells = [p.uuid for p in fleet.providers if "HW_NUMA_ROOT" in p.traits]
    ids = {u: data.draw(st.integers(0, 3)) for u in cells}
    index = CellIndex(ids, {}, {})
    limit = data.draw(st.sampled_from((None, 1, 2, 4)))
    prefer = data.draw(st.booleans())
    ranker = NumaRanker(index, ("VCPU",), prefer_closest=prefer)
    _bounds_hold(fleet, query, ranker)
    engine = SnapshotEngine(StaticFleetSource(fleet))
    options = NumaOptions(limit=limit, prefer_closest=prefer)
    kwargs: dict[str, Any] = dict(
        database=None, engine=engine, query=query, options=options, index=index
    )
    assert answer(query_candidates(**kwargs)) == answer(query_candidates(**kwargs, exhaustive=True))


@PROPERTY
@given(numa_fleets(max_hosts=3), flavors())
def test_numa_bounds_are_lower_bounds(
    fleet_index: tuple[FleetSnapshot, CellIndex], flavor_options: tuple[Flavor, NumaOptions]
) -> None:
    from placement_numa.errors import PlacementError
    from placement_numa.numa.translate import translate

    fleet, index = fleet_index
    flavor, options = flavor_options
    try:
        numa = translate(flavor)
    except PlacementError:
        return
    if numa.topology is None:
        return
    distinct = numa.anchors if numa.filter_anchors else ()
    ranker = NumaRanker(
        index, numa.cpu_classes, prefer_closest=options.prefer_closest, distinct=distinct
    )
    _bounds_hold(fleet, numa.search_query, ranker)


@PROPERTY
@given(
    numa_fleets(max_hosts=4),
    flavors(),
    st.lists(st.tuples(st.sampled_from((256, 512, 1024, 1536, 2048, 3072)), st.integers(0, 2))),
)
def test_bounds_kept_across_sizes_hold(
    fleet_index: tuple[FleetSnapshot, CellIndex],
    flavor_options: tuple[Flavor, NumaOptions],
    sizes: list[tuple[int, int]],
) -> None:
    """A flavor asked in several sizes on one snapshot: the bounds a size reads from those
    kept for another (``HostView.bound_memo``, by ``amount_profile``) are lower bounds of its
    own candidates' keys, and every answer equals the exhaustive ranking."""
    from dataclasses import replace

    from placement_numa.errors import PlacementError
    from placement_numa.numa.translate import translate

    fleet, index = fleet_index
    base, options = flavor_options
    engine = SnapshotEngine(StaticFleetSource(fleet))
    for memory, more_cpus in [(base.memory_mb, 0), *sizes]:
        flavor = replace(base, memory_mb=memory, vcpus=base.vcpus + more_cpus)
        try:
            numa = translate(flavor)
        except PlacementError:
            continue
        if numa.topology is not None:
            distinct = numa.anchors if numa.filter_anchors else ()
            ranker = NumaRanker(
                index, numa.cpu_classes, prefer_closest=options.prefer_closest, distinct=distinct
            )
            _bounds_hold(fleet, numa.search_query, ranker)
        kwargs: dict[str, Any] = dict(
            database=None, engine=engine, flavor=flavor, image=None, options=options, index=index
        )
        assert answer(flavor_candidates(**kwargs)) == answer(
            flavor_candidates(**kwargs, exhaustive=True)
        )


def test_bounds_are_kept_across_sizes() -> None:
    """The second size of a flavor computes no bound its first size found (``bound_memo``):
    the relaxed search runs only for the first."""
    import placement_numa.numa.engine_rank as engine_rank

    fleet, index = _uniform_fleet(hosts=12)
    engine = SnapshotEngine(StaticFleetSource(fleet))
    specs = {"hw:numa_nodes": "2", "hw:cpu_policy": "dedicated"}
    calls: list[int] = []
    original = engine_rank.relaxed_best_key

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    engine_rank.relaxed_best_key = counting  # type: ignore[assignment]
    try:
        for memory in (2048, 2304, 2560):
            flavor_candidates(
                database=None,
                engine=engine,
                flavor=Flavor(4, memory, extra_specs=specs),
                image=None,
                options=NumaOptions(limit=3),
                index=index,
            )
            if memory == 2048:
                first = len(calls)
    finally:
        engine_rank.relaxed_best_key = original  # type: ignore[assignment]
    assert first >= 1
    assert len(calls) == first


def test_bounded_search_visits_few_roots() -> None:
    """With ``limit``, only the roots whose best keys come first are searched."""
    fleet, index = _uniform_fleet(hosts=40)
    engine = SnapshotEngine(StaticFleetSource(fleet))
    flavor = Flavor(4, 2048, extra_specs={"hw:numa_nodes": "2", "hw:cpu_policy": "dedicated"})
    searched: list[int] = []
    original = RootSearch.candidates

    def counting(self: RootSearch, root: int, **kwargs: Any) -> Any:
        searched.append(root)
        return original(self, root, **kwargs)

    RootSearch.candidates = counting  # type: ignore[method-assign]
    try:
        found = flavor_candidates(
            database=None,
            engine=engine,
            flavor=flavor,
            image=None,
            options=NumaOptions(limit=3),
            index=index,
        )
    finally:
        RootSearch.candidates = original  # type: ignore[method-assign]
    assert len(found) == 3
    assert len(searched) <= 3
    reference = flavor_candidates(
        database=None,
        engine=engine,
        flavor=flavor,
        image=None,
        options=NumaOptions(limit=3),
        index=index,
        exhaustive=True,
    )
    assert answer(found) == answer(reference)


def _uniform_fleet(hosts: int) -> tuple[FleetSnapshot, CellIndex]:
    rows: list[tuple[int, str, int | None, int]] = []
    inventories: list[tuple[int, str, int, int, int, int, int, float]] = []
    traits: list[tuple[int, str]] = []
    cell_ids: dict[str, int] = {}
    pid = 0
    for _ in range(hosts):
        pid += 1
        root = pid
        rows.append((root, uuid_of(root), None, root))
        for c in range(2):
            pid += 1
            rows.append((pid, uuid_of(pid), root, root))
            cell_ids[uuid_of(pid)] = c
            traits.append((pid, "HW_NUMA_ROOT"))
            inventories.append((pid, "PCPU", 8, 0, 1, 8, 1, 1.0))
            pid += 1
            rows.append((pid, uuid_of(pid), pid - 1, root))
            inventories.append((pid, "MEMORY_MB", 4096, 0, 1, 4096, 1, 1.0))
            traits.extend((pid, t) for t in provider_traits(4))
    return FleetSnapshot.build(1, rows, inventories, [], traits), CellIndex(cell_ids, {}, {})
