"""Policy rules (oslo.policy): OpenStack Placement 16's rule names and defaults, plus ours.

Every rule below is an ``oslo_policy.policy.RuleDefault``; ``list_rules()`` is the
``oslo.policy.policies`` entry point (``oslopolicy-sample-generator --namespace placement-numa``
writes a sample policy file, ``oslopolicy-policy-generator`` the effective one).

The defaults behave as Placement's (checked against ``openstack-placement`` 16):

* most rules are ``rule:admin_or_service_api`` (``role:admin or role:service``), project scope;
* ``placement:reshaper:reshape`` is ``rule:service_api`` (``role:service``);
* ``placement:usages`` (``GET /usages?project_id=``) also admits a reader of that project;
* with ``[oslo_policy] enforce_new_defaults = False`` (the legacy defaults, oslo.policy's default)
  every base rule is OR-ed with its deprecated check ``role:admin``, so an admin may reshape and
  read any project's usages;
* ``[oslo_policy] enforce_scope`` (oslo.policy's default: on) refuses a token whose scope is not
  in a rule's ``scope_types`` (a system-scoped token gets 403 on every project-scoped rule).

Extensions of placement-numa get their own rules (``numa_distances``, ``POST
/allocation_candidates`` and its ``/claim``, ``/capacity`` and ``/defragment``, ``/reshaper/plan``,
``/reshaper/apply``, ``POST /resource_providers/batch``), all
``admin_or_service_api`` by default: the plan and apply endpoints are the operator's tool
(``placement-numa reshape``), unlike Placement's reshape, which only the compute service calls.
"""

from __future__ import annotations

import copy

from oslo_policy import policy

__all__ = [
    "ADMIN_OR_SERVICE",
    "ADMIN_OR_PROJECT_READER_OR_SERVICE",
    "METRICS",
    "SERVICE",
    "list_rules",
    "route_rules",
]

ADMIN_OR_SERVICE = "rule:admin_or_service_api"
SERVICE = "rule:service_api"
ADMIN_OR_PROJECT_READER_OR_SERVICE = "rule:admin_or_project_reader_or_service_api"

_PROJECT = ["project"]
METRICS = "placement:metrics"  # /metrics (api/observability.py); not an API route
# what placement:metrics guards: /metrics, then the fleet pages (api/routers/fleet_page.py)
_METRICS_PATHS = ("/metrics", "/numa/fleet", "/numa/fleet/hosts/{uuid}")

# Placement names its deprecated base check "rule:admin_api" (a name no policy file uses), so a
# file can only override the new names; kept as is for the same behaviour.
_LEGACY_ADMIN = policy.DeprecatedRule(
    name="rule:admin_api",
    check_str="role:admin",
    deprecated_reason=(
        "Placement's rules gained reader/service roles and scope types; the admin-only defaults "
        "apply only while [oslo_policy] enforce_new_defaults is False."
    ),
    deprecated_since="W",
)

_BASE_RULES: list[policy.RuleDefault] = [
    policy.RuleDefault(
        "admin_api", "role:admin", description="The admin role.", scope_types=_PROJECT
    ),
    policy.RuleDefault(
        "service_api",
        "role:service",
        description="The service role (Nova's compute and scheduler services).",
        scope_types=_PROJECT,
        deprecated_rule=_LEGACY_ADMIN,
    ),
    policy.RuleDefault(
        "admin_or_service_api",
        "role:admin or role:service",
        description="The admin or the service role: the default of most rules.",
        scope_types=_PROJECT,
        deprecated_rule=_LEGACY_ADMIN,
    ),
    policy.RuleDefault(
        "project_reader_api",
        "role:reader and project_id:%(project_id)s",
        description="A reader of the project the request is about.",
        deprecated_rule=_LEGACY_ADMIN,
    ),
    policy.RuleDefault(
        "admin_or_project_reader_or_service_api",
        "role:admin or rule:project_reader_api or role:service",
        description="The admin or service role, or a reader of the project concerned.",
        scope_types=_PROJECT,
        deprecated_rule=_LEGACY_ADMIN,
    ),
]

# (rule name, check string, description, [(method, path), ...])
_API_RULES: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    # resource providers
    (
        "placement:resource_providers:list",
        ADMIN_OR_SERVICE,
        "List resource providers.",
        [("GET", "/resource_providers")],
    ),
    (
        "placement:resource_providers:create",
        ADMIN_OR_SERVICE,
        "Create a resource provider.",
        [("POST", "/resource_providers")],
    ),
    (
        "placement:resource_providers:show",
        ADMIN_OR_SERVICE,
        "Show a resource provider.",
        [("GET", "/resource_providers/{uuid}")],
    ),
    (
        "placement:resource_providers:update",
        ADMIN_OR_SERVICE,
        "Update a resource provider.",
        [("PUT", "/resource_providers/{uuid}")],
    ),
    (
        "placement:resource_providers:delete",
        ADMIN_OR_SERVICE,
        "Delete a resource provider.",
        [("DELETE", "/resource_providers/{uuid}")],
    ),
    # inventories
    (
        "placement:resource_providers:inventories:list",
        ADMIN_OR_SERVICE,
        "List the inventories of a resource provider.",
        [("GET", "/resource_providers/{uuid}/inventories")],
    ),
    (
        "placement:resource_providers:inventories:create",
        ADMIN_OR_SERVICE,
        "Create one inventory of a resource provider.",
        [("POST", "/resource_providers/{uuid}/inventories")],
    ),
    (
        "placement:resource_providers:inventories:show",
        ADMIN_OR_SERVICE,
        "Show one inventory of a resource provider.",
        [("GET", "/resource_providers/{uuid}/inventories/{resource_class}")],
    ),
    (
        "placement:resource_providers:inventories:update",
        ADMIN_OR_SERVICE,
        "Replace the inventories of a resource provider, or update one.",
        [
            ("PUT", "/resource_providers/{uuid}/inventories"),
            ("PUT", "/resource_providers/{uuid}/inventories/{resource_class}"),
        ],
    ),
    (
        "placement:resource_providers:inventories:delete",
        ADMIN_OR_SERVICE,
        "Delete the inventories of a resource provider, or one of them.",
        [
            ("DELETE", "/resource_providers/{uuid}/inventories"),
            ("DELETE", "/resource_providers/{uuid}/inventories/{resource_class}"),
        ],
    ),
    # aggregates
    (
        "placement:resource_providers:aggregates:list",
        ADMIN_OR_SERVICE,
        "List the aggregates of a resource provider.",
        [("GET", "/resource_providers/{uuid}/aggregates")],
    ),
    (
        "placement:resource_providers:aggregates:update",
        ADMIN_OR_SERVICE,
        "Replace the aggregates of a resource provider.",
        [("PUT", "/resource_providers/{uuid}/aggregates")],
    ),
    # traits
    ("placement:traits:list", ADMIN_OR_SERVICE, "List traits.", [("GET", "/traits")]),
    (
        "placement:traits:show",
        ADMIN_OR_SERVICE,
        "Check that a trait exists.",
        [("GET", "/traits/{name}")],
    ),
    (
        "placement:traits:update",
        ADMIN_OR_SERVICE,
        "Create a custom trait.",
        [("PUT", "/traits/{name}")],
    ),
    (
        "placement:traits:delete",
        ADMIN_OR_SERVICE,
        "Delete a custom trait.",
        [("DELETE", "/traits/{name}")],
    ),
    (
        "placement:resource_providers:traits:list",
        ADMIN_OR_SERVICE,
        "List the traits of a resource provider.",
        [("GET", "/resource_providers/{uuid}/traits")],
    ),
    (
        "placement:resource_providers:traits:update",
        ADMIN_OR_SERVICE,
        "Replace the traits of a resource provider.",
        [("PUT", "/resource_providers/{uuid}/traits")],
    ),
    (
        "placement:resource_providers:traits:delete",
        ADMIN_OR_SERVICE,
        "Remove every trait of a resource provider.",
        [("DELETE", "/resource_providers/{uuid}/traits")],
    ),
    # resource classes
    (
        "placement:resource_classes:list",
        ADMIN_OR_SERVICE,
        "List resource classes.",
        [("GET", "/resource_classes")],
    ),
    (
        "placement:resource_classes:create",
        ADMIN_OR_SERVICE,
        "Create a custom resource class.",
        [("POST", "/resource_classes")],
    ),
    (
        "placement:resource_classes:show",
        ADMIN_OR_SERVICE,
        "Show a resource class.",
        [("GET", "/resource_classes/{name}")],
    ),
    (
        "placement:resource_classes:update",
        ADMIN_OR_SERVICE,
        "Create (1.7+) or rename (1.2-1.6) a custom resource class.",
        [("PUT", "/resource_classes/{name}")],
    ),
    (
        "placement:resource_classes:delete",
        ADMIN_OR_SERVICE,
        "Delete a custom resource class.",
        [("DELETE", "/resource_classes/{name}")],
    ),
    # allocations
    (
        "placement:allocations:manage",
        ADMIN_OR_SERVICE,
        "Write the allocations of several consumers at once.",
        [("POST", "/allocations")],
    ),
    (
        "placement:allocations:list",
        ADMIN_OR_SERVICE,
        "List the allocations of a consumer.",
        [("GET", "/allocations/{consumer_uuid}")],
    ),
    (
        "placement:allocations:update",
        ADMIN_OR_SERVICE,
        "Replace the allocations of a consumer.",
        [("PUT", "/allocations/{consumer_uuid}")],
    ),
    (
        "placement:allocations:delete",
        ADMIN_OR_SERVICE,
        "Delete the allocations of a consumer.",
        [("DELETE", "/allocations/{consumer_uuid}")],
    ),
    (
        "placement:resource_providers:allocations:list",
        ADMIN_OR_SERVICE,
        "List the allocations against a resource provider.",
        [("GET", "/resource_providers/{uuid}/allocations")],
    ),
    # usages
    (
        "placement:resource_providers:usages",
        ADMIN_OR_SERVICE,
        "Show the usages of a resource provider.",
        [("GET", "/resource_providers/{uuid}/usages")],
    ),
    (
        "placement:usages",
        ADMIN_OR_PROJECT_READER_OR_SERVICE,
        "Show the total usages of a project (the target's project_id is the query's).",
        [("GET", "/usages")],
    ),
    # allocation candidates and reshaper
    (
        "placement:allocation_candidates:list",
        ADMIN_OR_SERVICE,
        "List allocation candidates.",
        [("GET", "/allocation_candidates")],
    ),
    (
        "placement:reshaper:reshape",
        SERVICE,
        "Move inventories and allocations between providers in one transaction.",
        [("POST", "/reshaper")],
    ),
    # placement-numa extensions
    (
        "placement:allocation_candidates:flavor",
        ADMIN_OR_SERVICE,
        "Rank NUMA allocation candidates for a Nova flavor (extension).",
        [("POST", "/allocation_candidates")],
    ),
    (
        "placement:allocation_candidates:claim",
        ADMIN_OR_SERVICE,
        "Claim the best NUMA allocation candidate that still fits (extension).",
        [("POST", "/allocation_candidates/claim")],
    ),
    (
        "placement:allocation_candidates:capacity",
        ADMIN_OR_SERVICE,
        "Count how many more instances of each flavor fit, per host (extension; no writes).",
        [("POST", "/allocation_candidates/capacity")],
    ),
    (
        "placement:allocation_candidates:defragment",
        ADMIN_OR_SERVICE,
        "Plan guest moves after which a flavor fits (extension; answered, never applied).",
        [("POST", "/allocation_candidates/defragment")],
    ),
    (
        "placement:resource_providers:batch_create",
        ADMIN_OR_SERVICE,
        "Create many resource providers with their inventories and traits at once (extension).",
        [("POST", "/resource_providers/batch")],
    ),
    (
        "placement:resource_providers:numa_distances:show",
        ADMIN_OR_SERVICE,
        "Show the NUMA distance matrix of a compute node (extension).",
        [("GET", "/resource_providers/{uuid}/numa_distances")],
    ),
    (
        "placement:resource_providers:numa_distances:update",
        ADMIN_OR_SERVICE,
        "Replace or delete the NUMA distance matrix of a compute node (extension).",
        [
            ("PUT", "/resource_providers/{uuid}/numa_distances"),
            ("DELETE", "/resource_providers/{uuid}/numa_distances"),
        ],
    ),
    (
        "placement:reshaper:plan",
        ADMIN_OR_SERVICE,
        "Plan a reshape of a compute node onto its NUMA tree, or back (extension; no writes).",
        [("POST", "/reshaper/plan")],
    ),
    (
        "placement:reshaper:apply",
        ADMIN_OR_SERVICE,
        "Apply a reshape plan of a compute node (extension).",
        [("POST", "/reshaper/apply")],
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    """Every rule, base rules first (fresh objects: oslo.policy mutates what it registers)."""
    documented = [
        policy.DocumentedRuleDefault(
            name=name,
            check_str=check_str,
            description=description,
            operations=[{"method": method, "path": path} for method, path in operations],
            scope_types=_PROJECT,
        )
        for name, check_str, description, operations in _API_RULES
    ]
    metrics = policy.DocumentedRuleDefault(
        name=METRICS,
        check_str="rule:admin_api",
        description=(
            "Read the Prometheus metrics (extension): request and search latencies, pool use,"
            " the fleet's free capacity per NUMA cell; the fleet pages (/numa/fleet). [metrics]"
            " token is an alternative for scrapers (of /metrics only)."
        ),
        operations=[{"method": "GET", "path": path} for path in _METRICS_PATHS],
        scope_types=["project", "system"],
    )
    return [*copy.deepcopy(_BASE_RULES), *documented, metrics]


def route_rules() -> dict[tuple[str, str], str]:
    """``{(method, path template): rule name}`` for every API operation a rule documents (the
    fleet pages under ``placement:metrics``; ``/metrics`` itself is answered by middleware)."""
    found = {
        (method, path): name
        for name, _check, _description, operations in _API_RULES
        for method, path in operations
    }
    found.update({("GET", path): METRICS for path in _METRICS_PATHS[1:]})
    return found
