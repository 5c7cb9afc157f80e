"""Nova's CPU spec syntax: parse and format sets of host CPU ids.

Grammar (as ``nova.virt.hardware.parse_cpu_spec`` accepts, and as sysfs ``cpulist`` files use
without exclusions): a comma-separated list of items, each one of

* ``N``        one CPU;
* ``N-M``      the CPUs N to M inclusive (N <= M);
* ``^N``       exclude CPU N;
* ``^N-M``     exclude the CPUs N to M.

Exclusions apply after all inclusions, whatever their position (``^8,4-15`` equals
``4-15,^8``). Blank items (``1,,2``) and surrounding whitespace are ignored; an empty spec is the
empty set.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["CpuSpecError", "parse_cpu_spec", "format_cpu_spec"]


class CpuSpecError(ValueError):
    """A CPU spec that does not follow the grammar; the message names the offending item."""


def _parse_int(text: str, item: str, spec: str) -> int:
    text = text.strip()
    if not text.isdigit():
        raise CpuSpecError(
            f"invalid CPU spec {spec!r}: item {item!r} is not a CPU number, a range N-M or an "
            f"exclusion ^N"
        )
    return int(text)


def parse_cpu_spec(spec: str) -> frozenset[int]:
    """Parse ``spec`` (e.g. ``"4-15,^8"``) into the set of CPU ids it names.

    Raises ``CpuSpecError`` for a malformed item (``"a"``, ``"3-"``, ``"^"``) or a reversed range
    (``"7-3"``); the message quotes the item.
    """
    included: set[int] = set()
    excluded: set[int] = set()
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        target = included
        body = item
        if body.startswith("^"):
            target = excluded
            body = body[1:]
        if "-" in body:
            first, _, last = body.partition("-")
            start = _parse_int(first, item, spec)
            end = _parse_int(last, item, spec)
            if start > end:
                raise CpuSpecError(
                    f"invalid CPU spec {spec!r}: range {item!r} ends before it starts"
                )
            target.update(range(start, end + 1))
        else:
            target.add(_parse_int(body, item, spec))
    return frozenset(included - excluded)


def format_cpu_spec(cpus: Iterable[int]) -> str:
    """Format CPU ids as the shortest spec of ranges, ascending: ``{0,1,2,5}`` -> ``"0-2,5"``.

    The empty set formats as ``""``; ``parse_cpu_spec(format_cpu_spec(s)) == s`` for any set of
    non-negative ints.
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
