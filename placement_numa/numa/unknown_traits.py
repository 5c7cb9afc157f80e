"""A translated flavor against the traits the service knows: a valid flavor never becomes a 400.

Placement answers ``GET /allocation_candidates`` with 400 "No such trait(s)" for a trait it does
not know. A flavor is another matter (issue 11, defect 4): ``hw:mem_page_size=2MB`` on a fleet
where no host reported 2 MiB pages yet asks for ``CUSTOM_MEMORY_PAGE_SIZE_2048``, which no
provider has, so the honest answer is "no candidates", not "bad request". So, for any trait of
the translated query (those the translation adds and the flavor's own ``trait:`` specs alike):

* a REQUIRED trait nobody knows (``required``, ``root_required``, or every member of an
  ``any`` set) can match no provider: the query has no candidates (``None``);
* a FORBIDDEN trait nobody knows excludes no provider: it is dropped;
* an ``any`` set loses its unknown members (they match nothing).

Pure: works on ``CandidateQuery`` values and a set of known trait names.
"""

from __future__ import annotations

from dataclasses import replace

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup

__all__ = ["known_traits_only"]


def _any_sets(
    sets: tuple[frozenset[str], ...], known: frozenset[str]
) -> tuple[frozenset[str], ...] | None:
    kept = tuple(s & known for s in sets)
    return None if any(not s for s in kept) else kept


def _group(group: RequestGroup, known: frozenset[str]) -> RequestGroup | None:
    if not group.required_traits <= known:
        return None
    any_traits = _any_sets(group.any_traits, known)
    if any_traits is None:
        return None
    return replace(group, any_traits=any_traits, forbidden_traits=group.forbidden_traits & known)


def known_traits_only(query: CandidateQuery, known: frozenset[str] | None) -> CandidateQuery | None:
    """``query`` with unknown forbidden traits dropped, or ``None`` when it requires a trait
    that is not known (no provider can have it). ``known``: the trait names of the service
    (``None``: not checked, ``query`` unchanged)."""
    if known is None:
        return query
    if not query.root_required <= known:
        return None
    root_any = _any_sets(query.root_any, known)
    if root_any is None:
        return None
    groups = []
    for group in query.groups:
        kept = _group(group, known)
        if kept is None:
            return None
        groups.append(kept)
    return replace(
        query,
        groups=tuple(groups),
        root_forbidden=query.root_forbidden & known,
        root_any=root_any,
    )
