"""Nova 34's scheduler steps with placement-numa's plugins, run with the Python of a Nova
virtualenv (``PLACEMENT_NUMA_NOVA_PYTHON``; ``integrations/nova`` on ``PYTHONPATH``) against a
live placement-numa. JSON in on stdin, JSON out on stdout. Stdlib, Nova and the plugins only.

Input::

    {"url": "http://127.0.0.1:port", "flavor": {"vcpus", "memory_mb", "root_gb",
     "extra_specs"}, "image": {glance properties}, "instance_uuid": "...", "claim": bool,
     "more_instances": ["uuid", ...] (a multi-create: the same hosts and filter, per instance),
     "requested_groups": [{"requester_id", "resources"}, ...] (extra groups, as ports add),
     "scheduler_posts": bool (candidates from placement-numa's POST with numa.rank, as the
     patch series' scheduler gets them, instead of the GET)}

What runs, all Nova's own classes: the report client (keystoneauth1 session with a token
endpoint, the way ``[placement]`` would build it) as the singleton the filter uses;
``ResourceRequest.from_request_spec`` and ``get_allocation_candidates`` (the scheduler's GET);
``HostState`` objects carrying the candidates of their compute node as the scheduler's
``hosts_with_alloc_reqs`` does; ``HostFilterHandler`` with ``NUMACandidatesFilter``;
``HostWeightHandler`` with ``NUMARankWeigher``; ``claim_resources`` of the first candidate of the
best host, as ``SchedulerManager._schedule`` does.

Output::

    {"get_hosts": [compute nodes of Nova's GET], "nova_candidates": {name: n (candidates Nova
     keyed to the compute node: 0 when nothing is allocated from the root)},
     "passed": [names], "weighed": [names, best first], "posts": n (POSTs to placement-numa),
     "claimed": bool, "host": name | null,
     "allocations": {rp uuid: {rc: n}} | null, "candidates": {name: [allocations, ...]},
     "more": [{"passed", "weighed", "claimed", "host", "allocations", "candidates"}, ...]}
"""

from __future__ import annotations

import collections
import copy
import json
import sys
import warnings
from typing import Any


def main() -> None:
    warnings.simplefilter("ignore")
    request = json.load(sys.stdin)
    from keystoneauth1 import adapter, session, token_endpoint
    from nova import context as nova_context
    from nova import objects
    from nova.conf import CONF
    from nova.scheduler import host_manager, utils
    from nova.scheduler.client import report
    from placement_numa_nova.filters import NUMACandidatesFilter

    CONF([], project="nova")
    objects.register_all()
    auth = token_endpoint.Token(request["url"], "admin")
    placement = adapter.Adapter(  # as Nova builds it: status codes checked by the caller
        session.Session(auth=auth), service_type="placement", raise_exc=False
    )
    client = report.SchedulerReportClient(adapter=placement)
    report.PLACEMENTCLIENT = client  # the singleton the filter asks for
    ctx = nova_context.get_admin_context()
    flavor = request["flavor"]
    spec = objects.RequestSpec(
        flavor=objects.Flavor(
            name="f",
            flavorid="f",
            vcpus=flavor["vcpus"],
            memory_mb=flavor["memory_mb"],
            root_gb=flavor.get("root_gb", 0),
            ephemeral_gb=0,
            swap=0,
            extra_specs=flavor.get("extra_specs", {}),
        ),
        image=objects.ImageMeta.from_dict({"properties": request.get("image", {})}),
        instance_uuid=request["instance_uuid"],
        project_id="00000000-0000-0000-0000-00000000000a",
        user_id="00000000-0000-0000-0000-00000000000b",
        num_instances=1,
        is_bfv=False,
        requested_resources=[
            objects.RequestGroup(
                requester_id=group["requester_id"],
                resources=group["resources"],
                use_same_provider=True,
            )
            for group in request.get("requested_groups", [])
        ],
        scheduler_hints={},
    )
    resources = utils.ResourceRequest.from_request_spec(spec)
    alloc_reqs, summaries, version = client.get_allocation_candidates(ctx, resources)
    if request.get("scheduler_posts"):  # the patch series' 0002: the scheduler's query is the POST
        alloc_reqs, summaries = _scheduler_post(client, spec)
    posts: list[str] = []
    post = client.post

    def counted_post(url: str, data: Any, **kwargs: Any) -> Any:
        posts.append(url)
        return post(url, data, **kwargs)

    client.post = counted_post  # count the filter's queries (once per request)
    # As SchedulerManager: candidates keyed by every provider they allocate from (a defaultdict),
    # one HostState per compute node among the providers of the summaries.
    by_rp: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for candidate in alloc_reqs or []:
        for rp in candidate["allocations"]:
            by_rp[rp].append(candidate)
    names = {
        p["uuid"]: p["name"]
        for p in client.get("/resource_providers", version="1.14").json()["resource_providers"]
        if p["uuid"] == p["root_provider_uuid"]
    }
    hosts = []
    for uuid, name in sorted(names.items(), key=lambda item: item[1]):
        if uuid not in (summaries or {}):
            continue
        host = host_manager.HostState(name, name, "cell1")
        host.uuid = uuid
        host.allocation_candidates = copy.deepcopy(by_rp[uuid])
        hosts.append(host)
    get_hosts = [h.host for h in hosts]

    numa_filter = NUMACandidatesFilter()  # one per scheduler process, as Nova's host manager
    first = _schedule(
        ctx, client, spec, hosts, numa_filter, request["instance_uuid"], request, version
    )
    later = [  # a multi-create: the same host states and filter, instance by instance
        _schedule(ctx, client, spec, hosts, numa_filter, uuid, request, version)
        for uuid in request.get("more_instances", [])
    ]
    nova_candidates = {h.host: len(by_rp[h.uuid]) for h in hosts}
    json.dump(
        {
            "get_hosts": get_hosts,
            "nova_candidates": nova_candidates,
            "posts": len(posts),
            **first,
            "more": later,
        },
        sys.stdout,
    )


def _scheduler_post(client: Any, spec: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Candidates and summaries as the patch series' scheduler gets them: placement-numa's
    ranked answer, ``numa["rank"]`` (0 = best) kept on each candidate until the claim."""
    from placement_numa_nova.request import candidates_body

    body = candidates_body(spec, 1000)
    data = client.post("/allocation_candidates", body, version="1.39").json()
    for rank, candidate in enumerate(data["allocation_requests"]):
        candidate["numa"] = dict(candidate.get("numa") or {}, rank=rank)
    return data["allocation_requests"], data["provider_summaries"]


def _schedule(
    ctx: Any, client: Any, spec: Any, hosts: list[Any], numa_filter: Any, instance_uuid: str,
    request: dict[str, Any], version: str,
) -> dict[str, Any]:  # fmt: skip
    """Filter, weigh and claim for one instance, as ``SchedulerManager._schedule`` does."""
    from nova.scheduler import utils
    from nova.scheduler.filters import HostFilterHandler
    from nova.scheduler.weights import HostWeightHandler
    from placement_numa_nova.weights import NUMARankWeigher

    spec.instance_uuid = instance_uuid
    passed = list(HostFilterHandler().get_filtered_objects([numa_filter], hosts, spec, 0) or [])
    weighed = HostWeightHandler().get_weighed_objects([NUMARankWeigher()], passed, spec)
    best = weighed[0].obj if weighed else None
    claimed = False
    if best is not None and request.get("claim"):
        chosen = dict(best.allocation_candidates[0])
        chosen.pop("numa", None)  # the patch series' claim drops placement-numa's block
        claimed = utils.claim_resources(
            ctx, client, spec, instance_uuid, chosen, allocation_request_version=version,
        )  # fmt: skip
    if claimed:  # as _schedule does next: every extra group maps to the claimed candidate
        for group in spec.requested_resources:
            group.provider_uuids = best.allocation_candidates[0]["mappings"][group.requester_id]
    held = None
    if claimed:
        held = client.get(f"/allocations/{instance_uuid}", version="1.28").json()
    return {
        "passed": [h.host for h in passed],
        "weighed": [w.obj.host for w in weighed],
        "claimed": bool(claimed),
        "host": best.host if best is not None else None,
        "allocations": None
        if held is None
        else {rp: a["resources"] for rp, a in held["allocations"].items()},
        "candidates": {h.host: [c["allocations"] for c in h.allocation_candidates] for h in passed},
    }


if __name__ == "__main__":
    main()
