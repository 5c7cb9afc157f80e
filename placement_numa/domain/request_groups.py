"""Request groups and candidate queries: what ``GET /allocation_candidates`` asks, parsed.

Pure value types (no FastAPI, no SQLAlchemy). The API layer builds them from a query string
(``placement_numa.api.candidate_query``); the NUMA layer builds them from a flavor. The candidate
engine (``placement_numa.engine``) answers them.

Vocabulary (OpenStack Placement, microversions 1.25-1.39):

* a **request group** is ``resources$S``, ``required$S``, ``member_of$S`` and ``in_tree$S`` sharing
  one suffix ``$S``. The unsuffixed group (``suffix is None``) may be satisfied by several
  providers of one tree plus sharing providers; a suffixed group by exactly one provider;
* ``same_subtree`` lists sets of suffixes whose providers must all lie under one of them;
* ``group_policy=isolate`` makes suffixed groups land on distinct providers;
* ``root_required`` filters on the traits of the root of each candidate's tree.

Example (Nova spec "NUMA topology with resource providers", one guest cell)::

    CandidateQuery(
        groups=(
            RequestGroup(suffix="_MEM1", resources={"MEMORY_MB": 8192},
                         required_traits=frozenset({"MEMORY_PAGE_SIZE_SMALL"})),
            RequestGroup(suffix="_PROC1", resources={"VCPU": 8}),
            RequestGroup(suffix="_NUMA1", required_traits=frozenset({"HW_NUMA_ROOT"})),
        ),
        same_subtree=(frozenset({"_MEM1", "_PROC1", "_NUMA1"}),),
    )
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["RequestGroup", "CandidateQuery", "GroupPolicy"]

GroupPolicy = Literal["none", "isolate"]


@dataclass(frozen=True)
class RequestGroup:
    """One request group.

    * ``suffix``: ``None`` for the unsuffixed group, else the suffix text (``"1"``, ``"_MEM1"``);
    * ``resources``: resource class name -> amount (integer units of the class: MiB for
      ``MEMORY_MB``, GiB for ``DISK_GB``, CPUs for ``VCPU``/``PCPU``); empty for a resourceless
      group (1.36+, only inside ``same_subtree``);
    * ``required_traits``: every one must be present;
    * ``any_traits``: for each set, at least one must be present (``required=in:A,B``, 1.39);
    * ``forbidden_traits``: none may be present (``!T``, 1.22);
    * ``member_of``: for each set, the provider must be in at least one of its aggregates (uuids);
    * ``forbidden_aggregates``: the provider must be in none of them (``member_of=!...``, 1.32);
    * ``in_tree``: uuid of a provider whose tree must satisfy the group (1.31 suffixed).

    For the unsuffixed group, traits are checked on the union of the traits of the providers that
    contribute resources (and forbidden traits on each of them), as Placement does.
    """

    suffix: str | None = None
    resources: Mapping[str, int] = field(default_factory=dict)
    required_traits: frozenset[str] = frozenset()
    any_traits: tuple[frozenset[str], ...] = ()
    forbidden_traits: frozenset[str] = frozenset()
    member_of: tuple[frozenset[str], ...] = ()
    forbidden_aggregates: frozenset[str] = frozenset()
    in_tree: str | None = None

    @property
    def use_same_provider(self) -> bool:
        """True for suffixed groups: all of the group comes from one provider."""
        return self.suffix is not None

    @property
    def is_resourceless(self) -> bool:
        """True for a group that asks for no resources (traits or aggregates only, 1.35+)."""
        return not self.resources

    @property
    def label(self) -> str:
        """The suffix as Placement prints it in ``mappings`` (``""`` for the unsuffixed group)."""
        return self.suffix or ""


@dataclass(frozen=True)
class CandidateQuery:
    """A whole ``GET /allocation_candidates`` request.

    * ``groups``: the request groups, unsuffixed first if present, then in suffix order;
    * ``group_policy``: ``"none"``, ``"isolate"`` or ``None`` (not given; only legal with at most
      one suffixed group);
    * ``same_subtree``: sets of suffixes (each a ``same_subtree`` parameter);
    * ``root_required`` / ``root_forbidden`` / ``root_any``: traits the root provider of each
      candidate's tree must have / must not have / must have one of (1.35);
    * ``limit``: at most this many allocation requests (``None`` = all).
    """

    groups: tuple[RequestGroup, ...]
    group_policy: GroupPolicy | None = None
    same_subtree: tuple[frozenset[str], ...] = ()
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    root_any: tuple[frozenset[str], ...] = ()
    limit: int | None = None

    @property
    def isolate(self) -> bool:
        """True for ``group_policy=isolate``: suffixed groups on distinct providers."""
        return self.group_policy == "isolate"

    def group(self, suffix: str | None) -> RequestGroup | None:
        """The group with ``suffix`` (``None`` = unsuffixed), or ``None``."""
        for group in self.groups:
            if group.suffix == suffix:
                return group
        return None

    @property
    def suffixed_groups(self) -> tuple[RequestGroup, ...]:
        """The groups with a suffix, in request order."""
        return tuple(g for g in self.groups if g.suffix is not None)
