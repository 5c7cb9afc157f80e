"""The domain error tree. Each error carries its Placement error code and HTTP status.

::

    PlacementError                      (500, placement.undefined_code)
    ├── BadRequest                      (400)
    │   ├── QueryBadValue               (400, placement.query.bad_value)
    │   ├── QueryMissingValue           (400, placement.query.missing_value)
    │   ├── QueryDuplicateKey           (400, placement.query.duplicate_key)
    │   └── LimitExceeded               (400, placement.limit.*: a documented cap, see README)
    ├── Unauthorized                    (401)
    ├── Forbidden                       (403)
    ├── NotFound                        (404)
    │   └── ResourceProviderNotFound    (404, placement.resource_provider.not_found)
    ├── MethodNotAllowed                (405)
    ├── NotAcceptable                   (406)
    ├── Conflict                        (409)
    │   ├── ConcurrentUpdate            (409, placement.concurrent_update)
    │   ├── DuplicateName               (409, placement.duplicate_name)
    │   ├── InventoryInUse              (409, placement.inventory.inuse)
    │   ├── ResourceProviderInUse       (409, placement.resource_provider.inuse)
    │   └── CannotDeleteParent          (409, placement.resource_provider.cannot_delete_parent)
    ├── PayloadTooLarge                 (413, placement.limit.body_size)
    ├── UnsupportedMediaType            (415)
    └── ServiceUnavailable              (503, placement.db.*, with Retry-After)

Services and parsers raise these; only ``placement_numa.api.errors`` turns them into HTTP
responses. Nothing below the API layer imports FastAPI.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "PlacementError",
    "BadRequest",
    "QueryBadValue",
    "QueryMissingValue",
    "QueryDuplicateKey",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "ResourceProviderNotFound",
    "MethodNotAllowed",
    "NotAcceptable",
    "Conflict",
    "ConcurrentUpdate",
    "DuplicateName",
    "InventoryInUse",
    "ResourceProviderInUse",
    "CannotDeleteParent",
    "UnsupportedMediaType",
    "LimitExceeded",
    "PayloadTooLarge",
    "ServiceUnavailable",
]


class PlacementError(Exception):
    """Base of every error the service reports to a client.

    ``detail`` is the human-readable sentence shown in the error body; ``extra`` holds additional
    keys merged into the error object (``min_version``/``max_version`` on a 406).
    """

    status: ClassVar[int] = 500
    title: ClassVar[str] = "Internal Server Error"
    default_code: ClassVar[str] = "placement.undefined_code"

    def __init__(
        self,
        detail: str,
        *,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code or self.default_code
        self.headers = headers or {}
        self.extra = extra or {}
        # Overrides the status's standard explanation that prefixes ``detail`` in responses.
        self.explanation: str | None = None

    def repeated(self, separator: str = ": ") -> PlacementError:
        """This error with its detail said twice (``"X: X"``), as Placement words some 404s
        (it wraps an exception's message in one that ends with that message again)."""
        again = type(self)(
            f"{self.detail}{separator}{self.detail}",
            code=self.code,
            headers=self.headers,
            extra=self.extra,
        )
        again.explanation = self.explanation
        return again


class BadRequest(PlacementError):
    """400: the request (body, query string, headers) is invalid."""

    status = 400
    title = "Bad Request"


class QueryBadValue(BadRequest):
    """400: a query parameter has a value of the wrong form."""

    default_code = "placement.query.bad_value"


class QueryMissingValue(BadRequest):
    """400: a required query parameter is missing."""

    default_code = "placement.query.missing_value"


class QueryDuplicateKey(BadRequest):
    """400: a query parameter is given twice."""

    default_code = "placement.query.duplicate_key"


class LimitExceeded(BadRequest):
    """400: the request exceeds a documented cap that bounds the work it causes (request groups,
    resource classes per group, JSON nesting, query-string length). Each cap has its own code:
    ``placement.limit.request_groups``, ``placement.limit.resource_classes``,
    ``placement.limit.json_depth``, ``placement.limit.query_length``."""

    default_code = "placement.limit.exceeded"


class Unauthorized(PlacementError):
    """401: no valid ``x-auth-token``."""

    status = 401
    title = "Unauthorized"


class Forbidden(PlacementError):
    """403: the caller's role may not do this."""

    status = 403
    title = "Forbidden"


class NotFound(PlacementError):
    """404: no such resource (or a route below its microversion)."""

    status = 404
    title = "Not Found"


class ResourceProviderNotFound(NotFound):
    """404: no resource provider with that uuid."""

    default_code = "placement.resource_provider.not_found"


class MethodNotAllowed(PlacementError):
    """405: the route exists but not with this method."""

    status = 405
    title = "Method Not Allowed"


class NotAcceptable(PlacementError):
    """406: the ``Accept`` header excludes JSON."""

    status = 406
    title = "Not Acceptable"


class Conflict(PlacementError):
    """409: the write conflicts with the current state."""

    status = 409
    title = "Conflict"


class ConcurrentUpdate(Conflict):
    """409: a provider or consumer generation moved since the client read it."""

    default_code = "placement.concurrent_update"


class DuplicateName(Conflict):
    """409: the name (or uuid) is taken."""

    default_code = "placement.duplicate_name"


class InventoryInUse(Conflict):
    """409: allocations still use the inventory being removed or shrunk."""

    default_code = "placement.inventory.inuse"


class ResourceProviderInUse(Conflict):
    """409: the provider still has allocations."""

    default_code = "placement.resource_provider.inuse"


class CannotDeleteParent(Conflict):
    """409: the provider still has child providers."""

    default_code = "placement.resource_provider.cannot_delete_parent"


class UnsupportedMediaType(PlacementError):
    """415: a body that is not ``application/json``."""

    status = 415
    title = "Unsupported Media Type"


class PayloadTooLarge(PlacementError):
    """413: the request body exceeds ``[oslo_middleware] max_request_body_size`` (as
    oslo.middleware's ``RequestBodySizeLimiter`` answers)."""

    status = 413
    title = "Request Entity Too Large"
    default_code = "placement.limit.body_size"


class ServiceUnavailable(PlacementError):
    """503: the database cannot serve the request now (unreachable, pool exhausted, statement or
    lock timeout, retries exhausted); carries ``Retry-After``. Codes: ``placement.db.unavailable``,
    ``placement.db.pool_exhausted``, ``placement.db.timeout``, ``placement.db.retries_exhausted``.
    """

    status = 503
    title = "Service Unavailable"
    default_code = "placement.db.unavailable"
