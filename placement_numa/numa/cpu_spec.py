"""The one CPU-set grammar of the project: Nova's ``parse_cpu_spec`` (``nova.virt.hardware``),
bounded before anything is expanded.

Used for guest CPU lists in extra specs (``hw:numa_cpus.N``, ``hw:cpu_dedicated_mask``), for the
agent's ``cpu_dedicated_set`` / ``cpu_shared_set`` and for sysfs ``cpulist`` files.

Grammar (behaviour of Nova's parser): a comma-separated list of items; blank items and the
blanks around an item are ignored (``"1,,2"``), so an empty spec is the empty set. Each item is

* ``N``      include CPU N;
* ``N-M``    include CPUs N to M inclusive (``N <= M``; split at the first ``-``, so ``"-1"`` and
  ``"1-2-3"`` are malformed);
* ``^N``     exclude CPU N;
* ``^N-M``   exclude CPUs N to M.

Numbers are what Python's ``int`` reads (Nova calls ``int``). Exclusions apply after every
inclusion, whatever their position (``"^8,4-15"`` equals ``"4-15,^8"``).

Bounds (issue 10: no request may size work without a limit): ``max_cpu`` is the highest CPU
number an inclusion may name. An inclusion beyond it raises ``CpuOutOfRange`` BEFORE any range is
expanded, so ``"0-99999999"`` costs nothing; exclusions beyond it are clipped (they can only
remove CPUs that are not there, so the result is Nova's); an inclusion beyond the bound that an
exclusion removes again (``"0-5,^4-5"`` with ``max_cpu=3``) is accepted, as Nova accepts it.
Without an explicit bound ``MAX_CPU_ID`` applies (Linux's largest ``NR_CPUS`` is 8192).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "MAX_CPU_ID",
    "CpuSpecError",
    "CpuOutOfRange",
    "parse_cpu_spec",
    "format_cpu_spec",
    "format_cpu_set",
]

MAX_CPU_ID = 16383


class CpuSpecError(ValueError):
    """A CPU spec that does not follow the grammar; the message quotes the offending item."""


class CpuOutOfRange(CpuSpecError):
    """An included CPU number above the bound: ``cpu`` (the first found) and ``max_cpu``."""

    def __init__(self, cpu: int, max_cpu: int) -> None:
        self.cpu = cpu
        self.max_cpu = max_cpu
        super().__init__(f"CPU number {cpu} is larger than max {max_cpu}")


def _number(text: str, item: str, what: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise CpuSpecError(f"invalid {what} expression {item!r}") from None


def _first_uncovered(ranges: list[tuple[int, int]], covers: list[tuple[int, int]]) -> int | None:
    """The smallest number of ``ranges`` (inclusive pairs) outside every pair of ``covers``
    (interval arithmetic: nothing is expanded)."""
    merged: list[list[int]] = []
    for start, end in sorted(covers):
        if merged and start <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    best: int | None = None
    for start, end in ranges:
        point = start
        for low, high in merged:
            if high < point:
                continue
            if low > point:
                break
            point = high + 1
        if point <= end and (best is None or point < best):
            best = point
    return best


def parse_cpu_spec(spec: str, *, max_cpu: int = MAX_CPU_ID) -> frozenset[int]:
    """``"0-3,^2"`` -> ``frozenset({0, 1, 3})`` (Nova's ``parse_cpu_spec``, bounded).

    ``max_cpu``: the highest CPU an inclusion may name (e.g. ``vcpus - 1`` for a guest list).
    Raises ``CpuOutOfRange`` (a ``CpuSpecError``) for an inclusion above it, checked before
    expanding; ``CpuSpecError`` for a malformed item (``"a"``, ``"3-"``, ``"^"``, ``"-1"``) or a
    reversed range (``"7-3"``). Work is linear in the length of ``spec`` plus ``max_cpu``.
    """
    included: list[tuple[int, int]] = []
    excluded: list[tuple[int, int]] = []
    for raw in str(spec).split(","):
        item = raw.strip()
        if not item:
            continue
        first, sep, last = item.partition("-")
        if sep:
            reject = first.startswith("^")
            if reject:
                first = first[1:]
            start = _number(first, item, "range")
            end = _number(last, item, "range")
            if start > end or start < 0:
                raise CpuSpecError(f"invalid range expression {item!r}")
        elif item.startswith("^"):
            reject = True
            start = end = _number(item[1:], item, "exclusion")
        else:
            reject = False
            start = end = _number(item, item, "inclusion")
        if start < 0:
            raise CpuSpecError(f"invalid CPU number in {item!r}")
        (excluded if reject else included).append((start, end))
    beyond = [(max(start, max_cpu + 1), end) for start, end in included if end > max_cpu]
    if beyond:
        cpu = _first_uncovered(beyond, excluded)
        if cpu is not None:
            raise CpuOutOfRange(cpu, max_cpu)
    cpus: set[int] = set()
    for start, end in included:
        cpus.update(range(start, min(end, max_cpu) + 1))
    for start, end in excluded:
        if start <= max_cpu:
            cpus.difference_update(range(start, min(end, max_cpu) + 1))
    return frozenset(cpus)


def format_cpu_spec(cpus: Iterable[int]) -> str:
    """Format CPU ids as the shortest spec of ranges, ascending: ``{0,1,2,5}`` -> ``"0-2,5"``.

    The empty set formats as ``""``; ``parse_cpu_spec(format_cpu_spec(s)) == s`` for any set of
    non-negative ints up to ``MAX_CPU_ID``.
    """
    ordered = sorted(set(cpus))
    parts: list[str] = []
    index = 0
    while index < len(ordered):
        start = end = ordered[index]
        while index + 1 < len(ordered) and ordered[index + 1] == end + 1:
            index += 1
            end = ordered[index]
        parts.append(str(start) if start == end else f"{start}-{end}")
        index += 1
    return ",".join(parts)


format_cpu_set = format_cpu_spec
