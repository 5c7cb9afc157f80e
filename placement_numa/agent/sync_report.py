"""``SyncReport``: what one agent run did, written by ``agent.sync`` and the steps it calls
(``agent.distances``, ``agent.reshape``) and read by ``placement-numa agent``."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

__all__ = ["SyncReport"]

LOG = logging.getLogger("placement_numa.agent")


@dataclass
class SyncReport:
    """What one run did: ``changes`` (one line per write), ``kept`` (vanished providers left in
    place because of allocations), ``notes`` (skipped steps), ``writes`` (requests sent)."""

    changes: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    writes: int = 0

    def change(self, text: str) -> None:
        """Record a write the run made (also logged at INFO)."""
        self.changes.append(text)
        LOG.info("%s", text)

    def note(self, text: str) -> None:
        """Record a step the run skipped or could not do (also logged at WARNING)."""
        self.notes.append(text)
        LOG.warning("%s", text)
