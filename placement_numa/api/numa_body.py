"""The one entry point of the NUMA extension's bodies (``POST /allocation_candidates`` and
``POST /allocation_candidates/claim``): the validated body -> what the services search.

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
from placement_numa.numa.plan import SearchPlan, search_plan
from placement_numa.numa.request import numa_request

__all__ = ["searched"]


def searched(
    data: NumaCandidatesBody, state: Any, limits: RequestLimits
) -> SearchPlan | CandidateQuery:
    """The ``SearchPlan`` of the body's flavor or the ``CandidateQuery`` of its query, checked
    against ``limits``; ``state``: the application's ``app.state`` (for the alias table).
    Raises ``InvalidFlavor``, ``InvalidAliasConfig``, ``BadRequest`` (400) and
    ``LimitExceeded`` (400)."""
    if data.flavor is None:
        query = query_from_json(data.query or {})
        check_candidate_query(query, limits)
        return query
    flavor, image = data.flavor_and_image()
    options = data.numa_options()
    plan = search_plan(numa_request(flavor, image, options, aliases=aliases_for(state, flavor)))
    check_candidate_query(plan.main.query, limits)
    return plan
