"""Trait use cases (Placement 1.6+): the trait catalogue and the traits of a provider.

Standard traits (os-traits plus placement-numa's extensions) can be neither created nor deleted;
a provider's trait set is replaced as a whole, checked against the generation the client saw,
and the generation moves only when the set actually changed (as Placement).
"""

from __future__ import annotations

from collections.abc import Iterable

from placement_numa.db.database import Database
from placement_numa.db.repositories import providers
from placement_numa.db.repositories import traits as repo
from placement_numa.db.repositories.providers import ProviderRow
from placement_numa.db.repositories.traits import TraitRow
from placement_numa.errors import BadRequest, ConcurrentUpdate, Conflict, NotFound
from placement_numa.names import is_custom

__all__ = [
    "list_traits",
    "show_trait",
    "ensure_trait",
    "delete_trait",
    "provider_traits",
    "set_provider_traits",
    "delete_provider_traits",
    "no_such_traits",
]


def no_such_traits(missing: Iterable[str]) -> BadRequest:
    """The 400 of a provider trait set naming traits that do not exist (sorted names)."""
    return BadRequest(f"No such trait {', '.join(sorted(missing))}")


def _not_found(name: str) -> NotFound:
    return NotFound(f"No such trait(s): {name}.")


def list_traits(
    *,
    database: Database,
    name_in: list[str] | None = None,
    prefix: str | None = None,
    associated: bool | None = None,
) -> list[TraitRow]:
    """Traits sorted by name, filtered as ``repositories.traits.list_traits``."""
    with database.read() as conn:
        return repo.list_traits(conn, name_in=name_in, prefix=prefix, associated=associated)


def show_trait(*, database: Database, name: str) -> TraitRow:
    """The trait ``name``; raises ``NotFound`` (404)."""
    with database.read() as conn:
        row = repo.get_by_name(conn, name)
    if row is None:
        raise _not_found(name)
    return row


def ensure_trait(*, database: Database, name: str) -> tuple[TraitRow, bool]:
    """Create custom trait ``name`` (already validated) unless it exists; returns the trait and
    whether it was created (201 vs 204)."""
    with database.write() as conn:
        return repo.ensure(conn, name)


def delete_trait(*, database: Database, name: str) -> None:
    """Delete custom trait ``name``.

    Raises ``NotFound`` (404), ``BadRequest`` (400) for a standard trait, ``Conflict`` (409)
    when a provider has it.
    """
    with database.write() as conn:
        row = repo.get_by_name(conn, name)
        if row is None:
            raise _not_found(name)
        if not is_custom(name):
            raise BadRequest(f"Cannot delete standard trait {name}.")
        if repo.in_use(conn, row.id):
            raise Conflict(f"The trait {name} is in use by a resource provider.")
        repo.delete_by_id(conn, row.id)


def provider_traits(
    *, database: Database, provider_uuid: str
) -> tuple[ProviderRow, list[TraitRow]]:
    """The provider and its traits (sorted by name). Raises ``NotFound`` (404, Placement's
    "No resource provider with uuid U found: No resource provider with uuid U found")."""
    with database.read() as conn:
        try:
            provider = providers.require_by_uuid(conn, provider_uuid)
        except NotFound as exc:
            raise exc.repeated() from None
        return provider, repo.provider_traits(conn, provider.id)


def set_provider_traits(
    *, database: Database, provider_uuid: str, generation: int, names: Iterable[str]
) -> tuple[int, list[TraitRow]]:
    """Replace the provider's traits with ``names``; returns the (new) generation and traits.

    Raises ``NotFound`` (404), ``ConcurrentUpdate`` (409) for a stale ``generation``,
    ``BadRequest`` (400) naming the unknown traits.
    """
    wanted = set(names)
    with database.write() as conn:
        # Lock the provider row and read its generation under the lock: a write whose trait set
        # turns out unchanged (no compare-and-swap below) must still see a concurrent writer's
        # generation, or two writers at one generation would both get 200.
        provider = providers.require_by_uuid(conn, provider_uuid)
        locked = providers.lock_generations(conn, [provider.id])
        if provider.id not in locked or locked[provider.id][1] != generation:
            raise ConcurrentUpdate(
                "Resource provider's generation already changed. Please update the generation"
                " and try again."
            )
        rows = repo.list_traits(conn, name_in=wanted) if wanted else []
        missing = wanted - {row.name for row in rows}
        if missing:
            raise no_such_traits(missing)
        new_generation = generation
        wanted_ids = {row.id for row in rows}
        if wanted_ids != {row.id for row in repo.provider_traits(conn, provider.id)}:
            # Compare-and-swap first: a concurrent writer on this provider waits, then gets 409.
            new_generation = providers.increment_generation(conn, provider, generation)
            repo.set_provider_traits(conn, provider.id, wanted_ids)
    return new_generation, rows


def delete_provider_traits(*, database: Database, provider_uuid: str) -> None:
    """Remove all the provider's traits (the generation moves only if it had any).

    Raises ``NotFound`` (404) and ``ConcurrentUpdate`` (409) if the provider changed meanwhile.
    """
    with database.write() as conn:
        provider = providers.require_by_uuid(conn, provider_uuid)
        if repo.provider_traits(conn, provider.id):
            providers.increment_generation(conn, provider)
            repo.set_provider_traits(conn, provider.id, [])
