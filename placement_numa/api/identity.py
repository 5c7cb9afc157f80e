"""The caller's identity as keystonemiddleware's headers say it, made a ``RequestContext``.

Both authentication strategies (``api.auth.NoAuth2`` and ``api.keystone.KeystoneAuth``) end in
a WSGI-style environ holding the identity headers keystonemiddleware sets (``HTTP_X_USER_ID``,
``HTTP_X_PROJECT_ID``, ``HTTP_X_ROLES``, ``HTTP_X_SERVICE_ROLES``,
``HTTP_OPENSTACK_SYSTEM_SCOPE``, ...); this module turns it into the oslo.context
``RequestContext`` every OpenStack service reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oslo_context.context import RequestContext

from placement_numa.errors import Unauthorized

__all__ = ["context_from_identity"]


def context_from_identity(environ: Mapping[str, Any], request_id: str) -> RequestContext:
    """A ``RequestContext`` from identity headers in WSGI form (``HTTP_X_USER_ID``, ...).

    Raises ``Unauthorized`` when no user is named (as Placement's keystone context middleware).
    """
    context = RequestContext.from_environ(dict(environ), request_id=request_id)
    if context.user_id is None:
        raise Unauthorized("The request you have made requires authentication.")
    return context
