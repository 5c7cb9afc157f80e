"""Upstream Placement's ``[placement_database]`` options that placement-numa does not honour.

Every option Placement 16 documents in that section (``placement/conf/database.py``) is either
honoured (a ``Settings`` field: ``connection``, ``connection_parameters``,
``connection_recycle_time``, ``max_pool_size``, ``max_overflow``, ``pool_timeout``,
``sync_on_startup``, ``db_max_retries``, ``db_retry_interval``, ``db_max_retry_interval``) or
listed in ``IGNORED`` with the reason, and a start that finds one set in the file logs one
warning naming them all (``warn_ignored_options``), so an operator's placement.conf works as
written and nothing is silently dropped.
"""

from __future__ import annotations

import logging
from pathlib import Path

from oslo_config import cfg

__all__ = ["IGNORED", "ignored_options", "warn_ignored_options"]

LOG = logging.getLogger("placement_numa.db")

# option -> why it has no effect here
IGNORED: dict[str, str] = {
    "slave_connection": "reads go to the primary connection",
    "sqlite_synchronous": "SQLite runs with synchronous=NORMAL in WAL mode",
    "mysql_sql_mode": "the server's sql_mode is used",
    "mysql_enable_ndb": "MySQL NDB Cluster is not supported",
    "mysql_wsrep_sync_wait": "Galera reads follow the server's wsrep_sync_wait",
    "max_retries": "a start fails at once when the database is unreachable",
    "retry_interval": "a start fails at once when the database is unreachable",
    "connection_debug": "SQL is logged with the placement_numa.db logger at debug level",
    "connection_trace": "SQL is logged with the placement_numa.db logger at debug level",
    "db_inc_retry_interval": "retry intervals always double",
    "use_db_reconnect": "a lost connection is replaced on the next request",
    "pool_pre_ping": "idle connections are pinged on checkout (db/resilience.py)",
}


def ignored_options(config_file: Path | str | None) -> list[str]:
    """The ``IGNORED`` options set in ``[placement_database]`` of ``config_file`` (sorted;
    empty without a file). Raises ``conf.ConfigFileError`` when the file cannot be read."""
    if config_file is None:
        return []
    from placement_numa.conf import parse_config

    conf = parse_config(config_file, [("placement_database", [cfg.StrOpt(n) for n in IGNORED])])
    return sorted(n for n in IGNORED if getattr(conf.placement_database, n) is not None)


def warn_ignored_options(config_file: Path | str | None) -> list[str]:
    """Log one warning naming the ignored options ``config_file`` sets; returns them."""
    names = ignored_options(config_file)
    if names:
        LOG.warning(
            "[placement_database] options without effect in placement-numa: %s",
            "; ".join(f"{n} ({IGNORED[n]})" for n in names),
        )
    return names
