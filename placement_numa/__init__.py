"""placement-numa: an OpenStack Placement compatible service that understands NUMA."""

__version__ = "0.1.0"
