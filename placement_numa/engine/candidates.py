"""What the candidate engine returns: candidates, per-group choices, the result object.

Cheap to build: the search makes one per candidate and most are only rendered.
A ``Candidate`` is one allocation request: for each request group of the query, the providers that
satisfy it and the amounts taken from each; plus the consolidated allocations (amounts of groups
landing on the same provider and class summed, as Placement does with ``group_policy=none``).
Providers are snapshot indices (``FleetSnapshot.providers[i]``); the API turns them into uuids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from placement_numa.engine.fleet import FleetSnapshot

__all__ = ["GroupChoice", "Candidate", "CandidateResult", "Layout"]

# (provider index, resource class, amount)
Allocation = tuple[int, str, int]


class GroupChoice(NamedTuple):
    """How one request group is satisfied in a candidate.

    ``suffix``: the group's suffix (``None`` = unsuffixed); ``resources``: ``(provider index,
    resource class, amount)`` per requested class (empty for a resourceless group);
    ``providers``: sorted indices of the providers satisfying the group (the group's
    ``mappings`` entry; one provider for a suffixed group, resourceless ones included).
    """

    suffix: str | None
    resources: tuple[Allocation, ...]
    providers: tuple[int, ...]


@dataclass(frozen=True)
class Layout:
    """How a query's search slots map to its request groups (shared by all its candidates).

    ``suffixes[g]``: suffix of group ``g``; ``slots_of_group[g]``: the slots filling it (one for
    a suffixed group, one per resource class for the unsuffixed group); ``slot_resources[k]``:
    ``(resource class, amount)`` pairs of slot ``k``.
    """

    suffixes: tuple[str | None, ...]
    slots_of_group: tuple[tuple[int, ...], ...]
    slot_resources: tuple[tuple[tuple[str, int], ...], ...]


class Candidate:
    """One allocation request anchored at the tree whose root is ``anchor`` (a provider index).

    * ``chosen[k]``: the provider filling search slot ``k`` (see ``layout``);
    * ``allocations``: ``(provider, resource class, amount)`` sorted by provider and class, the
      amounts of groups sharing a provider summed;
    * ``groups``: one ``GroupChoice`` per request group, in ``CandidateQuery.groups`` order
      (built on first access: the search makes many candidates and most are only rendered);
    * ``mappings()``: ``(suffix, sorted provider indices)`` per group, cheaply.

    Immutable by contract (read-only attributes).
    """

    __slots__ = ("anchor", "chosen", "allocations", "layout", "_groups")

    def __init__(
        self,
        anchor: int,
        chosen: tuple[int, ...],
        allocations: tuple[Allocation, ...],
        layout: Layout,
    ) -> None:
        self.anchor = anchor
        self.chosen = chosen
        self.allocations = allocations
        self.layout = layout
        self._groups: tuple[GroupChoice, ...] | None = None

    @property
    def groups(self) -> tuple[GroupChoice, ...]:
        """One ``GroupChoice`` per request group, in ``query.groups`` order (built once, lazily)."""
        groups = self._groups
        if groups is None:
            layout, chosen = self.layout, self.chosen
            built = []
            for suffix, ks in zip(layout.suffixes, layout.slots_of_group, strict=True):
                resources = sorted(
                    (chosen[k], rc, a) for k in ks for rc, a in layout.slot_resources[k]
                )
                built.append(
                    GroupChoice(suffix, tuple(resources), tuple(sorted({chosen[k] for k in ks})))
                )
            groups = self._groups = tuple(built)
        return groups

    def mappings(self) -> list[tuple[str | None, tuple[int, ...]]]:
        """``(suffix, sorted provider indices)`` per request group."""
        chosen = self.chosen
        out: list[tuple[str | None, tuple[int, ...]]] = []
        for suffix, ks in zip(self.layout.suffixes, self.layout.slots_of_group, strict=True):
            if len(ks) == 1:
                out.append((suffix, (chosen[ks[0]],)))
            else:
                out.append((suffix, tuple(sorted({chosen[k] for k in ks}))))
        return out

    def key(self) -> tuple[object, ...]:
        """Identity as in Placement: the consolidated allocations plus the mappings."""
        return (self.allocations, tuple(self.mappings()))

    def providers(self) -> set[int]:
        """Every provider in the candidate: those allocated from and resourceless-group ones."""
        used = {a[0] for a in self.allocations}
        used.update(self.chosen)
        return used

    def __repr__(self) -> str:
        return (
            f"Candidate(anchor={self.anchor}, groups={self.groups!r},"
            f" allocations={self.allocations!r})"
        )


@dataclass(slots=True)
class CandidateResult:
    """Candidates in the engine's order (first ``limit`` only) and the snapshot they refer to."""

    candidates: list[Candidate]
    fleet: FleetSnapshot

    def summary_providers(self) -> list[int]:
        """Providers for ``provider_summaries``: every provider of each tree holding a provider
        that gives resources to some candidate (Placement's rule), in index order."""
        roots = {self.fleet.providers[a[0]].root for c in self.candidates for a in c.allocations}
        return sorted(i for root in roots for i in self.fleet.tree[root])
