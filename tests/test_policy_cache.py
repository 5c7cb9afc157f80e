"""The policy decision cache gives oslo.policy's decisions: per caller, per target, per rule set.

Every test builds a real ``Enforcer`` over a policy file in a temporary directory and compares
the cached answer with the uncached one (``authorize`` without a cache).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from oslo_context.context import RequestContext
from oslo_policy import policy

from placement_numa.api.auth import context_from_identity
from placement_numa.api.policy import authorize, make_enforcer
from placement_numa.api.policy_cache import DecisionCache
from placement_numa.conf import load_config
from placement_numa.errors import Forbidden

LIST = "placement:resource_providers:list"
USAGES = "placement:usages"


def _context(
    user: str, project: str | None, roles: str, system: str | None = None
) -> RequestContext:
    environ = {"HTTP_X_USER_ID": user, "HTTP_X_ROLES": roles, "HTTP_X_AUTH_TOKEN": user}
    if project is not None:
        environ["HTTP_X_PROJECT_ID"] = project
    if system is not None:
        environ["HTTP_OPENSTACK_SYSTEM_SCOPE"] = system
    return context_from_identity(environ, "req-test")


ADMIN = _context("root", "p1", "admin,member,reader")
SERVICE = _context("nova", "services", "service")
READER = _context("alice", "p1", "reader")
OTHER_READER = _context("bob", "p2", "reader")
SYSTEM_ADMIN = _context("sysroot", None, "admin,member,reader", system="all")


def _enforcer(tmp_path: Path, rules: dict[str, str] | None = None) -> policy.Enforcer:
    policy_file = tmp_path / "policy.json"
    policy_file.write_text(json.dumps(rules or {}))
    conf_file = tmp_path / "placement.conf"
    conf_file.write_text(
        f"[oslo_policy]\nenforce_new_defaults = true\npolicy_file = {policy_file}\n"
    )
    return make_enforcer(load_config(conf_file))


def _allowed(
    enforcer: policy.Enforcer,
    context: RequestContext,
    rule: str,
    target: dict[str, str | None],
    cache: DecisionCache | None = None,
) -> bool:
    try:
        authorize(enforcer, context, rule, target, cache)
    except Forbidden:
        return False
    return True


def _own(context: RequestContext) -> dict[str, str | None]:
    return {"project_id": context.project_id, "user_id": context.user_id}


def test_cached_decisions_match_uncached_for_every_caller_and_target(tmp_path: Path) -> None:
    enforcer = _enforcer(tmp_path)
    cache = DecisionCache(enforcer)
    callers = [ADMIN, SERVICE, READER, OTHER_READER, SYSTEM_ADMIN]
    targets = [{"project_id": "p1"}, {"project_id": "p2"}, {"project_id": None}]
    for _round in range(2):  # the second round answers from the cache
        for context in callers:
            for rule in (LIST, USAGES):
                for target in [_own(context), *targets]:
                    expected = _allowed(enforcer, context, rule, target)
                    assert _allowed(enforcer, context, rule, target, cache) == expected
    # the usages rule admits a reader of the project asked for, and no other reader
    assert _allowed(enforcer, READER, USAGES, {"project_id": "p1"}, cache)
    assert not _allowed(enforcer, READER, USAGES, {"project_id": "p2"}, cache)
    assert _allowed(enforcer, OTHER_READER, USAGES, {"project_id": "p2"}, cache)
    assert not _allowed(enforcer, SYSTEM_ADMIN, LIST, _own(SYSTEM_ADMIN), cache)  # scope
    assert len(cache) > 0


def test_a_changed_policy_file_empties_the_cache(tmp_path: Path) -> None:
    enforcer = _enforcer(tmp_path)
    cache = DecisionCache(enforcer)
    assert _allowed(enforcer, ADMIN, LIST, _own(ADMIN), cache)
    assert not _allowed(enforcer, READER, LIST, _own(READER), cache)
    policy_file = tmp_path / "policy.json"
    policy_file.write_text(json.dumps({"admin_or_service_api": "role:reader and not role:admin"}))
    stat = policy_file.stat()
    os.utime(policy_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a later mtime
    # a rule referenced by the rule asked for changed: the cached answers are gone
    assert not _allowed(enforcer, ADMIN, LIST, _own(ADMIN), cache)
    assert _allowed(enforcer, READER, LIST, _own(READER), cache)
    assert not _allowed(enforcer, ADMIN, LIST, _own(ADMIN))  # as oslo.policy alone decides


def test_the_cache_is_bounded(tmp_path: Path) -> None:
    enforcer = _enforcer(tmp_path)
    cache = DecisionCache(enforcer, max_entries=3)
    for n in range(10):
        context = _context(f"user{n}", f"project{n}", "reader")
        assert not _allowed(enforcer, context, LIST, _own(context), cache)
    assert len(cache) == 3
    newest = [key[1] for key in cache.keys()]  # type: ignore[index]
    assert all(("user_id", f"user{n}") in creds for n, creds in zip((7, 8, 9), newest, strict=True))


@pytest.mark.parametrize("check", ["http://127.0.0.1:9/never", "role:admin or http://x/y"])
def test_rules_with_remote_checks_are_not_cached(tmp_path: Path, check: str) -> None:
    enforcer = _enforcer(tmp_path, {"placement:traits:list": check})
    cache = DecisionCache(enforcer)
    assert _allowed(enforcer, ADMIN, LIST, _own(ADMIN), cache)
    assert len(cache) == 0


def test_unhashable_target_values_are_evaluated_not_cached(tmp_path: Path) -> None:
    enforcer = _enforcer(tmp_path, {LIST: "project_id:%(project_id)s"})
    cache = DecisionCache(enforcer)
    target = {"project_id": "p1", "extra": {1, 2}}  # a set: not frozen
    assert _allowed(enforcer, READER, LIST, target, cache)  # type: ignore[arg-type]
    assert len(cache) == 0
    assert _allowed(enforcer, READER, LIST, {"project_id": "p1"}, cache)
    assert not _allowed(enforcer, READER, LIST, {"project_id": "p2"}, cache)
    assert len(cache) == 2
