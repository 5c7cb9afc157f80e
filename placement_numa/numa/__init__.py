"""The NUMA layer: flavor translation, cell sets, page sizes, distances, ranking (pure).

Nothing here imports FastAPI or SQLAlchemy. Data flow (drawn in full in
``doc/source/contributor/numa-pipeline.rst``)::

    Flavor + ImageProperties + NumaOptions --resolve.numa_request (checks: validation)-->
        NumaRequest (values: request) --translate.search_plan--> SearchPlan (GuestTopology ->
        NumaQuery per width x CPU split: request groups, same_subtree, group_policy, distinct
        anchors, fallback; the values and the explain string in numa_query)
    engine.search with search_hooks.NumaHooks (ranking: width, distance, spread, tie-break;
        accept: distinct cells, memory rule, device affinity) --> ranked candidates

Sources: the Nova spec "NUMA Topology with Resource Providers" (tree model and translations),
Nova's ``nova.virt.hardware`` semantics of the ``hw:`` extra specs, Kubernetes KEP-3545
(prefer closest NUMA nodes) and KEP-2902 (distribute CPUs across NUMA nodes).
"""
