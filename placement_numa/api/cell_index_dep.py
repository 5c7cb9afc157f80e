"""``CellIndexDep``: the process's NUMA cell index cache, created on first use on ``app.state``.

The cache (``services.numa_candidates.CellIndexCache``) belongs to the NUMA service that reads
it; it is keyed by what the engine publishes (``FleetSnapshot.revision``), so it lives beside
the engine on ``app.state.cell_index``, never inside it.
"""

from __future__ import annotations

import threading
from typing import Annotated, Any

from fastapi import Depends, Request

from placement_numa.services.numa_candidates import CellIndexCache

__all__ = ["CellIndexDep", "cell_index_for_state"]

_CREATE = threading.Lock()


def cell_index_for_state(state: Any) -> CellIndexCache:
    """The cell index cache on ``state`` (an app's ``app.state``), created on first use."""
    cache: CellIndexCache | None = getattr(state, "cell_index", None)
    if cache is None:
        with _CREATE:
            cache = getattr(state, "cell_index", None)
            if cache is None:
                cache = state.cell_index = CellIndexCache()
    return cache


async def get_cell_index(request: Request) -> CellIndexCache:
    """The app's cell index cache (see the module docstring; ``async``: it reads nothing, so
    no thread-pool round trip)."""
    return cell_index_for_state(request.app.state)


CellIndexDep = Annotated[CellIndexCache, Depends(get_cell_index)]
