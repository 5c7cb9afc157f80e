"""Logging of a service process from its ``Settings``: placement.conf's oslo.log options
(``observability.logs``) plus the deprecated ``PLACEMENT_NUMA_LOG_JSON`` /
``PLACEMENT_NUMA_LOG_LEVEL`` settings. Its own module so that ``observability.logs`` imports
neither the settings nor ``conf``.
"""

from __future__ import annotations

from oslo_config import cfg

from placement_numa.observability.logs import setup_logging
from placement_numa.settings import Settings, load_config

__all__ = ["setup_service_logging"]


def setup_service_logging(settings: Settings, conf: cfg.ConfigOpts | None = None) -> cfg.ConfigOpts:
    """Set up logging for a service process from ``settings.config_file`` (or ``conf``, the
    ``ConfigOpts`` already loaded from it), with the deprecated ``PLACEMENT_NUMA_LOG_JSON`` /
    ``PLACEMENT_NUMA_LOG_LEVEL`` when they were given. Returns the ``ConfigOpts`` (keep it for
    ``reload_logging``). Raises ``placement_numa.conf.ConfigFileError`` for a missing file and
    as ``setup_logging`` otherwise."""
    if conf is None:
        conf = load_config(settings.config_file)
    given = settings.model_fields_set
    setup_logging(
        conf,
        json_lines=settings.log_json if "log_json" in given else None,
        level=settings.log_level if "log_level" in given else None,
    )
    return conf
