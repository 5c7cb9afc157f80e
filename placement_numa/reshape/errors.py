"""Errors of the reshape planner (pure; the service layer turns them into Placement errors).

::

    PlanError                 (ValueError)
    ├── TopologyInvalid       the target topology or the host is not usable (-> 400)
    └── ConsumerUnplaceable   a consumer's allocation fits on no NUMA cell (-> 409)
"""

from __future__ import annotations

__all__ = ["PlanError", "TopologyInvalid", "ConsumerUnplaceable"]


class PlanError(ValueError):
    """A reshape cannot be planned; ``str(error)`` is a sentence for the operator."""


class TopologyInvalid(PlanError):
    """The topology file or the host's provider tree cannot be reshaped as asked."""


class ConsumerUnplaceable(PlanError):
    """A consumer's allocation cannot be re-homed onto the target NUMA cells.

    ``consumer`` is its uuid; ``lacking`` maps each resource class (or ``"cells"`` when the
    consumer needs more distinct NUMA cells than the host has) to the amount missing on the
    best cell that was considered.
    """

    def __init__(self, message: str, *, consumer: str, lacking: dict[str, int]) -> None:
        super().__init__(message)
        self.consumer = consumer
        self.lacking = lacking
