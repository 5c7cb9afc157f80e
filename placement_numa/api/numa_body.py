"""The one entry point of the NUMA extension's bodies (``POST /allocation_candidates`` and
``POST /allocation_candidates/claim``): the validated body -> what the services search and the
request's ``NumaOptions`` (built here, once, from the body's fields).

* flavor form: ``numa_request`` (the flavor, image, options and the application's ``[pci]
  alias`` table) -> ``search_plan`` (``numa/plan.py``);
* query form: ``query_from_json`` (the GET parser's checks, ``api/candidate_query.py``).

Either way the query is held to the same caps as ``GET /allocation_candidates``
(``check_candidate_query``: ``placement.limit.request_groups`` /
``placement.limit.resource_classes``); for a flavor, its translated query.
"""

from __future__ import annotations

from typing import Any

from placement_numa.api.candidate_query import query_from_json
from placement_numa.api.limits import RequestLimits, check_candidate_query
from placement_numa.api.pci_aliases import aliases_for
from placement_numa.api.schemas.numa_candidates import NumaCandidatesBody
from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.plan import SearchPlan, search_plan
from placement_numa.numa.request import NumaOptions, numa_request

__all__ = ["searched"]


def searched(
    data: NumaCandidatesBody, state: Any, limits: RequestLimits
) -> tuple[SearchPlan | CandidateQuery, NumaOptions]:
    """What the body asks, for the services: the ``SearchPlan`` of its flavor or the
    ``CandidateQuery`` of its query, checked against ``limits``, and the request's
    ``NumaOptions`` (whole). ``state``: the application's ``app.state`` (for the alias table).
    Raises ``InvalidFlavor``, ``InvalidAliasConfig``, ``BadRequest`` (400) and
    ``LimitExceeded`` (400)."""
    options = NumaOptions(
        limit=data.limit,
        prefer_closest=data.prefer_closest_numa_nodes,
        distribute=data.distribute_cpus_across_numa,
        every_ordering=data.every_ordering,
        diversify=data.diversify,
        topology_policy=data.topology_policy,
    )
    if data.flavor is None:
        query = query_from_json(data.query or {})
        check_candidate_query(query, limits)
        return query, options
    flavor = Flavor(**data.flavor.model_dump())
    image = ImageProperties(data.image_properties()) if data.image else None
    plan = search_plan(numa_request(flavor, image, options, aliases=aliases_for(state, flavor)))
    check_candidate_query(plan.main.query, limits)
    return plan, options
