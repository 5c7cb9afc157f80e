"""The NUMA layer: flavor translation, cell sets, page sizes, distances, ranking (pure).

Nothing here imports FastAPI or SQLAlchemy. Data flow::

    Flavor + ImageProperties --validation--> GuestTopology --translate--> NumaQuery
        (request groups, same_subtree, group_policy, distinct NUMA anchors, fallback query)
    candidates + HostTopology --ranking (width, distance, spread, tie-break)--> ordered candidates

Sources: the Nova spec "NUMA Topology with Resource Providers" (tree model and translations),
Nova's ``nova.virt.hardware`` semantics of the ``hw:`` extra specs, Kubernetes KEP-3545
(prefer closest NUMA nodes) and KEP-2902 (distribute CPUs across NUMA nodes).
"""
