"""Answers shared by queries that differ only in their amounts: a flavor catalogue's sizes.

A root's answer to a query is kept per tree profile (shape and room codes, ``answers.memo_of``)
and per query. A scheduler asks one flavor shape in many sizes (``VCPU:4`` and ``VCPU:8`` per
NUMA cell), so most of its queries are asked for the first time, and each searched every
profile again. Two queries alike in everything but their amounts have the same answer per
profile, but for the amounts written in its allocations, when:

* their plans are alike (``engine/plan.py``: the slots in search order, symmetric slots, the
  interchangeable units and their ordering checks);
* for each resource class, the sums of the amounts its slots ask order alike: every subset of
  those slots takes the same place among the distinct positive sums. A provider's room code
  (``answers.RoomCodes``) counts the sums its room admits, so one code admits the same subsets
  of slots for both queries, and the summed capacity checks (``fleet.fits_summed``) decide alike;
* each amount passes the same ``min_unit`` and ``step_size`` checks (``InventoryUsage.fits``)
  for every ``(class, min_unit, step_size)`` of the fleet's provider shapes (what a tree shape
  holds besides room; ``FleetSnapshot._shape_profile``).

``pattern_key`` is that pattern (``None``: not shared); ``pattern_answers`` holds the answers
per profile that the queries of one pattern searched; ``translated`` rewrites one with this
plan's amounts (each slot's amounts summed on the member position it chose, in the order of
allocations the search gave). The search replays the result as its own
(``replay.RootSearch``), so a first-time size of a known flavor shape searches only the trees
whose profile no size searched yet (issue 30: in a scheduler's loop, the two-cell search at
``limit=1000`` went from about 4.1 to 2.1 ms).
"""

from __future__ import annotations

import threading
from typing import Any

from placement_numa.engine.answers import query_key
from placement_numa.engine.candidates import TemplateEntry
from placement_numa.engine.plan import QueryPlan

__all__ = ["MAX_PATTERN_SLOTS", "pattern_answers", "pattern_key", "translated"]

# at most this many slots asking one class: their 2**n - 1 subset sums are ranked per query
MAX_PATTERN_SLOTS = 6
# patterns a snapshot lineage keeps answers for (oldest dropped first)
MAX_PATTERNS = 64
# taken to add a pattern (look-ups take no lock)
_LOCK = threading.Lock()


def pattern_key(plan: QueryPlan) -> tuple[object, ...] | None:
    """What two queries must share for one's answers per profile to serve the other up to
    amounts (see the module docstring), hashable; ``None`` when some class is asked by more than
    ``MAX_PATTERN_SLOTS`` slots. O(slots x 2**slots per class + the fleet's unit kinds)."""
    slots = tuple(
        (s.group, tuple(rc for rc, _ in s.resources), s.suffixed, s.symmetric_with_previous)
        for s in plan.slots
    )
    units = (
        tuple(tuple(run) for run in plan.unit_runs),
        tuple(sorted(plan.lex_first.items())),
        tuple(sorted(plan.lex_last.items())),
    )
    per_class: dict[str, list[int]] = {}
    for slot in plan.slots:
        for rc, amount in slot.resources:
            per_class.setdefault(rc, []).append(amount)
    orders = []
    for rc in sorted(per_class):
        amounts = per_class[rc]
        if len(amounts) > MAX_PATTERN_SLOTS:
            return None
        sums = [
            sum(a for i, a in enumerate(amounts) if mask >> i & 1)
            for mask in range(1, 1 << len(amounts))
        ]
        place = {s: n for n, s in enumerate(sorted(set(sums)))}
        orders.append((rc, tuple(place[s] for s in sums)))
    kinds = plan.fleet.unit_kinds()
    passes = tuple(
        tuple(
            tuple(
                low <= amount and amount % step == 0
                for kind_rc, low, step in kinds
                if kind_rc == rc
            )
            for rc, amount in slot.resources
        )
        for slot in plan.slots
    )
    return (query_key(plan, amounts=False), slots, units, tuple(orders), kinds, passes)


def pattern_answers(plan: QueryPlan, pattern: tuple[object, ...]) -> dict[object, Any]:
    """The answers per profile (``TemplateEntry`` lists in member positions, with the amounts
    of whichever query searched them) that every query of ``pattern`` has searched in this
    snapshot lineage: read through ``translated``, written by each search of a new profile.
    Kept in ``fleet.derived`` (shared, like ``answer_memo``, by the snapshots patched from one
    full build), at most ``MAX_PATTERNS`` patterns (oldest dropped first)."""
    kept: dict[object, dict[object, Any]] = plan.fleet.derived.setdefault("amount-patterns", {})
    found = kept.get(pattern)
    if found is None:
        with _LOCK:
            found = kept.get(pattern)
            if found is None:
                if len(kept) >= MAX_PATTERNS:
                    kept.pop(next(iter(kept)), None)
                found = kept[pattern] = {}
    return found


def translated(entries: list[TemplateEntry], plan: QueryPlan) -> list[TemplateEntry]:
    """Another size's answer for one profile (``entries``: ``TemplateEntry`` list in member
    positions, from ``pattern_answers``) with ``plan``'s amounts: new entries, same length and
    order, each ``chosen`` kept and each allocation ``(position, class, amount)`` in its place,
    its amount (the class's own units: CPUs, MiB, ...) the sum of what ``plan``'s slots choosing
    that position ask of the class. ``entries`` must come from a query of ``plan``'s pattern
    (``pattern_key``): its slots are ``plan``'s, one for one. Raises nothing."""
    slots = plan.slots
    found = []
    for entry in entries:
        amounts: dict[tuple[int, str], int] = {}
        for pos, slot in zip(entry.chosen, slots, strict=True):
            for rc, amount in slot.resources:
                amounts[(pos, rc)] = amounts.get((pos, rc), 0) + amount
        allocations = tuple((pos, rc, amounts[(pos, rc)]) for pos, rc, _ in entry.allocations)
        found.append(TemplateEntry(entry.chosen, allocations))
    return found
