"""CPU seconds of processes, read from ``/proc`` (Linux): a service's process tree, the
PostgreSQL backends serving one database, this process.

    before = cpu_split(server_pid, "pn_writes_http_19500")
    ...  # the measured work
    after = cpu_split(server_pid, "pn_writes_http_19500")
    service, postgres, client = (b - a for a, b in zip(before, after))

CPU time, unlike wall time, barely moves with the load of a shared machine: read it beside the
wall figures.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

__all__ = ["cpu_seconds", "descendants", "backends_of", "cpu_split"]

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # fields from the 3rd (state) on


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of ``pids`` (processes gone meanwhile count 0)."""
    total = 0
    for pid in pids:
        fields = _stat(pid)
        if fields is not None:
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _TICK


def _all_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    children: dict[int, list[int]] = {}
    for p in _all_pids():
        fields = _stat(p)
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(p)
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def backends_of(database: str) -> list[int]:
    """The PostgreSQL backends connected to ``database`` (their title names it)."""
    found = []
    for p in _all_pids():
        try:
            title = Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if title.startswith("postgres:") and f" {database} " in title:
            found.append(p)
    return found


def cpu_split(server_pid: int, database: str) -> tuple[float, float, float]:
    """``(service, postgres, this process)`` CPU seconds so far: the process tree of
    ``server_pid``, the backends of ``database``, and ``time.process_time()``."""
    return (
        cpu_seconds(descendants(server_pid)),
        cpu_seconds(backends_of(database)),
        time.process_time(),
    )
