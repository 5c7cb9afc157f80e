"""Parsed query-string filters: trait and aggregate requirements, provider list filters.

Pure frozen value types, built by ``placement_numa.api.query`` and read by the services and the
candidate engine. Vocabulary of OpenStack Placement:

* ``required=A,!B`` (1.18; ``!`` from 1.22) and ``required=in:C,D`` (1.39) become
  ``RequiredTraits(all_of={A}, any_of=({C, D},), forbidden={B})``;
* ``member_of=in:a,b`` (1.3), repeated ``member_of`` (AND, 1.24), ``member_of=!a`` /
  ``!in:a,b`` (1.32) become ``MemberOf(any_of=({a, b}, ...), forbidden={...})``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RequiredTraits", "MemberOf", "ProviderFilters"]


@dataclass(frozen=True, slots=True)
class RequiredTraits:
    """Trait requirements of one request group or provider list.

    * ``all_of``: every trait must be present on the provider;
    * ``any_of``: for each set, at least one of its traits must be present;
    * ``forbidden``: none of these traits may be present.
    """

    all_of: frozenset[str] = frozenset()
    any_of: tuple[frozenset[str], ...] = ()
    forbidden: frozenset[str] = frozenset()

    @property
    def names(self) -> frozenset[str]:
        """Every trait name mentioned (to check that they exist)."""
        names = set(self.all_of) | set(self.forbidden)
        for group in self.any_of:
            names |= group
        return frozenset(names)

    @property
    def required_sets(self) -> tuple[frozenset[str], ...]:
        """All positive requirements as sets of which one must be present (AND of ORs)."""
        return tuple(frozenset({name}) for name in sorted(self.all_of)) + self.any_of

    def __bool__(self) -> bool:
        return bool(self.all_of or self.any_of or self.forbidden)


@dataclass(frozen=True, slots=True)
class MemberOf:
    """Aggregate requirements (aggregate uuids).

    * ``any_of``: for each set, the provider must be in at least one of its aggregates
      (sets are ANDed together);
    * ``forbidden``: the provider must be in none of these aggregates.
    """

    any_of: tuple[frozenset[str], ...] = ()
    forbidden: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.any_of or self.forbidden)


@dataclass(frozen=True, slots=True)
class ProviderFilters:
    """Filters of ``GET /resource_providers`` (all ANDed; ``None``/empty means no filter).

    * ``resources``: ``(resource class name, amount)`` pairs; a provider matches when, for each,
      it has inventory of the class with ``used + amount <= (total - reserved) * allocation_ratio``,
      ``min_unit <= amount <= max_unit`` and ``amount % step_size == 0`` (as Placement);
    * ``in_tree``: uuid of a provider; only providers of its tree match.
    """

    name: str | None = None
    uuid: str | None = None
    in_tree: str | None = None
    member_of: MemberOf = MemberOf()
    required: RequiredTraits = RequiredTraits()
    resources: tuple[tuple[str, int], ...] = ()
