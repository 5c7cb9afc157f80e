"""``NUMACandidatesFilter``: keep each host's NUMA-aligned candidates, in placement-numa's rank.

Enable in ``nova.conf``::

    [filter_scheduler]
    available_filters = nova.scheduler.filters.all_filters
    available_filters = placement_numa_nova.filters.NUMACandidatesFilter
    enabled_filters = ComputeFilter,...,NUMACandidatesFilter

Once per scheduling request (per instance of a multi-create, so later instances see the claims
of earlier ones), the filter sends the flavor and image to placement-numa's
``POST /allocation_candidates`` through Nova's own report client (its keystoneauth1 session and
``[placement]`` options), then for each host Placement's GET returned:

* no NUMA candidate for the host: the host fails;
* otherwise ``host_state.allocation_candidates`` becomes the host's candidates in rank order, so
  the scheduler claims the best-ranked aligned one (``allocation_candidates[0]``), and
  ``host_state.placement_numa_rank`` is set for ``weights.NUMARankWeigher``.

A request with extra request groups (ports with resource requests, PCI in Placement,
accelerators) keeps Nova's own candidates on the hosts that pass: the flavor body cannot express
those groups, and Nova maps them through the candidates' ``mappings``. A Placement without the
extension (404/405: OpenStack Placement) passes every host unchanged, with one warning; any other
refusal (400: an invalid flavor; 5xx) fails every host, as a flavor nothing can take.
Rebuilds (no candidates there) are not filtered (``RUN_ON_REBUILD = False``).

With the patch series (0002) the scheduler's own query is already placement-numa's: each host's
candidates arrive aligned, in rank order, each with ``numa["rank"]``. The filter then sends no
query of its own and only hands the rank of the host's first candidate to the weigher.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from nova.scheduler import filters

from placement_numa_nova.ranking import Ranking, scheduler_rank
from placement_numa_nova.request import candidates_body

__all__ = ["NUMACandidatesFilter"]

LOG = logging.getLogger(__name__)
MICROVERSION = "1.39"
PATH = "/allocation_candidates"


def _report_client() -> Any:
    from nova.scheduler.client import report

    return report.report_client_singleton()


def _limit() -> int:
    from nova.conf import CONF

    return int(CONF.scheduler.max_placement_results)


class NUMACandidatesFilter(filters.BaseHostFilter):
    """Replace each host's allocation candidates with placement-numa's NUMA-aligned ones."""

    RUN_ON_REBUILD = False

    def __init__(self) -> None:
        super().__init__()
        # (the RequestSpec, its instance uuid, the answer): one query per scheduling request
        self._last: tuple[weakref.ref[Any], str | None, Ranking | None] | None = None

    def host_passes(self, host_state: Any, spec_obj: Any) -> bool:
        """True when placement-numa has a NUMA candidate for ``host_state`` (see the module
        docstring for what is replaced)."""
        ranked = scheduler_rank(host_state)
        if ranked is not None:  # the scheduler asked placement-numa itself (patch 0002)
            host_state.placement_numa_rank = ranked
            return True
        ranking = self._ranking(spec_obj)
        if ranking is None:  # not placement-numa: stock behaviour
            return True
        mine = ranking.candidates.get(host_state.uuid)
        if not mine:
            LOG.debug("%s: no NUMA-aligned candidate in placement-numa's answer", host_state)
            return False
        host_state.placement_numa_rank = ranking.rank[host_state.uuid]
        if spec_obj.obj_attr_is_set("requested_resources") and spec_obj.requested_resources:
            return True  # Nova's candidates carry the extra groups' mappings
        host_state.allocation_candidates = [dict(c) for c in mine]
        LOG.debug(
            "%s: rank %d, %d NUMA candidate(s), best %s",
            host_state,
            ranking.rank[host_state.uuid],
            len(mine),
            ranking.numa.get(host_state.uuid),
        )
        return True

    def _ranking(self, spec_obj: Any) -> Ranking | None:
        instance_uuid = None
        if spec_obj.obj_attr_is_set("instance_uuid"):
            instance_uuid = spec_obj.instance_uuid
        if self._last is not None:
            ref, seen_uuid, ranking = self._last
            if ref() is spec_obj and seen_uuid == instance_uuid:
                return ranking
        ranking = self._ask(spec_obj)
        self._last = (weakref.ref(spec_obj), instance_uuid, ranking)
        return ranking

    def _ask(self, spec_obj: Any) -> Ranking | None:
        from keystoneauth1 import exceptions as ks_exc

        try:
            response = _report_client().post(
                PATH, candidates_body(spec_obj, _limit()), version=MICROVERSION
            )
        except ks_exc.HttpError as exc:  # an adapter that raises on errors
            response = exc.response
        except ks_exc.ClientException as exc:
            LOG.error("placement-numa could not be asked for NUMA candidates: %s", exc)
            return Ranking()
        if response.status_code in (404, 405):
            LOG.warning("Placement has no POST %s (not placement-numa): hosts pass unchanged", PATH)
            return None
        if response.status_code != 200:
            LOG.error(
                "placement-numa refused the NUMA query (%s): %s",
                response.status_code,
                response.text[:500],
            )
            return Ranking()
        return Ranking.from_answer(response.json())
