"""A bounded cache of oslo.policy decisions, keyed on everything a decision depends on.

Evaluating a rule costs ~150 us of CPU per request (oslo.policy inspects each check's signature
on every call), while a deployment sees a handful of distinct (rule, caller, target)
combinations. ``DecisionCache.allowed`` returns the decision oslo.policy's ``Enforcer.authorize``
would give, from the cache when it can:

* the key is the rule name, the caller's complete policy credentials
  (``RequestContext.to_policy_values()``: user, project, domains, roles, system scope, service
  roles and projects, ...) and the target's items; values are frozen (lists to tuples), and a
  target or credential that cannot be frozen is not cached;
* the policy file is still re-read when it changes: every call runs ``Enforcer.load_rules()``
  first, as ``Enforcer.enforce`` does; whenever the loaded rule set differs from the one the
  cache was filled under (other rule objects or names, or ``[oslo_policy]
  enforce_new_defaults``), the cache is emptied;
* only rule sets made of checks that depend on nothing but the credentials and the target are
  cached (``role:``, ``rule:``, generic ``key:value`` checks, ``and``/``or``/``not``, ``@``,
  ``!``); a rule set holding any other check (``http:`` remote checks, custom check plugins)
  disables the cache, and every call is evaluated;
* at most ``max_entries`` decisions, least recently used evicted first;
* refusals are cached as refusals (including a token whose scope the rule does not accept);
  errors other than a refusal are never cached.

Not thread-safe: ``api.policy.enforce_policy`` calls it on the event loop of its worker.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from oslo_context.context import RequestContext
from oslo_policy import _checks, policy

__all__ = ["DecisionCache"]

_PURE_CHECKS: tuple[type[Any], ...] = (
    _checks.RoleCheck,
    _checks.RuleCheck,
    _checks.GenericCheck,
    _checks.TrueCheck,
    _checks.FalseCheck,
    _checks.AndCheck,
    _checks.OrCheck,
    _checks.NotCheck,
)


def _pure(check: Any) -> bool:
    """True when ``check`` (a check tree) reads only the credentials and the target."""
    if type(check) not in _PURE_CHECKS:
        return False
    if isinstance(check, (_checks.AndCheck, _checks.OrCheck)):
        return all(_pure(rule) for rule in check.rules)
    if isinstance(check, _checks.NotCheck):
        return _pure(check.rule)
    return True


def _freeze(value: Any) -> Hashable:
    """``value`` as a hashable key part (lists and tuples to tuples, mappings to sorted item
    tuples); raises ``TypeError`` for anything else unhashable."""
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(item) for item in value)
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    hash(value)
    return value  # type: ignore[no-any-return]


def _items(mapping: Mapping[str, Any]) -> tuple[tuple[str, Hashable], ...]:
    return tuple(sorted((key, _freeze(value)) for key, value in mapping.items()))


class DecisionCache:
    """See the module docstring. ``max_entries``: the bound (>= 1)."""

    def __init__(self, enforcer: policy.Enforcer, max_entries: int = 1024) -> None:
        self.enforcer = enforcer
        self.max_entries = max(1, max_entries)
        self._decisions: OrderedDict[Hashable, bool] = OrderedDict()
        self._rules: tuple[Any, ...] = ()
        self._names: tuple[str, ...] = ()
        self._flags: tuple[Any, ...] = ()
        self._cacheable = False

    def __len__(self) -> int:
        return len(self._decisions)

    def _refresh(self) -> bool:
        """Reload a changed policy file (oslo.policy's own check) and empty the cache when the
        rule set moved; True when decisions may be cached."""
        enforcer = self.enforcer
        enforcer.load_rules()
        rules = enforcer.rules
        flags = (enforcer.conf.oslo_policy.enforce_new_defaults, id(rules))
        values = tuple(rules.values())  # held: identity comparisons stay meaningful
        same = (
            flags == self._flags
            and len(values) == len(self._rules)
            and all(a is b for a, b in zip(values, self._rules, strict=True))
            and tuple(rules) == self._names
        )
        if not same:
            self._decisions.clear()
            self._rules, self._names, self._flags = values, tuple(rules), flags
            self._cacheable = all(_pure(check) for check in values)
        return self._cacheable

    def allowed(
        self,
        rule: str,
        target: Mapping[str, Any],
        context: RequestContext,
        evaluate: Callable[[], bool],
    ) -> bool:
        """The decision for ``rule`` on ``target`` for ``context``: cached, or ``evaluate()``
        (which must run ``Enforcer.authorize`` for exactly these arguments, return its
        decision and raise anything else it raises)."""
        if not self._refresh():
            return evaluate()
        try:
            key: Hashable = (rule, _items(context.to_policy_values()), _items(target))
        except TypeError:  # an unhashable credential or target value
            return evaluate()
        found = self._decisions.get(key)
        if found is not None:
            self._decisions.move_to_end(key)
            return found
        decision = evaluate()
        self._decisions[key] = decision
        if len(self._decisions) > self.max_entries:
            self._decisions.popitem(last=False)
        return decision

    def keys(self) -> Iterable[Hashable]:
        """The cached keys, least recently used first (for tests and debugging)."""
        return list(self._decisions)
