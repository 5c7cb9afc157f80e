"""Observability: Prometheus metrics (``metrics``), what feeds them (``engine``: candidate
searches and fleet refreshes; ``pool``: database connections; ``fleet_gauges``: NUMA gauges from
the fleet snapshot) and logs with request ids (``logs``).

The HTTP side (``/metrics``, request ids, the access log, request metrics) is the ASGI
middleware ``placement_numa.api.observability``.
"""
