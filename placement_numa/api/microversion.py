"""Microversions of the Placement API: the one list of versions, named gates, negotiation.

A request names its version in ``OpenStack-API-Version: placement X.Y`` (or the legacy
``X-OpenStack-Placement-API-Version: X.Y``). Absent means the minimum (1.0), ``latest`` the
maximum; a malformed value is a 400 and an unsupported one a 406 carrying ``min_version`` and
``max_version``. Code never compares bare tuples: it asks ``version >= CONSUMER_GENERATION``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

from placement_numa.errors import BadRequest, NotAcceptable

__all__ = [
    "Microversion",
    "VERSIONS",
    "MIN_VERSION",
    "MAX_VERSION",
    "parse_header",
    "SERVICE_TYPE",
]

SERVICE_TYPE = "placement"


@total_ordering
@dataclass(frozen=True, slots=True)
class Microversion:
    """An API microversion ``major.minor``; ordered, hashable, printed as ``"1.39"``."""

    major: int
    minor: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Microversion):
            return NotImplemented
        return (self.major, self.minor) < (other.major, other.minor)

    @classmethod
    def parse(cls, text: str) -> Microversion:
        """Parse ``"1.39"``; raises ``ValueError`` on anything else."""
        match = re.fullmatch(r"(\d+)\.(\d+)", text.strip())
        if match is None:
            raise ValueError(text)
        return cls(int(match.group(1)), int(match.group(2)))


# Every microversion, oldest first, with what it introduced. The gates below name them.
VERSIONS: tuple[tuple[Microversion, str], ...] = (
    (Microversion(1, 0), "Initial: resource providers, inventories, allocations, usages."),
    (Microversion(1, 1), "Resource provider aggregates."),
    (Microversion(1, 2), "Custom resource classes (/resource_classes)."),
    (Microversion(1, 3), "member_of filter on GET /resource_providers."),
    (Microversion(1, 4), "resources filter on GET /resource_providers."),
    (Microversion(1, 5), "DELETE /resource_providers/{uuid}/inventories."),
    (Microversion(1, 6), "Traits (/traits and /resource_providers/{uuid}/traits)."),
    (Microversion(1, 7), "PUT /resource_classes/{name} creates a custom class without a body."),
    (Microversion(1, 8), "project_id and user_id are required on PUT /allocations/{consumer}."),
    (Microversion(1, 9), "GET /usages?project_id=&user_id=."),
    (Microversion(1, 10), "GET /allocation_candidates."),
    (Microversion(1, 11), "'allocations' link in resource provider responses."),
    (Microversion(1, 12), "Dict-shaped PUT /allocations/{consumer} and allocation_requests."),
    (Microversion(1, 13), "POST /allocations for several consumers at once."),
    (Microversion(1, 14), "Nested providers: parent_provider_uuid, root_provider_uuid, in_tree."),
    (Microversion(1, 15), "last-modified and cache-control headers on GET responses."),
    (Microversion(1, 16), "limit on GET /allocation_candidates."),
    (Microversion(1, 17), "required traits on GET /allocation_candidates."),
    (Microversion(1, 18), "required traits on GET /resource_providers."),
    (Microversion(1, 19), "Provider aggregates carry and require the provider generation."),
    (Microversion(1, 20), "POST /resource_providers answers 200 with the provider."),
    (Microversion(1, 21), "member_of on GET /allocation_candidates."),
    (Microversion(1, 22), "Forbidden traits (!TRAIT)."),
    (Microversion(1, 23), "Error codes in error responses."),
    (Microversion(1, 24), "Repeated member_of parameters (AND of ORs)."),
    (Microversion(1, 25), "Granular request groups with numeric suffixes, group_policy."),
    (Microversion(1, 26), "Inventory reserved may equal total."),
    (Microversion(1, 27), "provider_summaries list every inventoried resource class."),
    (Microversion(1, 28), "Consumer generations."),
    (Microversion(1, 29), "Nested providers in allocation candidates."),
    (Microversion(1, 30), "POST /reshaper."),
    (Microversion(1, 31), "in_tree on GET /allocation_candidates."),
    (Microversion(1, 32), "Forbidden aggregates (member_of=!...)."),
    (Microversion(1, 33), "Arbitrary request group suffixes."),
    (Microversion(1, 34), "mappings in allocation_requests."),
    (Microversion(1, 35), "root_required on GET /allocation_candidates."),
    (Microversion(1, 36), "same_subtree and resourceless request groups."),
    (Microversion(1, 37), "Re-parenting and un-parenting resource providers."),
    (Microversion(1, 38), "Consumer types."),
    (Microversion(1, 39), "Any-of traits (required=in:A,B) and repeated required."),
)

MIN_VERSION: Microversion = VERSIONS[0][0]
MAX_VERSION: Microversion = VERSIONS[-1][0]

# Named gates: the first version with each behaviour.
AGGREGATES = Microversion(1, 1)
CUSTOM_RESOURCE_CLASSES = Microversion(1, 2)
PROVIDER_MEMBER_OF = Microversion(1, 3)
PROVIDER_RESOURCES_FILTER = Microversion(1, 4)
DELETE_ALL_INVENTORIES = Microversion(1, 5)
TRAITS = Microversion(1, 6)
RESOURCE_CLASS_PUT_CREATE = Microversion(1, 7)
ALLOCATION_REQUIRES_PROJECT_USER = Microversion(1, 8)
USAGES = Microversion(1, 9)
ALLOCATION_CANDIDATES = Microversion(1, 10)
PROVIDER_ALLOCATIONS_LINK = Microversion(1, 11)
ALLOCATIONS_DICT = Microversion(1, 12)
POST_ALLOCATIONS = Microversion(1, 13)
NESTED_PROVIDERS = Microversion(1, 14)
CACHE_HEADERS = Microversion(1, 15)
CANDIDATES_LIMIT = Microversion(1, 16)
CANDIDATES_REQUIRED = Microversion(1, 17)
PROVIDER_REQUIRED = Microversion(1, 18)
AGGREGATE_GENERATION = Microversion(1, 19)
POST_PROVIDER_RETURNS_BODY = Microversion(1, 20)
CANDIDATES_MEMBER_OF = Microversion(1, 21)
FORBIDDEN_TRAITS = Microversion(1, 22)
ERROR_CODES = Microversion(1, 23)
MULTI_MEMBER_OF = Microversion(1, 24)
GRANULAR_GROUPS = Microversion(1, 25)
RESERVED_EQUALS_TOTAL = Microversion(1, 26)
SUMMARIES_ALL_INVENTORIES = Microversion(1, 27)
CONSUMER_GENERATION = Microversion(1, 28)
NESTED_CANDIDATES = Microversion(1, 29)
RESHAPER = Microversion(1, 30)
CANDIDATES_IN_TREE = Microversion(1, 31)
FORBIDDEN_AGGREGATES = Microversion(1, 32)
ARBITRARY_SUFFIXES = Microversion(1, 33)
CANDIDATE_MAPPINGS = Microversion(1, 34)
ROOT_REQUIRED = Microversion(1, 35)
SAME_SUBTREE = Microversion(1, 36)
REPARENTING = Microversion(1, 37)
CONSUMER_TYPES = Microversion(1, 38)
ANY_TRAITS = Microversion(1, 39)

_LEGACY_HEADER = "x-openstack-placement-api-version"
_HEADER = "openstack-api-version"


def _requested_text(headers: dict[str, str]) -> str | None:
    """Return the version text this request asks for, or ``None`` when it asks for none."""
    value = headers.get(_HEADER)
    if value is not None:
        # "placement 1.39", possibly among other services: "compute 2.1, placement 1.5".
        for part in value.split(","):
            words = part.strip().split()
            if len(words) == 2 and words[0].lower() == SERVICE_TYPE:
                return words[1]
            if len(words) == 1 and words[0].lower() == SERVICE_TYPE:
                return ""
    legacy = headers.get(_LEGACY_HEADER)
    if legacy is not None:
        return legacy.strip()
    return None


def parse_header(headers: dict[str, str]) -> Microversion:
    """Negotiate the microversion of a request from its (lower-cased) headers.

    Returns the requested version, ``MIN_VERSION`` when none is named and ``MAX_VERSION`` for
    ``latest``. Raises ``BadRequest`` for a malformed value and ``NotAcceptable`` (with
    ``min_version``/``max_version`` in ``extra``) for a version outside 1.0..1.39.
    """
    text = _requested_text(headers)
    if text is None:
        return MIN_VERSION
    if text.lower() == "latest":
        return MAX_VERSION
    try:
        version = Microversion.parse(text)
    except ValueError:
        raise BadRequest(f"invalid version string: {text}") from None
    if not (MIN_VERSION <= version <= MAX_VERSION):
        raise NotAcceptable(
            f"Unacceptable version header: {text}",
            extra={"min_version": str(MIN_VERSION), "max_version": str(MAX_VERSION)},
        )
    return version
