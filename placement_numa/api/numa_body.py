"""The one entry point of the NUMA extension's bodies (``POST /allocation_candidates`` and
``POST /allocation_candidates/claim``): the validated body -> what the services search and the
request's ``NumaOptions`` (built here, once, from the body's fields).

* flavor form: ``numa_request`` (the flavor, image, options and the application's ``[pci]
  alias`` table) -> ``search_plan`` (``numa/translate.py``);
* query form: ``query_from_json`` (the GET parser's checks, ``api/candidate_query.py``).

Either way the query is held to the same caps as ``GET /allocation_candidates``
(``check_candidate_query``: ``placement.limit.request_groups`` /
``placement.limit.resource_classes``); for a flavor, its translated query.

The ``[pci] alias`` table of a flavor that asks for devices (``aliases_for``, also used by the
other flavor routes): the option is Nova's (a ``MultiStrOpt``: one JSON alias per line,
``numa.pci_alias``), defined with placement-numa's other options (``conf.PCI_OPTS``, in the
oslo-config-generator output); it is registered on ``app.state.conf`` (the oslo.config object of
``settings.config_file``) and parsed once per application, on the first flavor that asks for a
device. A configuration line that is not Nova's format answers 400
``placement_numa.pci_alias.invalid`` naming the line to such a flavor (the service itself keeps
serving every other request).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placement_numa.api.candidate_query import query_from_json
from placement_numa.api.limits import RequestLimits, check_candidate_query
from placement_numa.api.schemas.numa_candidates import NumaCandidatesBody
from placement_numa.domain.request_groups import CandidateQuery
from placement_numa.errors import BadRequest
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.pci_alias import ALIAS_SPEC, AliasConfigError, PciAlias, parse_aliases
from placement_numa.numa.request import NumaOptions
from placement_numa.numa.resolve import numa_request
from placement_numa.numa.translate import SearchPlan, search_plan

__all__ = ["InvalidAliasConfig", "aliases_for", "searched"]


_STATE_KEY = "pci_aliases"


class InvalidAliasConfig(BadRequest):
    """400 ``placement_numa.pci_alias.invalid``: a ``[pci] alias`` line is not Nova's format."""

    default_code = "placement_numa.pci_alias.invalid"


def _load(conf: Any) -> dict[str, PciAlias]:
    """The parsed ``[pci] alias`` of ``conf`` (registered by ``settings.load_config`` with every
    other option: declared once, in ``conf.PCI_OPTS``)."""
    if conf is None:
        return {}
    return parse_aliases(conf.pci.alias or [])


def aliases_for(state: Any, flavor: Flavor) -> Mapping[str, PciAlias] | None:
    """The alias table of the application whose ``app.state`` is ``state`` when ``flavor``
    asks for devices (``None`` otherwise: nothing to read). Raises ``InvalidAliasConfig``."""
    if flavor.spec(ALIAS_SPEC) is None:
        return None
    cached = getattr(state, _STATE_KEY, None)
    if cached is None:
        try:
            cached = _load(getattr(state, "conf", None))
        except AliasConfigError as exc:
            raise InvalidAliasConfig(str(exc)) from None
        setattr(state, _STATE_KEY, cached)
    return cached


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
