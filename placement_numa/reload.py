"""Reload policy and logging in a running process (``kill -HUP``, oslo.service's convention).

``placement-numa serve`` with one worker calls ``reload_configuration(app)`` on SIGHUP, off the
event loop: requests in flight and arriving meanwhile are served throughout (the enforcer is
swapped in one assignment). With several workers uvicorn's supervisor answers SIGHUP itself:
it starts a replacement for each worker, waits until it is ready, then retires the old one, and
each new worker reads placement.conf afresh. Under a WSGI server (gunicorn, uWSGI, mod_wsgi)
SIGHUP belongs to that server, which restarts its workers the same way.

What is re-read: placement.conf (``ConfigOpts.reload_config_files``), the policy file (a new
enforcer, so a changed ``[oslo_policy] policy_file`` path takes effect too) and the logging
options. Other options (database, listen address, Keystone) need a restart. A reload that fails
(an unparsable file, a policy file that does not load) is logged and changes nothing.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["reload_configuration", "reload_in_background"]

LOG = logging.getLogger("placement_numa.reload")


def reload_configuration(app: FastAPI) -> bool:
    """Re-read placement.conf, the policy file and the logging options of ``app``.

    Returns ``True`` when everything was reloaded, ``False`` when a problem was logged and the
    previous configuration kept. Never raises.
    """
    from placement_numa.api.policy import make_enforcer
    from placement_numa.service_logging import setup_service_logging
    from placement_numa.settings import Settings

    settings = app.state.settings
    conf = app.state.conf
    try:
        if settings.config_file is not None and not conf.reload_config_files():
            raise ValueError(f"{settings.config_file} could not be re-read")
        enforcer = make_enforcer(conf)
        fresh = Settings(config_file=settings.config_file)
    except Exception as exc:  # any problem: keep serving with what we have
        LOG.error("reload refused, configuration unchanged: %s", exc)
        return False
    app.state.enforcer = enforcer
    try:  # oslo.log from the re-read [DEFAULT] (a new log_file, debug, use_json, ...)
        setup_service_logging(fresh, conf)
    except Exception as exc:  # e.g. a log file that cannot be opened: keep the old handlers
        LOG.error("logging not reloaded: %s", exc)
        return False
    LOG.info("reloaded configuration, policy and logging (SIGHUP)")
    return True


def reload_in_background(app: FastAPI) -> None:
    """``reload_configuration(app)`` in a new daemon thread (safe to call from a signal
    handler: the event loop is not blocked while files are read)."""
    threading.Thread(
        target=reload_configuration, args=(app,), name="placement-numa-reload", daemon=True
    ).start()
