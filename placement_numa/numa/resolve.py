"""Nova's precedence rules between flavor extra specs and image properties, one function per
setting. Each returns the effective value or raises ``InvalidFlavor`` naming the keys at fault.

Rules carried over from ``nova.virt.hardware`` (behaviour, not code):

* ``hw:numa_nodes`` / ``hw_numa_nodes``: an integer >= 1 written as Nova's ``is_int_like``
  accepts (``"2"``, not ``" 2"`` or ``"02"``), at most ``MAX_NUMA_NODES`` (Nova's
  ``NUMA_NODES_MAX``, beyond which Nova ignores per-cell lists); the image may not set it when
  the flavor does (``ImageNUMATopologyForbidden``);
* ``hw:mem_page_size``: the image may ask a page size only when the flavor says ``large`` or
  ``any`` (``MemoryPageSizeForbidden``); the image's then wins;
* ``hw:cpu_policy``: ``shared`` | ``dedicated`` | ``mixed``; a flavor ``dedicated`` wins, an
  image may not ask more pinning than the flavor allows (``ImageCPUPinningForbidden``);
* ``hw:cpu_thread_policy``: ``prefer`` | ``isolate`` | ``require``; a flavor without one or
  with ``prefer`` takes the image's (``flavor or image``); a flavor ``isolate``/``require`` wins,
  and an image asking another policy then is refused (``ImageCPUThreadPolicyForbidden``).
"""

from __future__ import annotations

from functools import cached_property

from placement_numa.errors import BadRequest
from placement_numa.numa.extra_specs import SpecValue, cell_specs, flavor_and_image
from placement_numa.numa.flavor import Flavor, ImageProperties
from placement_numa.numa.page_sizes import PageSizeError, PageSizeRequest, parse_page_size

__all__ = [
    "FlavorSettings",
    "INVALID_FLAVOR_CODE",
    "InvalidFlavor",
    "numa_nodes",
    "page_size",
    "cpu_policy",
    "thread_policy",
    "emulator_threads_isolate",
    "MAX_NUMA_NODES",
]

MAX_NUMA_NODES = 128

INVALID_FLAVOR_CODE = "placement_numa.flavor.invalid"
CPU_POLICIES = ("shared", "dedicated", "mixed")
THREAD_POLICIES = ("prefer", "isolate", "require")
EMULATOR_POLICIES = ("share", "isolate")


class InvalidFlavor(BadRequest):
    """400 ``placement_numa.flavor.invalid``: the flavor/image cannot be turned into a query.

    ``keys`` are the offending extra spec / image property names; the detail starts with them.
    """

    default_code = INVALID_FLAVOR_CODE

    def __init__(self, keys: list[str] | tuple[str, ...], message: str) -> None:
        self.keys = tuple(keys)
        super().__init__(f"Invalid flavor ({', '.join(self.keys)}): {message}")


def numa_nodes(flavor: Flavor, image: ImageProperties | None) -> tuple[int | None, str | None]:
    """The guest NUMA cell count and the key that set it, or ``(None, None)``."""
    from_flavor, from_image = flavor_and_image(flavor, image, "numa_nodes")
    if from_flavor and from_image:
        raise InvalidFlavor(
            [from_flavor.key, from_image.key],
            f"image property '{from_image.key}' may not override the NUMA configuration set"
            " by the flavor",
        )
    chosen = from_flavor or from_image
    if chosen is None:
        return None, None
    text = chosen.value
    count = int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else 0
    if str(count) != text or count < 1:
        raise InvalidFlavor([chosen.key], f"must be an integer >= 1, got '{text[:40]}'")
    if count > MAX_NUMA_NODES:
        raise InvalidFlavor([chosen.key], f"must be <= {MAX_NUMA_NODES}, got {count}")
    return count, chosen.key


def _parse(spec: SpecValue) -> PageSizeRequest:
    try:
        return parse_page_size(spec.value)
    except PageSizeError as exc:
        raise InvalidFlavor([spec.key], str(exc)) from None


def page_size(
    flavor: Flavor, image: ImageProperties | None
) -> tuple[PageSizeRequest | None, str | None]:
    """The effective page-size request and the key that set it, or ``(None, None)``."""
    from_flavor, from_image = flavor_and_image(flavor, image, "mem_page_size")
    if from_image and not from_flavor:
        raise InvalidFlavor(
            [from_image.key],
            f"page size '{from_image.value}' is forbidden: the flavor sets no hw:mem_page_size",
        )
    if from_flavor is None:
        return None, None
    request = _parse(from_flavor)
    if from_image is not None:
        if request.kind not in ("large", "any"):
            raise InvalidFlavor(
                [from_flavor.key, from_image.key],
                f"page size '{from_image.value}' is forbidden against '{from_flavor.value}'",
            )
        return _parse(from_image), from_image.key
    return request, from_flavor.key


def cpu_policy(flavor: Flavor, image: ImageProperties | None) -> tuple[str | None, str | None]:
    """The effective CPU policy (``shared``/``dedicated``/``mixed``) and its key, or
    ``(None, None)``."""
    from_flavor, from_image = flavor_and_image(flavor, image, "cpu_policy")
    for spec in (from_flavor, from_image):
        if spec is not None and spec.value not in CPU_POLICIES:
            raise InvalidFlavor(
                [spec.key], f"'{spec.value}' is not one of {', '.join(CPU_POLICIES)}"
            )
    if from_flavor is not None:
        if from_image is not None:
            allowed = {
                "dedicated": CPU_POLICIES,
                "mixed": ("shared", "mixed"),
                "shared": ("shared",),
            }
            if from_image.value not in allowed[from_flavor.value]:
                raise InvalidFlavor(
                    [from_flavor.key, from_image.key],
                    f"image CPU pinning policy '{from_image.value}' is forbidden by the flavor's"
                    f" '{from_flavor.value}'",
                )
        return from_flavor.value, from_flavor.key
    if from_image is not None:
        return from_image.value, from_image.key
    return None, None


def thread_policy(flavor: Flavor, image: ImageProperties | None) -> tuple[str | None, str | None]:
    """The effective CPU thread policy and its key, or ``(None, None)``."""
    from_flavor, from_image = flavor_and_image(flavor, image, "cpu_thread_policy")
    for spec in (from_flavor, from_image):
        if spec is not None and spec.value not in THREAD_POLICIES:
            raise InvalidFlavor(
                [spec.key], f"'{spec.value}' is not one of {', '.join(THREAD_POLICIES)}"
            )
    if from_flavor is None or from_flavor.value == "prefer":
        chosen = from_flavor or from_image
        return (chosen.value, chosen.key) if chosen is not None else (None, None)
    if from_image is not None and from_image.value != from_flavor.value:
        raise InvalidFlavor(
            [from_flavor.key, from_image.key],
            f"image CPU thread policy '{from_image.value}' is forbidden by the flavor's"
            f" '{from_flavor.value}'",
        )
    return from_flavor.value, from_flavor.key


def emulator_threads_isolate(flavor: Flavor) -> tuple[bool, str | None]:
    """Whether ``hw:emulator_threads_policy=isolate`` (one more dedicated CPU)."""
    value = flavor.spec("hw:emulator_threads_policy")
    if value is None:
        return False, None
    if value not in EMULATOR_POLICIES:
        raise InvalidFlavor(
            ["hw:emulator_threads_policy"],
            f"'{value}' is not one of {', '.join(EMULATOR_POLICIES)}",
        )
    return value == "isolate", "hw:emulator_threads_policy"


class FlavorSettings:
    """A flavor (+ image) whose settings are each resolved once, on first use, with the rules
    above: ``numa_nodes``, ``page_size``, ``cpu_policy``, ``thread_policy`` (each ``(value,
    key that set it)``), ``emulator_threads_isolate`` and ``cells(kind)`` (``hw:numa_<kind>.N``
    of the flavor, else ``hw_numa_<kind>.N`` of the image; ``kind`` ``"cpus"`` or ``"mem"``).
    Nova's checks (``validation``) and the typed request (``request``) share one, so no setting
    is read twice. A setting that does not resolve raises ``InvalidFlavor`` at each use.
    """

    def __init__(self, flavor: Flavor, image: ImageProperties | None = None) -> None:
        self.flavor = flavor
        self.image = image
        self._cells: dict[str, dict[int, SpecValue]] = {}

    @cached_property
    def numa_nodes(self) -> tuple[int | None, str | None]:
        """``numa_nodes(flavor, image)``."""
        return numa_nodes(self.flavor, self.image)

    @cached_property
    def page_size(self) -> tuple[PageSizeRequest | None, str | None]:
        """``page_size(flavor, image)``."""
        return page_size(self.flavor, self.image)

    @cached_property
    def cpu_policy(self) -> tuple[str | None, str | None]:
        """``cpu_policy(flavor, image)``."""
        return cpu_policy(self.flavor, self.image)

    @cached_property
    def thread_policy(self) -> tuple[str | None, str | None]:
        """``thread_policy(flavor, image)``."""
        return thread_policy(self.flavor, self.image)

    @cached_property
    def emulator_threads_isolate(self) -> tuple[bool, str | None]:
        """``emulator_threads_isolate(flavor)``."""
        return emulator_threads_isolate(self.flavor)

    def cells(self, kind: str) -> dict[int, SpecValue]:
        """The effective per-cell list ``hw:numa_<kind>.N`` (flavor's, else image's)."""
        found = self._cells.get(kind)
        if found is None:
            from_flavor, from_image = cell_specs(self.flavor, self.image, kind)
            found = self._cells[kind] = from_flavor or from_image
        return found
