"""Reading the ``hw:`` extra specs and image properties Nova's way (no validation here).

Flavor extra spec ``hw:<name>`` and image property ``hw_<name>`` mean the same thing; the
helpers return both so the checks in ``validation`` can apply Nova's precedence rules.
Granular Placement extra specs (``resources[$S]:<RC>``, ``trait[$S]:<T>``) are split here
by suffix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from placement_numa.numa.flavor import Flavor, ImageProperties

__all__ = [
    "CELL_KEY_RE",
    "RESOURCES_KEY_RE",
    "TRAIT_KEY_RE",
    "SpecValue",
    "flavor_and_image",
    "cell_specs",
    "GranularSpec",
    "granular_specs",
]

CELL_KEY_RE = re.compile(r"^hw[:_]numa_(cpus|mem)\.(\d+)$")
RESOURCES_KEY_RE = re.compile(r"^resources([a-zA-Z0-9_-]*):(.*)$")
TRAIT_KEY_RE = re.compile(r"^trait([a-zA-Z0-9_-]*):(.*)$")


@dataclass(frozen=True, slots=True)
class SpecValue:
    """One setting and where it came from: ``key`` is ``hw:x`` or ``hw_x``."""

    key: str
    value: str


def flavor_and_image(
    flavor: Flavor, image: ImageProperties | None, name: str
) -> tuple[SpecValue | None, SpecValue | None]:
    """The flavor's ``hw:<name>`` and the image's ``hw_<name>`` (each ``None`` if unset)."""
    flavor_key, image_key = f"hw:{name}", f"hw_{name}"
    flavor_value = flavor.spec(flavor_key)
    image_value = image.prop(image_key) if image is not None else None
    return (
        SpecValue(flavor_key, flavor_value) if flavor_value is not None else None,
        SpecValue(image_key, image_value) if image_value is not None else None,
    )


def cell_specs(
    flavor: Flavor, image: ImageProperties | None, kind: str
) -> tuple[dict[int, SpecValue], dict[int, SpecValue]]:
    """``hw:numa_<kind>.N`` from the flavor and ``hw_numa_<kind>.N`` from the image, keyed by
    guest cell ``N`` (``kind`` is ``"cpus"`` or ``"mem"``)."""
    from_flavor: dict[int, SpecValue] = {}
    for key, value in flavor.extra_specs.items():
        match = CELL_KEY_RE.match(key)
        if match and key.startswith("hw:") and match.group(1) == kind:
            from_flavor[int(match.group(2))] = SpecValue(key, value)
    from_image: dict[int, SpecValue] = {}
    for key, value in (image.properties if image is not None else {}).items():
        match = CELL_KEY_RE.match(key)
        if match and key.startswith("hw_") and match.group(1) == kind:
            from_image[int(match.group(2))] = SpecValue(key, value)
    return from_flavor, from_image


@dataclass(frozen=True)
class GranularSpec:
    """The ``resources$S:`` and ``trait$S:`` extra specs of one suffix (``""`` = unsuffixed).

    ``resources`` maps class -> (key, raw amount); ``traits`` maps trait -> (key, raw value).
    """

    suffix: str
    resources: dict[str, SpecValue]
    traits: dict[str, SpecValue]


def granular_specs(flavor: Flavor) -> dict[str, GranularSpec]:
    """Group the flavor's ``resources[$S]:<RC>`` and ``trait[$S]:<T>`` keys by suffix."""
    result: dict[str, GranularSpec] = {}
    for key, value in sorted(flavor.extra_specs.items()):
        for pattern, is_resource in ((RESOURCES_KEY_RE, True), (TRAIT_KEY_RE, False)):
            match = pattern.match(key)
            if match is None:
                continue
            suffix, name = match.group(1), match.group(2)
            spec = result.setdefault(suffix, GranularSpec(suffix, {}, {}))
            (spec.resources if is_resource else spec.traits)[name] = SpecValue(key, value)
    return result
