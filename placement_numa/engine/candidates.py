"""What the candidate engine returns: candidates, per-group choices, the result object.

Both are immutable named tuples (cheap to build: the search makes one per candidate).
A ``Candidate`` is one allocation request: for each request group of the query, the providers that
satisfy it and the amounts taken from each; plus the consolidated allocations (amounts of groups
landing on the same provider and class summed, as Placement does with ``group_policy=none``).
Providers are snapshot indices (``FleetSnapshot.providers[i]``); the API turns them into uuids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from placement_numa.engine.fleet import FleetSnapshot

__all__ = ["GroupChoice", "Candidate", "CandidateResult"]

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


class Candidate(NamedTuple):
    """One allocation request anchored at the tree whose root is ``anchor`` (a provider index).

    ``groups`` follows ``CandidateQuery.groups``; ``allocations`` is sorted by (provider, class)
    and sums the amounts of groups sharing a provider.
    """

    anchor: int
    groups: tuple[GroupChoice, ...]
    allocations: tuple[Allocation, ...]

    def key(self) -> tuple[object, ...]:
        """Identity as in Placement: the consolidated allocations plus the mappings."""
        return (self.allocations, tuple((g.suffix, g.providers) for g in self.groups))

    def providers(self) -> set[int]:
        """Every provider in the candidate: those allocated from and resourceless-group ones."""
        used = {a[0] for a in self.allocations}
        for group in self.groups:
            used.update(group.providers)
        return used


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
