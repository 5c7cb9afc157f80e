"""The aggregate and sharing-provider indexes of a patched snapshot (``engine/fleet_patch.py``).

Placement's ``anchors_for_sharing_providers``: a provider with ``MISC_SHARES_VIA_AGGREGATE`` in
some aggregate anchors candidates at the root of every tree holding a provider in one of its
aggregates. A patch recomputes that only for the aggregates of the providers that left or
entered.
"""

from __future__ import annotations

from placement_numa.engine.fleet import FleetSnapshot
from placement_numa.engine.providers import ProviderInfo

__all__ = ["patch_sharing", "share_sharing"]


def patch_sharing(
    new: FleetSnapshot,
    old: FleetSnapshot,
    infos: list[ProviderInfo],
    before: dict[int, ProviderInfo],
    loaded: set[int],
) -> None:
    """Aggregate members and sharing-provider indexes of a patched snapshot, recomputed for
    the aggregates of every provider that left or entered (Placement's
    ``anchors_for_sharing_providers`` for the sharing providers in them); ``before``: the
    replaced providers as ``old`` knows them."""
    plist = new.providers
    removed = set(before)
    touched_aggs: set[str] = set()
    for p in before.values():
        touched_aggs |= p.aggregates
    for info in infos:
        touched_aggs |= info.aggregates
    aggregate_members = dict(old.aggregate_members)
    for agg in touched_aggs:
        members = {m for m in aggregate_members.get(agg, frozenset()) if m not in removed}
        members.update(info.index for info in infos if agg in info.aggregates)
        if members:
            aggregate_members[agg] = frozenset(members)
        else:
            aggregate_members.pop(agg, None)
    new.aggregate_members = aggregate_members
    sharing = (old.sharing - removed) | {info.index for info in infos if info.sharing}
    new.sharing = frozenset(sharing)
    sharing_changed = any(p.sharing for p in before.values()) or any(info.sharing for info in infos)
    sharing_anchors = dict(old.sharing_anchors)
    for i in removed:
        sharing_anchors.pop(i, None)
    for i in sharing:
        p = plist[i]
        if p.aggregates and (i in loaded or not p.aggregates.isdisjoint(touched_aggs)):
            anchors = new._anchors(i)
            if sharing_anchors.get(i) != anchors:
                sharing_changed = True
            sharing_anchors[i] = anchors
    new.sharing_anchors = sharing_anchors
    if sharing_changed:
        new._index_sharing()
    else:
        new.shared_into = old.shared_into
        new.roots_with_sharing = old.roots_with_sharing


def share_sharing(new: FleetSnapshot, old: FleetSnapshot) -> None:
    """No aggregate or sharing trait changed: the aggregate and sharing indexes are ``old``'s."""
    new.aggregate_members = old.aggregate_members
    new.sharing = old.sharing
    new.sharing_anchors = old.sharing_anchors
    new.shared_into = old.shared_into
    new.roots_with_sharing = old.roots_with_sharing
