"""What the candidate engine returns: candidates, per-group choices, the result object.

Cheap to build: the search makes one per candidate and most are only rendered.
A ``Candidate`` is one allocation request: for each request group of the query, the providers that
satisfy it and the amounts taken from each; plus the consolidated allocations (amounts of groups
landing on the same provider and class summed, as Placement does with ``group_policy=none``).
Providers are snapshot indices (``FleetSnapshot.providers[i]``); the API turns them into uuids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from placement_numa.engine.fleet import FleetSnapshot

__all__ = [
    "GroupChoice",
    "Candidate",
    "CandidateResult",
    "Layout",
    "ReplayedRun",
    "ResultPart",
    "replayed_candidates",
    "SearchStats",
    "TemplateEntry",
]

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


class TemplateEntry:
    """One candidate of a tree's answer in positions: ``chosen[k]`` and the first item of each
    ``allocations`` triple index a list of providers (the tree's members, or the relevant
    providers of a root); kept once and replayed for every look-alike tree."""

    __slots__ = ("chosen", "allocations")

    def __init__(
        self, chosen: tuple[int, ...], allocations: tuple[tuple[int, str, int], ...]
    ) -> None:
        self.chosen = chosen
        self.allocations = allocations


class Candidate:
    """One allocation request anchored at the tree whose root is ``anchor`` (a provider index).

    * ``chosen[k]``: the provider filling search slot ``k`` (see ``layout``);
    * ``allocations``: ``(provider, resource class, amount)`` sorted by provider and class, the
      amounts of groups sharing a provider summed;
    * ``groups``: one ``GroupChoice`` per request group, in ``CandidateQuery.groups`` order
      (built on first access: the search makes many candidates and most are only rendered);
    * ``mappings()``: ``(suffix, sorted provider indices)`` per group, cheaply.

    A candidate replayed from another tree's answer (look-alike trees, see
    ``replay.RootSearch``) is built as ``Candidate.replayed(anchor, members, entry, layout)``:
    ``entry`` (a ``TemplateEntry``) holds positions into ``members`` and ``chosen`` and
    ``allocations`` are only materialised when read; renderers may use ``members`` and
    ``entry`` directly, so a replayed candidate costs no per-slot
    work until something looks at it.

    Immutable by contract (read-only attributes).
    """

    __slots__ = ("anchor", "_chosen", "_allocations", "layout", "_groups", "members", "entry")

    def __init__(
        self,
        anchor: int,
        chosen: tuple[int, ...] | None,
        allocations: tuple[Allocation, ...] | None,
        layout: Layout,
        members: Sequence[int] | None = None,
        entry: TemplateEntry | None = None,
    ) -> None:
        self.anchor = anchor
        self._chosen = chosen
        self._allocations = allocations
        self.layout = layout
        self._groups: tuple[GroupChoice, ...] | None = None
        self.members = members
        self.entry = entry

    @classmethod
    def replayed(
        cls, anchor: int, members: Sequence[int], entry: TemplateEntry, layout: Layout
    ) -> Candidate:
        """A candidate given as ``entry``'s positions into ``members`` (provider indices)."""
        return cls(anchor, None, None, layout, members, entry)

    @property
    def chosen(self) -> tuple[int, ...]:
        """``chosen[k]``: the provider filling search slot ``k``."""
        if self._chosen is None:
            members, entry = self._replay()
            self._chosen = tuple([members[k] for k in entry.chosen])
        return self._chosen

    @property
    def allocations(self) -> tuple[Allocation, ...]:
        """``(provider, resource class, amount)``, sorted, amounts on one provider summed."""
        if self._allocations is None:
            members, entry = self._replay()
            self._allocations = tuple([(members[k], rc, a) for k, rc, a in entry.allocations])
        return self._allocations

    def _replay(self) -> tuple[Sequence[int], TemplateEntry]:
        """``(members, entry)`` of a replayed candidate (see ``replayed``)."""
        assert self.members is not None and self.entry is not None
        return self.members, self.entry

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


@dataclass(frozen=True, slots=True)
class SearchStats:
    """What one search did (for metrics; latency is measured by the caller).

    * ``returned``: candidates in the result (after ``limit``);
    * ``generated``: candidates the search produced before ``limit`` (one per ordering class
      when ranking, plus the reorderings it handed out), what ``max_allocation_candidates``
      caps;
    * ``roots_visited``: anchor roots whose trees were searched;
    * ``cap_hit``: the answer was truncated by ``max_allocation_candidates`` (or the engine's
      placement budget), as Placement truncates.
    """

    returned: int = 0
    generated: int = 0
    roots_visited: int = 0
    cap_hit: bool = False


class ReplayedRun:
    """The candidates of one tree replayed from a look-alike tree's known answer, in order:
    one per ``entries`` item (a ``TemplateEntry`` in positions into ``members``, the tree of
    ``anchor``, with ``layout``). The depth-first search hands a replayed root out as one run,
    so that no ``Candidate`` is made per entry until one is read (``candidates()``, built once)
    and a renderer writes the run at once (``api/schemas/candidate_pieces.py``).

    Immutable by contract; ``len(run)`` is its number of candidates."""

    __slots__ = ("anchor", "members", "layout", "entries", "_candidates")

    def __init__(
        self,
        anchor: int,
        members: Sequence[int],
        layout: Layout,
        entries: Sequence[TemplateEntry],
        candidates: list[Candidate] | None = None,
    ) -> None:
        """``candidates``: the run's candidates when they were made already (one per entry, in
        order), kept as ``candidates()``."""
        self.anchor = anchor
        self.members = members
        self.layout = layout
        self.entries = entries
        self._candidates = candidates

    def __len__(self) -> int:
        return len(self.entries)

    def head(self, count: int) -> ReplayedRun:
        """The run of the first ``count`` candidates (``self`` when that is all of them)."""
        if count >= len(self.entries):
            return self
        return ReplayedRun(self.anchor, self.members, self.layout, self.entries[:count])

    def candidates(self) -> list[Candidate]:
        """``replayed_candidates`` of the run (made on the first call, then kept: read, never
        change the list)."""
        found = self._candidates
        if found is None:
            found = self._candidates = replayed_candidates(
                self.anchor, self.members, self.layout, self.entries
            )
        return found


def replayed_candidates(
    anchor: int, members: Sequence[int], layout: Layout, entries: Iterable[TemplateEntry]
) -> list[Candidate]:
    """One ``Candidate.replayed(anchor, members, entry, layout)`` per entry of ``entries``, in
    order (made in one comprehension: a replayed root makes one per entry at once; most
    roots have one entry, made without the comprehension)."""
    if isinstance(entries, (list, tuple)) and len(entries) == 1:
        return [Candidate(anchor, None, None, layout, members, entries[0])]
    return [Candidate(anchor, None, None, layout, members, entry) for entry in entries]


# what a search result holds, in order: candidates, and runs of replayed ones
ResultPart = Candidate | ReplayedRun


class CandidateResult:
    """Candidates in the engine's order (first ``limit`` only), the snapshot they refer to, and
    ``stats`` (``SearchStats``) about the search that found them.

    Built from a list of candidates, or (``parts``) from candidates and ``ReplayedRun``s in
    order, whose ``Candidate`` objects are only made when ``candidates`` is first read: the
    GET renderer and ``summary_roots`` read ``parts`` and never make them."""

    __slots__ = ("parts", "fleet", "stats", "_candidates")

    def __init__(
        self,
        candidates: list[Candidate] | None,
        fleet: FleetSnapshot,
        stats: SearchStats = SearchStats(),
        *,
        parts: Sequence[ResultPart] | None = None,
    ) -> None:
        if parts is None:
            parts = candidates if candidates is not None else []
        self.parts: Sequence[ResultPart] = parts
        self.fleet = fleet
        self.stats = stats
        self._candidates = candidates

    @property
    def candidates(self) -> list[Candidate]:
        """Every candidate, in order (runs' candidates made on the first read, then kept)."""
        found = self._candidates
        if found is None:
            found = []
            for part in self.parts:
                if isinstance(part, ReplayedRun):
                    found.extend(part.candidates())
                else:
                    found.append(part)
            self._candidates = found
        return found

    def summary_providers(self) -> list[int]:
        """Providers for ``provider_summaries``: every provider of each tree holding a provider
        that gives resources to some candidate (Placement's rule), in index order."""
        tree = self.fleet.tree
        return sorted(i for root in self.summary_roots() for i in tree[root])

    def summary_roots(self) -> list[int]:
        """Roots of the trees ``summary_providers`` covers, in index order."""
        fleet = self.fleet
        sharing = fleet.roots_with_sharing
        if not sharing:  # every candidate (and run) is in its anchor's tree
            return sorted({part.anchor for part in self.parts})
        roots: set[int] = set()
        for c in self.candidates:
            if c.anchor in sharing:  # a sharing provider may sit in another tree
                roots.update(fleet.providers[a[0]].root for a in c.allocations)
            else:  # everything is in the anchor's tree
                roots.add(c.anchor)
        return sorted(roots)
