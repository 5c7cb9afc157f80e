"""Memory page sizes: parsing ``hw:mem_page_size`` and the traits of page-size providers.

Model (Nova spec "NUMA Topology with Resource Providers"): each NUMA cell has one child provider
per page size, with ``MEMORY_MB`` inventory whose ``step_size`` is the page size in MiB (1 for
4 KiB pages, so small pages allocate by the MiB), and two traits:

* ``MEMORY_PAGE_SIZE_SMALL`` (the kernel's default pages) or ``MEMORY_PAGE_SIZE_LARGE``;
* ``CUSTOM_MEMORY_PAGE_SIZE_<KiB>``: the size in KiB (``_4``, ``_2048``, ``_1048576``).

Request values (Nova's ``hw:mem_page_size`` / image ``hw_mem_page_size``): ``small``,
``large``, ``any``, a number of KiB (``2048``) or a size with a binary unit (``2MB``, ``2MiB``,
``1GB``, ``1048576KB``; K/M/G/T are powers of 1024 as in oslo's ``string_to_bytes``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "SMALL_PAGE_SIZE_KB",
    "TRAIT_SMALL",
    "TRAIT_LARGE",
    "PageSizeError",
    "PageSizeRequest",
    "parse_page_size",
    "custom_trait",
    "provider_traits",
    "step_size_mb",
]

SMALL_PAGE_SIZE_KB = 4
TRAIT_SMALL = "MEMORY_PAGE_SIZE_SMALL"
TRAIT_LARGE = "MEMORY_PAGE_SIZE_LARGE"
_CUSTOM_PREFIX = "CUSTOM_MEMORY_PAGE_SIZE_"
_SIZE_RE = re.compile(r"^(\d+)\s*(?:([KMGT])i?)?B$")
_UNIT_KB = {None: 1 / 1024, "K": 1, "M": 1024, "G": 1024**2, "T": 1024**3}


class PageSizeError(ValueError):
    """``hw:mem_page_size`` is not ``small``, ``large``, ``any`` or a size."""


@dataclass(frozen=True, slots=True)
class PageSizeRequest:
    """A parsed page-size request: ``kind`` and, for ``kind == "size"``, ``size_kb`` (KiB)."""

    kind: Literal["small", "large", "any", "size"]
    size_kb: int | None = None

    def required_traits(self) -> frozenset[str]:
        """The traits a page-size provider must carry (empty for ``any``)."""
        if self.kind == "small":
            return frozenset({TRAIT_SMALL})
        if self.kind == "large":
            return frozenset({TRAIT_LARGE})
        if self.kind == "size" and self.size_kb is not None:
            return frozenset({custom_trait(self.size_kb)})
        return frozenset()

    @property
    def step_mb(self) -> int:
        """The MiB granularity memory must be asked in (1 unless an explicit large size)."""
        return step_size_mb(self.size_kb) if self.kind == "size" and self.size_kb else 1


DEFAULT_REQUEST = PageSizeRequest("small")


def parse_page_size(value: str) -> PageSizeRequest:
    """Parse a ``hw:mem_page_size`` value. ``"2MB"`` -> ``PageSizeRequest("size", 2048)``.

    Raises ``PageSizeError`` for anything else (Nova's ``MemoryPageSizeInvalid``), including
    sizes that are not a whole number of KiB or are zero.
    """
    text = str(value).strip()
    if text in ("small", "large", "any"):
        return PageSizeRequest(text)  # type: ignore[arg-type]
    if text.isdigit():
        size_kb = int(text)
    else:
        match = _SIZE_RE.match(text)
        if match is None:
            raise PageSizeError(f"Invalid memory page size '{value}'")
        number, unit = int(match.group(1)), match.group(2)
        exact = number * _UNIT_KB[unit]
        if exact != int(exact):
            raise PageSizeError(f"Invalid memory page size '{value}'")
        size_kb = int(exact)
    if size_kb <= 0:
        raise PageSizeError(f"Invalid memory page size '{value}'")
    return PageSizeRequest("size", size_kb)


def custom_trait(size_kb: int) -> str:
    """``2048`` -> ``CUSTOM_MEMORY_PAGE_SIZE_2048``."""
    return f"{_CUSTOM_PREFIX}{size_kb}"


def provider_traits(size_kb: int) -> list[str]:
    """Traits of a page-size provider of ``size_kb`` KiB pages (small iff 4 KiB)."""
    kind = TRAIT_SMALL if size_kb == SMALL_PAGE_SIZE_KB else TRAIT_LARGE
    return [kind, custom_trait(size_kb)]


def step_size_mb(size_kb: int) -> int:
    """``MEMORY_MB`` step size of a page-size provider: pages in MiB, at least 1."""
    return max(1, size_kb // 1024)
