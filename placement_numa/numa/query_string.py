"""Render a ``CandidateQuery`` as the equivalent ``GET /allocation_candidates`` query string
(the ``explain`` of ``POST /allocation_candidates``).

Order: the unsuffixed group, then each suffixed group in query order (``resources$S``,
``required$S`` with ``!`` for forbidden traits and ``in:`` for any-of, ``member_of$S``,
``in_tree$S``), then ``same_subtree``, ``group_policy``, ``root_required``, ``limit``. Trait
names inside one parameter are sorted, so equal queries render equally.
"""

from __future__ import annotations

from placement_numa.domain.request_groups import CandidateQuery, RequestGroup

__all__ = ["to_query_string", "group_params"]


def _required(group: RequestGroup) -> list[str]:
    values = []
    plain = sorted(group.required_traits) + [f"!{t}" for t in sorted(group.forbidden_traits)]
    if plain:
        values.append(",".join(plain))
    values.extend("in:" + ",".join(sorted(any_of)) for any_of in group.any_traits)
    return values


def group_params(group: RequestGroup) -> list[tuple[str, str]]:
    """The ``(name, value)`` parameters of one request group."""
    suffix = group.suffix or ""
    params: list[tuple[str, str]] = []
    if group.resources:
        params.append(
            (f"resources{suffix}", ",".join(f"{rc}:{n}" for rc, n in group.resources.items()))
        )
    params.extend((f"required{suffix}", value) for value in _required(group))
    for aggregates in group.member_of:
        ordered = sorted(aggregates)
        params.append(
            (f"member_of{suffix}", ordered[0] if len(ordered) == 1 else "in:" + ",".join(ordered))
        )
    if group.forbidden_aggregates:
        params.append((f"member_of{suffix}", "!in:" + ",".join(sorted(group.forbidden_aggregates))))
    if group.in_tree:
        params.append((f"in_tree{suffix}", group.in_tree))
    return params


def to_query_string(query: CandidateQuery) -> str:
    """``resources=DISK_GB:20&resources_MEM1=MEMORY_MB:4096&required_MEM1=...&group_policy=none``.

    Values are written literally (names and suffixes need no escaping; ``!`` and ``:`` and ``,``
    are legal in a query string)."""
    params: list[tuple[str, str]] = []
    for group in query.groups:
        params.extend(group_params(group))
    order = {g.suffix: i for i, g in enumerate(query.groups)}
    for subtree in query.same_subtree:
        params.append(
            ("same_subtree", ",".join(sorted(subtree, key=lambda s: order.get(s, 1 << 30))))
        )
    if query.group_policy:
        params.append(("group_policy", query.group_policy))
    root = sorted(query.root_required) + [f"!{t}" for t in sorted(query.root_forbidden)]
    if root:
        params.append(("root_required", ",".join(root)))
    params.extend(("root_required", "in:" + ",".join(sorted(a))) for a in query.root_any)
    if query.limit is not None:
        params.append(("limit", str(query.limit)))
    return "&".join(f"{name}={value}" for name, value in params)
