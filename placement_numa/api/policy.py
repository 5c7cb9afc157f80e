"""Authorisation: oslo.policy over the rules of ``placement_numa.policies``, one route table.

``make_enforcer(conf)`` builds the ``Enforcer`` once per app (``app.state.enforcer``) from
``[oslo_policy]`` (``policy_file``, ``enforce_scope``, ``enforce_new_defaults``, ...); a policy
file may override any rule (``@``, ``!``, ``role:``, ``rule:``, ``project_id:%(project_id)s``,
``and``/``or``/``not``) and is re-read when it changes, as oslo.policy does.

``enforce_policy`` is an app-wide dependency: after routing (so unknown paths still answer 404
and wrong methods 405, as in Placement), it finds the route's rule in ``ROUTE_RULES`` (method
and path template, from the rules' documented operations) and checks it against the caller's
``RequestContext``. The target is ``{"project_id", "user_id"}`` of the caller, except for
``GET /usages`` whose target is the ``project_id`` asked for (Placement's ``placement:usages``).
A refusal is 403 ``Policy does not allow <rule> to be performed.``; a route's microversion gate
is applied first, so a request below it still gets Placement's 404.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any

from fastapi import Request
from oslo_config import cfg
from oslo_context.context import RequestContext
from oslo_policy import opts as policy_opts
from oslo_policy import policy

from placement_numa.api import microversion as mv
from placement_numa.api.auth import PUBLIC_PATHS
from placement_numa.errors import Forbidden, NotFound
from placement_numa.policies import list_rules, route_rules

__all__ = ["ROUTE_RULES", "authorize", "enforce_policy", "get_enforcer", "make_enforcer"]

ROUTE_RULES: dict[tuple[str, str], str] = route_rules()
_TOTAL_USAGES = "placement:usages"


class _PolicyRefused(Exception):
    """Raised by oslo.policy for a refused check (translated to ``Forbidden``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args)


def make_enforcer(conf: cfg.ConfigOpts) -> policy.Enforcer:
    """An ``Enforcer`` with every rule registered, configured from ``conf``'s ``[oslo_policy]``.

    The default ``policy_file`` is ``policy.yaml`` (looked up in the configuration directories;
    absent means the registered defaults). Raises oslo.policy's errors for a bad policy file.
    """
    policy_opts.set_defaults(conf, policy_file="policy.yaml")
    enforcer = policy.Enforcer(conf)
    enforcer.suppress_default_change_warnings = True
    enforcer.suppress_deprecation_warnings = True
    enforcer.register_defaults(list_rules())
    enforcer.load_rules()
    return enforcer


def get_enforcer() -> policy.Enforcer:
    """The ``oslo.policy.enforcer`` entry point (``oslopolicy-policy-generator``,
    ``oslopolicy-checker``): an enforcer over oslo.config's global ``CONF`` (``--config-file``)."""
    cfg.CONF([], project="placement")
    return make_enforcer(cfg.CONF)


def authorize(
    enforcer: policy.Enforcer, context: RequestContext, rule: str, target: dict[str, Any]
) -> None:
    """Check ``rule`` for ``context`` on ``target``. Raises ``Forbidden`` (403) when refused,
    including a token whose scope the rule does not accept (``enforce_scope``).

    Decisions are kept per enforcer for ``DECISION_TTL_S`` (``_Decisions``): a policy file
    changed on disk is seen within that time instead of at the next request."""
    decisions = _decisions_of(enforcer)
    key = decisions.key(context, rule, target)
    allowed = decisions.get(key)
    if allowed is None:
        try:
            enforcer.authorize(rule, target, context, do_raise=True, exc=_PolicyRefused)
            allowed = True
        except (_PolicyRefused, policy.InvalidScope):
            allowed = False
        decisions.put(key, allowed)
    if not allowed:
        raise Forbidden(f"Policy does not allow {rule} to be performed.")


DECISION_TTL_S = 1.0
DECISION_MAX = 4096


def _frozen(value: Any) -> Any:
    """``value`` (a policy value: str, bool, None, list of roles, dict) as a hashable."""
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    hash(value)  # TypeError: not kept
    return value


class _Decisions:
    """oslo.policy's decisions of one enforcer by (rule, target, the caller's policy values),
    all dropped every ``DECISION_TTL_S`` seconds (or at ``DECISION_MAX`` entries).

    oslo.policy looks the policy file up and checks its modification time, and inspects each
    check's signature, on every call: about a tenth of a scheduler's ``GET
    /allocation_candidates`` plus its claim (issue 30, py-spy of a served worker). A decision
    depends only on the rules, the target and the caller's values, so within a second it is
    reused; the first check after a second goes through oslo.policy again, which re-reads a
    changed file as it always did. ``http:`` checks (a remote service deciding) are reused
    within that second too."""

    def __init__(self) -> None:
        self._kept: dict[Any, bool] = {}
        self._since = time.monotonic()

    @staticmethod
    def key(context: RequestContext, rule: str, target: dict[str, Any]) -> Any:
        """The decision's key, or ``None`` when a value cannot be hashed (not kept)."""
        try:
            return rule, _frozen(target), _frozen(dict(context.to_policy_values()))
        except TypeError:
            return None

    def get(self, key: Any) -> bool | None:
        """The kept decision for ``key`` (``None``: ask oslo.policy)."""
        if key is None:
            return None
        now = time.monotonic()
        if now - self._since > DECISION_TTL_S or len(self._kept) >= DECISION_MAX:
            self._kept = {}  # a new dict: readers in other threads keep a consistent one
            self._since = now
        return self._kept.get(key)

    def put(self, key: Any, allowed: bool) -> None:
        """Keep ``allowed`` for ``key`` (nothing for ``None``)."""
        if key is not None:
            self._kept[key] = allowed


_DECISIONS: weakref.WeakKeyDictionary[policy.Enforcer, _Decisions] = weakref.WeakKeyDictionary()
_DECISIONS_LOCK = threading.Lock()


def _decisions_of(enforcer: policy.Enforcer) -> _Decisions:
    """The kept decisions of ``enforcer`` (a reloaded configuration makes a new enforcer,
    whose decisions start empty)."""
    found = _DECISIONS.get(enforcer)
    if found is None:
        with _DECISIONS_LOCK:
            found = _DECISIONS.setdefault(enforcer, _Decisions())
    return found


def _target(request: Request, rule: str, context: RequestContext) -> dict[str, Any]:
    if rule == _TOTAL_USAGES:
        return {"project_id": request.query_params.get("project_id")}
    return {"project_id": context.project_id, "user_id": context.user_id}


def _below_version_gate(request: Request, route: Any) -> bool:
    """True when the route's microversion gate (``deps.require_version``) refuses the request."""
    version = request.scope.get("state", {}).get("microversion")
    for dependency in getattr(route, "dependencies", ()):
        minimum = getattr(dependency.dependency, "min_version", None)
        if isinstance(minimum, mv.Microversion) and version is not None and version < minimum:
            return True
    return False


async def enforce_policy(request: Request) -> None:
    """App-wide dependency: the route's policy rule for the caller. See the module docstring.
    ``async``: it does no I/O but oslo.policy's check of the policy file's modification time, so
    it runs on the event loop rather than taking a thread-pool round trip.

    Raises ``Forbidden`` (403); a route without a rule is refused (the table must cover every
    route: ``tests/test_policy.py`` checks it).
    """
    route = request.scope.get("route")
    path = getattr(route, "path", None)
    context = request.scope.get("state", {}).get("credentials")
    if path in PUBLIC_PATHS or context is None:
        return
    method = "GET" if request.method == "HEAD" else request.method
    rule = ROUTE_RULES.get((method, str(path)))
    if rule is None:
        raise Forbidden(f"No policy rule for {method} {path}.")
    try:
        authorize(request.app.state.enforcer, context, rule, _target(request, rule, context))
    except Forbidden:
        if _below_version_gate(request, route):
            raise NotFound("") from None  # as the version gate: the explanation alone
        raise
