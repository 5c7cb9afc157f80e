"""Guest CPU lists as Nova writes them in extra specs (``hw:numa_cpus.N``,
``hw:cpu_dedicated_mask``): ``"0-3,^2,5"``.

Grammar (Nova's ``parse_cpu_spec``): comma-separated items, each a CPU number ``N``, a range
``N-M`` (inclusive) or an exclusion ``^N`` / ``^N-M`` applied after all inclusions.
"""

from __future__ import annotations

__all__ = ["CpuSpecError", "parse_cpu_spec", "format_cpu_set"]


class CpuSpecError(ValueError):
    """A malformed CPU list; the message says which item."""


def _parse_range(item: str) -> set[int]:
    if "-" in item:
        low_text, _, high_text = item.partition("-")
        try:
            low, high = int(low_text), int(high_text)
        except ValueError:
            raise CpuSpecError(f"invalid range expression {item!r}") from None
        if low < 0 or high < low:
            raise CpuSpecError(f"invalid range expression {item!r}")
        return set(range(low, high + 1))
    try:
        value = int(item)
    except ValueError:
        raise CpuSpecError(f"invalid CPU number {item!r}") from None
    if value < 0:
        raise CpuSpecError(f"invalid CPU number {item!r}")
    return {value}


def parse_cpu_spec(spec: str, universe: frozenset[int] | None = None) -> frozenset[int]:
    """``"0-3,^2"`` -> ``frozenset({0, 1, 3})``.

    With ``universe`` (all guest CPUs), a list made only of exclusions (``"^0-1"``, as
    ``hw:cpu_dedicated_mask`` allows) means "every CPU of the universe but these".
    Raises ``CpuSpecError`` for an empty list, a malformed item, or a list that excludes
    everything it includes.
    """
    included: set[int] = set()
    excluded: set[int] = set()
    items = [part.strip() for part in str(spec).split(",")]
    if not any(items):
        raise CpuSpecError("empty CPU list")
    for item in items:
        if not item:
            raise CpuSpecError(f"empty item in CPU list {spec!r}")
        if item.startswith("^"):
            excluded |= _parse_range(item[1:].strip())
        else:
            included |= _parse_range(item)
    if not included and universe is not None:
        included = set(universe)
    result = included - excluded
    if not result and included:
        raise CpuSpecError(f"CPU list {spec!r} excludes every CPU it includes")
    return frozenset(result)


def format_cpu_set(cpus: frozenset[int] | set[int]) -> str:
    """``{0, 1, 2, 5}`` -> ``"0-2,5"`` (for error messages)."""
    ordered = sorted(cpus)
    parts: list[str] = []
    start = prev = None
    for cpu in ordered:
        if start is None:
            start = prev = cpu
        elif prev is not None and cpu == prev + 1:
            prev = cpu
        else:
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = cpu
    if start is not None:
        parts.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(parts)
