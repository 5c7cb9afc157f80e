"""Plain rows to ``ProviderInfo`` objects: what a snapshot build and a patch both start from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from placement_numa.engine.providers import (
    InventoryTuple,
    InventoryUsage,
    ProviderInfo,
    ProviderTuple,
)

__all__ = ["build_infos", "chain_of", "set_depths"]


def chain_of(providers: list[ProviderInfo], index: int) -> tuple[int, ...]:
    """``index`` and its ancestors up to the root, nearest first."""
    chain = [index]
    cursor = providers[index].parent
    while cursor >= 0:
        chain.append(cursor)
        cursor = providers[cursor].parent
    return tuple(chain)


def set_depths(providers: list[ProviderInfo], infos: Iterable[ProviderInfo]) -> None:
    """Set ``depth`` (0 for a root) of each of ``infos``, walking parents in ``providers``."""
    for info in infos:
        depth, cursor = 0, info.parent
        while cursor >= 0:
            depth += 1
            cursor = providers[cursor].parent
        info.depth = depth


def build_infos(
    rows: list[ProviderTuple],
    index_of: Mapping[int, int],
    inventories: Iterable[InventoryTuple],
    usages: Iterable[tuple[int, str, int]],
    traits: Iterable[tuple[int, str]],
    aggregates: Iterable[tuple[int, str]],
) -> list[ProviderInfo]:
    """``ProviderInfo`` per row (id order), indices from ``index_of`` (parents and roots are
    among the rows); depths are left at 0 (``set_depths``)."""
    infos = [
        ProviderInfo(
            index=index_of[row[0]],
            id=row[0],
            uuid=row[1],
            parent=index_of[row[2]] if row[2] is not None else -1,
            root=index_of[row[3]] if row[3] is not None else index_of[row[0]],
        )
        for row in rows
    ]
    by_id = {info.id: info for info in infos}
    used: dict[tuple[int, str], int] = {}
    for pid, rc, amount in usages:
        used[(pid, rc)] = used.get((pid, rc), 0) + int(amount)
    # Equal inventories (and trait and aggregate sets) are shared: they are immutable, and a
    # fleet of look-alike hosts holds a few distinct ones per class (memory at 700,000
    # providers), and equality checks of shared objects are identity checks.
    shared_inventories: dict[tuple[object, ...], InventoryUsage] = {}
    for pid, rc, total, reserved, min_unit, max_unit, step, ratio in inventories:
        key = (
            rc,
            int(total),
            int(reserved),
            int(min_unit),
            int(max_unit),
            int(step),
            float(ratio),
            used.get((pid, rc), 0),
        )
        inventory = shared_inventories.get(key)
        if inventory is None:
            inventory = shared_inventories[key] = InventoryUsage(*key[1:])
        by_id[pid].inventories[rc] = inventory
    shared_sets: dict[frozenset[str], frozenset[str]] = {}
    for pid, names in _sets_by_provider(traits, shared_sets).items():
        by_id[pid].traits = names
    for pid, names in _sets_by_provider(aggregates, shared_sets).items():
        by_id[pid].aggregates = names
    return infos


def _sets_by_provider(
    pairs: Iterable[tuple[int, str]], shared: dict[frozenset[str], frozenset[str]]
) -> dict[int, frozenset[str]]:
    """``(provider id, name)`` pairs as one frozen set per provider id, equal sets shared
    (through ``shared``)."""
    found: dict[int, set[str]] = {}
    for pid, name in pairs:
        found.setdefault(pid, set()).add(name)
    return {
        pid: shared.setdefault(frozenset(names), frozenset(names)) for pid, names in found.items()
    }
