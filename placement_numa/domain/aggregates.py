"""The form an aggregate uuid is kept in: what the client sent.

OpenStack Placement stores, returns and matches aggregate uuids exactly as clients send them
(``PUT /resource_providers/{uuid}/aggregates`` checks only that each reads as a uuid):
openstacksdk sends 32 hex digits without dashes and compares what comes back with what it sent,
and ``member_of`` matches the same string, so ``member_of=<dashed form>`` does not find an
aggregate stored without dashes. Upper-case and undashed forms are therefore kept verbatim.

The one exception is a form longer than the 36-character ``uuid`` column (braces, a
``urn:uuid:`` prefix): upstream cannot store those on PostgreSQL or MariaDB at all (it fails
with a 500); we keep them in canonical form (lower case, dashed) and match ``member_of`` values
through the same rule, so they still work as aggregate names.
"""

from __future__ import annotations

import uuid as uuidlib

__all__ = ["UUID_COLUMN_LENGTH", "kept_aggregate_uuid"]

UUID_COLUMN_LENGTH = 36
"""Characters of the ``placement_aggregates.uuid`` column (as in Placement's schema)."""


def kept_aggregate_uuid(value: str) -> str:
    """``value`` (a string that reads as a uuid) as it is stored and matched: unchanged when it
    fits the 36-character column, else canonical (``str(uuid.UUID(value))``). Raises
    ``ValueError`` when a too-long ``value`` is not a uuid (callers validate first)."""
    if len(value) <= UUID_COLUMN_LENGTH:
        return value
    return str(uuidlib.UUID(value))
