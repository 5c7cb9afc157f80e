"""Re-homing consumers onto NUMA cells: a small bin-packing search (pure).

Bins are host NUMA cells; each has a free capacity per *slot*: ``"PCPU"``, ``"VCPU"`` and
``"MEMORY_MB:<page KiB>"``. An item is one guest cell of a consumer (``{slot: amount}``); the guest
cells of one consumer land on distinct host cells (as Nova's guest NUMA cells do).

Strategy, in order:

1. greedy, consumers largest first (first-fit decreasing): ``pack`` takes the lowest-numbered cell
   that fits (fills cell 0 first, keeping whole cells free), ``spread`` the cell with the largest
   free fraction left (balances load, in the spirit of KEP-2902's distribution across NUMA nodes);
2. if the greedy pass fails, a depth-first search over the same order with backtracking, bounded by
   ``budget`` visited nodes, since first-fit decreasing can miss a packing that exists;
3. if both fail, ``ConsumerUnplaceable`` names the first consumer the greedy pass could not place
   and what it lacked on the cell that came closest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from placement_numa.reshape.errors import ConsumerUnplaceable

__all__ = ["Policy", "Bin", "Item", "Limits", "fit", "memory_slot"]

Policy = Literal["pack", "spread"]


def memory_slot(page_size_kb: int) -> str:
    """The slot name of ``MEMORY_MB`` in pages of ``page_size_kb`` KiB."""
    return f"MEMORY_MB:{page_size_kb}"


@dataclass(frozen=True)
class Limits:
    """Per-allocation rules of one slot on one cell: Placement's ``min_unit``, ``max_unit``,
    ``step_size``."""

    min_unit: int = 1
    max_unit: int = 2**62
    step_size: int = 1

    def problem(self, amount: int) -> str | None:
        """Why ``amount`` breaks the limits (a phrase such as ``below min_unit 2``), or ``None``."""
        if amount < self.min_unit:
            return f"below min_unit {self.min_unit}"
        if amount > self.max_unit:
            return f"above max_unit {self.max_unit}"
        if amount % self.step_size:
            return f"not a multiple of step_size {self.step_size}"
        return None


@dataclass(frozen=True)
class Bin:
    """A host NUMA cell: ``capacity`` per slot (``(total - reserved) * ratio``), ``limits``."""

    cell_id: int
    capacity: Mapping[str, int]
    limits: Mapping[str, Limits]


@dataclass(frozen=True)
class Item:
    """The guest cells of one consumer, each ``{slot: amount}``; placed on distinct bins."""

    consumer: str
    pieces: tuple[Mapping[str, int], ...]

    @property
    def size(self) -> tuple[int, ...]:
        """The sort key of the item, larger first: ``(guest cells, PCPU, VCPU, MEMORY_MB in MiB)``
        summed over its pieces."""
        totals: dict[str, int] = {}
        for piece in self.pieces:
            for slot, amount in piece.items():
                totals[slot] = totals.get(slot, 0) + amount
        return (
            len(self.pieces),
            totals.get("PCPU", 0),
            totals.get("VCPU", 0),
            sum(v for k, v in totals.items() if k.startswith("MEMORY_MB")),
        )


def _fits(bin_: Bin, free: Mapping[str, int], piece: Mapping[str, int]) -> bool:
    for slot, amount in piece.items():
        if amount == 0:
            continue
        if slot not in bin_.capacity or free[slot] < amount:
            return False
        limits = bin_.limits.get(slot)
        if limits is not None and limits.problem(amount) is not None:
            return False
    return True


def _order(bins: Sequence[Bin], free: Sequence[dict[str, int]], policy: Policy) -> list[int]:
    indexes = list(range(len(bins)))
    if policy == "pack":
        return indexes

    def free_fraction(i: int) -> float:
        caps = bins[i].capacity
        fractions = [free[i][s] / caps[s] for s in caps if caps[s] > 0]
        return sum(fractions) / len(fractions) if fractions else 0.0

    return sorted(indexes, key=lambda i: (-free_fraction(i), bins[i].cell_id))


def _place_greedy(
    item: Item, bins: Sequence[Bin], free: list[dict[str, int]], policy: Policy
) -> list[int] | None:
    chosen: list[int] = []
    for piece in item.pieces:
        for i in _order(bins, free, policy):
            if i not in chosen and _fits(bins[i], free[i], piece):
                chosen.append(i)
                for slot, amount in piece.items():
                    if amount:
                        free[i][slot] -= amount
                break
        else:
            for i, piece_done in zip(chosen, item.pieces, strict=False):
                for slot, amount in piece_done.items():
                    if amount:
                        free[i][slot] += amount
            return None
    return chosen


def _lacking(
    item: Item, bins: Sequence[Bin], free: Sequence[Mapping[str, int]]
) -> tuple[dict[str, int], str]:
    """What the item's largest guest cell misses on the cell that comes closest."""
    if len(item.pieces) > len(bins):
        return {"cells": len(item.pieces) - len(bins)}, (
            f"needs {len(item.pieces)} distinct NUMA cells, the host has {len(bins)}"
        )
    piece = max(item.pieces, key=lambda p: sum(p.values()))
    best: tuple[int, dict[str, int], str] | None = None
    for i, bin_ in enumerate(bins):
        missing: dict[str, int] = {}
        notes: list[str] = []
        for slot, amount in piece.items():
            if not amount:
                continue
            have = free[i].get(slot, 0) if slot in bin_.capacity else 0
            if have < amount:
                missing[slot] = amount - have
            limits = bin_.limits.get(slot)
            problem = limits.problem(amount) if limits and slot in bin_.capacity else None
            if problem:
                notes.append(f"{slot} {amount} {problem}")
        score = sum(missing.values()) + len(notes)
        detail = ", ".join([f"{v} more {k}" for k, v in sorted(missing.items())] + notes)
        if best is None or score < best[0]:
            best = (score, missing, f"on NUMA cell {bin_.cell_id} it lacks {detail}")
    assert best is not None
    return best[1], best[2]


def fit(
    items: Sequence[Item],
    bins: Sequence[Bin],
    *,
    policy: Policy = "pack",
    budget: int = 200_000,
) -> dict[str, list[tuple[int, Mapping[str, int]]]]:
    """Place every item; returns ``{consumer: [(cell_id, piece), ...]}``.

    Raises ``ConsumerUnplaceable`` (naming the consumer and its shortfall) when neither the greedy
    pass nor the bounded backtracking search finds a placement for all items.
    """
    order = sorted(items, key=lambda it: (tuple(-v for v in it.size), it.consumer))
    free = [dict(b.capacity) for b in bins]
    result: dict[str, list[int]] = {}
    first_failure: tuple[Item, list[dict[str, int]]] | None = None
    for item in order:
        chosen = _place_greedy(item, bins, free, policy)
        if chosen is None:
            first_failure = (item, [dict(f) for f in free])
            break
        result[item.consumer] = chosen
    if first_failure is not None:
        searched = _search(order, bins, policy, budget)
        if searched is None:
            item, snapshot = first_failure
            lacking, detail = _lacking(item, bins, snapshot)
            raise ConsumerUnplaceable(
                f"consumer {item.consumer} cannot be placed: {detail}",
                consumer=item.consumer,
                lacking=lacking,
            )
        result = searched
    by_consumer = {it.consumer: it for it in items}
    return {
        consumer: [
            (bins[i].cell_id, piece)
            for i, piece in zip(cells, by_consumer[consumer].pieces, strict=False)
        ]
        for consumer, cells in result.items()
    }


def _search(
    order: Sequence[Item], bins: Sequence[Bin], policy: Policy, budget: int
) -> dict[str, list[int]] | None:
    """Depth-first search over (item, guest cell) with backtracking, at most ``budget`` steps."""
    free = [dict(b.capacity) for b in bins]
    steps = [(k, p) for k, item in enumerate(order) for p in range(len(item.pieces))]
    chosen: dict[int, list[int]] = {k: [] for k in range(len(order))}
    visits = 0

    def descend(position: int) -> bool:
        nonlocal visits
        if position == len(steps):
            return True
        visits += 1
        if visits > budget:
            return False
        k, p = steps[position]
        piece = order[k].pieces[p]
        for i in _order(bins, free, policy):
            if i in chosen[k] or not _fits(bins[i], free[i], piece):
                continue
            chosen[k].append(i)
            for slot, amount in piece.items():
                if amount:
                    free[i][slot] -= amount
            if descend(position + 1):
                return True
            chosen[k].pop()
            for slot, amount in piece.items():
                if amount:
                    free[i][slot] += amount
        return False

    if not descend(0):
        return None
    return {order[k].consumer: cells for k, cells in chosen.items()}
