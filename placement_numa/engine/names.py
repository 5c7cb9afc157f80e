"""Refusing unknown resource classes and traits, as Placement does."""

from __future__ import annotations

from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.errors import BadRequest

__all__ = ["check_names"]


def check_names(query: CandidateQuery, fleet: FleetSnapshot) -> None:
    """Refuse unknown resource classes and traits as Placement does (400, undefined code).

    Order: ``root_required`` traits, then per group its classes, then its traits. (Placement
    stops at the first group that matches nothing and never looks at later groups' names; we
    check them all.) Unknown aggregates and ``in_tree`` uuids are not errors: they match nothing.
    """
    classes, traits = fleet.resource_class_names, fleet.trait_names
    if traits is not None:
        for name in sorted(query.root_required | query.root_forbidden):
            if name not in traits:
                raise BadRequest(f"No such trait(s): {name}.")
    for group in query.groups:
        if classes is not None:
            for rc in group.resources:
                if rc not in classes:
                    raise BadRequest(
                        "Invalid resource class in resources parameter: "
                        f"No such resource class {rc}."
                    )
        if traits is not None:
            names = set(group.required_traits) | set(group.forbidden_traits)
            for any_of in group.any_traits:
                names |= any_of
            for name in sorted(names):
                if name not in traits:
                    raise BadRequest(f"No such trait(s): {name}.")
