"""The compute agent: discover a Linux host's NUMA topology and keep its provider tree in sync.

Pure parts (no FastAPI, no SQLAlchemy): ``cpuset`` (Nova's CPU spec syntax), ``sysfs`` (host
discovery), ``config`` (settings in Nova's terms, validated against the host), ``desired_tree``
(the provider tree the host should have). Edges: ``client`` (a typed httpx client for the
Placement API) and ``sync`` (the reconciliation of the desired tree with Placement).
"""
