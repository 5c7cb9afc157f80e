"""Resource provider use cases: create, show, list with filters, update (incl. re-parenting),
delete. One transaction each; errors carry Placement's codes and messages.

Provider trees: every provider has a root (itself for a root provider); ``parent_provider_id`` is
``None`` for a root. Moving a provider (1.37) moves its whole subtree, whose
``root_provider_id`` is rewritten in the same transaction.
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError

from placement_numa.db.database import Database
from placement_numa.db.repositories import aggregates as aggregate_repo
from placement_numa.db.repositories import names, provider_filters
from placement_numa.db.repositories import providers as repo
from placement_numa.db.repositories.fleet import current_revision
from placement_numa.db.repositories.providers import ProviderRow
from placement_numa.domain.filters import ProviderFilters
from placement_numa.errors import (
    BadRequest,
    CannotDeleteParent,
    DuplicateName,
    ResourceProviderInUse,
)

__all__ = [
    "fleet_revision",
    "UNSET",
    "get_provider",
    "list_providers",
    "create_provider",
    "update_provider",
    "delete_provider",
    "create_refused",
    "duplicate",
    "NAME_REQUIRED",
    "PARENT_IS_SELF",
    "NO_PARENT",
]


@dataclass(frozen=True)
class _Unset:
    """Marker: a field absent from the request body (distinct from ``null``)."""


UNSET = _Unset()


def get_provider(database: Database, *, uuid: str) -> ProviderRow:
    """One provider by uuid. Raises ``NotFound`` (404)."""
    with database.read() as conn:
        return repo.require_by_uuid(conn, uuid)


def list_providers(database: Database, *, filters: ProviderFilters) -> list[ProviderRow]:
    """Providers matching ``filters`` (see ``ProviderFilters``), in creation order.

    Unknown aggregates simply match nothing (or forbid nothing); an unknown ``in_tree`` provider
    gives an empty list. Raises ``BadRequest`` for an unknown resource class ("Invalid resource
    class in resources parameter: No such resource class X.") or trait ("Invalid trait(s) in
    "required" parameter: No such trait(s): X.").
    """
    with database.read() as conn:
        trait_names = filters.required.names
        trait_ids = names.trait_ids(conn, trait_names)
        missing = sorted(trait_names - set(trait_ids))
        if missing:
            raise BadRequest(
                f'Invalid trait(s) in "required" parameter: No such trait(s): {", ".join(missing)}.'
            )
        class_ids = names.resource_class_ids(conn, (name for name, _ in filters.resources))
        for class_name, _ in filters.resources:
            if class_name not in class_ids:
                raise BadRequest(
                    "Invalid resource class in resources parameter: No such resource class"
                    f" {class_name}."
                )
        root_id: int | None = None
        if filters.in_tree is not None:
            tree = repo.get_by_uuid(conn, filters.in_tree)  # as sent: Placement matches exactly
            if tree is None:
                return []
            root_id = tree.root_provider_id
        aggregate_uuids = set(filters.member_of.forbidden)
        for group in filters.member_of.any_of:
            aggregate_uuids |= group
        aggregate_ids = aggregate_repo.aggregate_ids(conn, aggregate_uuids)
        return provider_filters.list_providers(
            conn,
            name=filters.name,
            uuid=filters.uuid,
            root_id=root_id,
            required_trait_sets=[
                {trait_ids[name] for name in group} for group in filters.required.required_sets
            ],
            forbidden_trait_ids={trait_ids[name] for name in filters.required.forbidden},
            member_of_sets=[_ids_of(group, aggregate_ids) for group in filters.member_of.any_of],
            forbidden_aggregate_ids=_ids_of(filters.member_of.forbidden, aggregate_ids),
            resources=[(class_ids[name], amount) for name, amount in filters.resources],
        )


def _ids_of(uuids: frozenset[str], known: dict[str, int]) -> set[int]:
    return {known[u] for u in uuids if u in known}


def create_provider(
    database: Database, *, name: str, uuid: str | None = None, parent_uuid: str | None = None
) -> ProviderRow:
    """Create a provider at generation 0, as a root or under ``parent_uuid``.

    ``uuid`` is normalised to its dashed form, or generated when absent; ``parent_uuid`` is
    looked up exactly as sent (as Placement: a parent named without dashes or in capitals does
    not exist). Raises ``BadRequest``
    for an empty name, a parent equal to the provider or an unknown parent, and
    ``DuplicateName`` (409, ``placement.duplicate_name``) when the uuid or name is taken.
    """
    uuid = str(uuidlib.UUID(uuid)) if uuid else str(uuidlib.uuid4())
    if not name:
        raise create_refused(name, uuid, NAME_REQUIRED)
    with database.write() as conn:
        parent: ProviderRow | None = None
        if parent_uuid is not None:
            if parent_uuid == uuid:
                raise create_refused(name, uuid, PARENT_IS_SELF)
            parent = repo.get_by_uuid(conn, parent_uuid)
            if parent is None:
                raise create_refused(name, uuid, NO_PARENT)
        taken = repo.uuid_or_name_taken(conn, uuid=uuid, name=name)
        if taken:
            raise duplicate(taken)
        try:
            return repo.insert_provider(conn, uuid=uuid, name=name, parent=parent)
        except IntegrityError:
            taken = repo.uuid_or_name_taken(conn, uuid=uuid, name=name)
            raise duplicate(taken or [f"uuid: {uuid}"]) from None


# Reasons of ``create_refused`` (Placement's wording).
NAME_REQUIRED = "name is required"
PARENT_IS_SELF = (
    "parent provider UUID cannot be same as UUID. Please set parent provider UUID to None if"
    " there is no parent."
)
NO_PARENT = "parent provider UUID does not exist."


def create_refused(name: str, uuid: str, reason: str) -> BadRequest:
    """The 400 of a provider that cannot be created (Placement's "Object action create failed")."""
    return BadRequest(
        f'Unable to create resource provider "{name}", {uuid}: Object action create failed'
        f" because: {reason}"
    )


def duplicate(taken: list[str]) -> DuplicateName:
    """The 409 ``placement.duplicate_name`` naming what is taken: ``["uuid: ...", "name: ..."]``."""
    return DuplicateName(f"Conflicting resource provider {', '.join(taken)} already exists.")


def update_provider(
    database: Database,
    *,
    uuid: str,
    name: str,
    parent_uuid: str | None | _Unset = UNSET,
    allow_reparenting: bool = False,
) -> ProviderRow:
    """Rename a provider and, when ``parent_uuid`` is given, set its parent.

    Without ``allow_reparenting`` (before 1.37) a parent can only be set on a provider that has
    none (or repeated unchanged); with it, a provider may move under any provider outside its
    own subtree, or become a root (``parent_uuid=None``); the moved subtree's root is rewritten.
    ``parent_uuid`` is looked up exactly as sent, as in ``create_provider``.
    The generation does not change (as in Placement). Raises ``NotFound``, ``BadRequest``
    ("Unable to save resource provider ...") and ``DuplicateName`` (409).
    """

    def refuse(reason: str, action: str = "update") -> BadRequest:
        return BadRequest(
            f"Unable to save resource provider {uuid}: Object action {action} failed because:"
            f" {reason}"
        )

    with database.write() as conn:
        provider = repo.require_by_uuid(conn, uuid)
        if not isinstance(parent_uuid, _Unset):
            # Serialise concurrent moves touching these trees (two crossing moves could
            # otherwise both pass the loop check), then re-read what the checks use.
            target = repo.get_by_uuid(conn, parent_uuid) if parent_uuid else None
            roots = {provider.root_provider_id} | ({target.root_provider_id} if target else set())
            repo.lock_providers(conn, repo.tree_ids(conn, roots))
            provider = repo.require_by_uuid(conn, uuid)
        parent_id = provider.parent_provider_id
        root_id = provider.root_provider_id
        moved: set[int] = set()
        if not isinstance(parent_uuid, _Unset):
            if parent_uuid is not None:
                parent = repo.get_by_uuid(conn, parent_uuid)
                if parent is None:
                    raise refuse("parent provider UUID does not exist.", action="create")
                if (
                    provider.parent_provider_id is not None
                    and provider.parent_provider_id != parent.id
                    and not allow_reparenting
                ):
                    raise refuse("re-parenting a provider is not currently allowed.")
                moved = repo.subtree_ids(conn, provider)
                if parent.id in moved:
                    raise refuse("creating loop in the provider tree is not allowed.")
                parent_id, root_id = parent.id, parent.root_provider_id
            elif provider.parent_provider_id is not None:
                if not allow_reparenting:
                    raise refuse("un-parenting a provider is not currently allowed.")
                moved = repo.subtree_ids(conn, provider)
                parent_id, root_id = None, provider.id
        if repo.uuid_or_name_taken(conn, uuid=None, name=name) and name != provider.name:
            raise DuplicateName(f"Conflicting resource provider {name} already exists.")
        try:
            repo.update_provider(conn, provider.id, name=name, parent_id=parent_id, root_id=root_id)
        except IntegrityError:
            raise DuplicateName(f"Conflicting resource provider {name} already exists.") from None
        if root_id != provider.root_provider_id:
            repo.set_root(conn, moved - {provider.id}, root_id)
        updated = repo.get_by_id(conn, provider.id)
        assert updated is not None
        return updated


def delete_provider(database: Database, *, uuid: str) -> None:
    """Delete a provider with its inventories, traits and aggregate links.

    Raises ``NotFound`` (404), ``CannotDeleteParent`` (409,
    ``placement.resource_provider.cannot_delete_parent``) when it has children and
    ``ResourceProviderInUse`` (409, ``placement.resource_provider.inuse``) when it has
    allocations.
    """
    with database.write() as conn:
        provider = repo.require_by_uuid(conn, uuid, suffix=" for delete")
        repo.lock_providers(conn, [provider.id])
        if repo.has_children(conn, provider.id):
            raise _cannot_delete_parent(uuid)
        if repo.has_allocations(conn, provider.id):
            raise ResourceProviderInUse(
                f"Unable to delete resource provider {uuid}: Resource provider has allocations."
            )
        try:
            repo.delete_provider(conn, provider.id)
        except IntegrityError:
            raise _cannot_delete_parent(uuid) from None


def _cannot_delete_parent(uuid: str) -> CannotDeleteParent:
    return CannotDeleteParent(
        f"Unable to delete parent resource provider {uuid}: It has child resource providers."
    )


def fleet_revision(database: Database) -> int:
    """The fleet revision counter (bumped by every committed write, in any process)."""
    with database.read() as conn:
        return current_revision(conn)
