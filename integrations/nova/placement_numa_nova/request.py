"""The body of placement-numa's ``POST /allocation_candidates`` for a Nova ``RequestSpec``.

Shape (placement-numa's ``NumaCandidatesBody``)::

    {"flavor": {"name", "vcpus", "memory_mb" (MiB), "root_gb", "ephemeral_gb" (GiB),
                "swap" (MiB), "extra_specs": {str: str}},
     "image": {"hw_numa_nodes": "2", "hw_numa_cpus.0": "0,1", "hw_numa_mem.0": "1024", ...},
     "limit": n}

Image properties are given back in Glance's flat form (Nova's ``ImageMetaProps`` turns
``hw_numa_cpus.N``/``hw_numa_mem.N`` into lists; they are numbered again here); properties whose
values are not scalars (e.g. ``hw_pci_numa_affinity_policy`` is a string and kept; a list of
devices is not) are left out. Nothing is interpreted here: placement-numa translates.
"""

from __future__ import annotations

from typing import Any

__all__ = ["candidates_body", "image_properties"]

_SCALARS = (str, int, float, bool)


def image_properties(image: Any) -> dict[str, str]:
    """Glance-style image properties of Nova's ``ImageMeta`` (``{}`` when it has none)."""
    if image is None or not image.obj_attr_is_set("properties"):
        return {}
    props = image.properties
    found: dict[str, str] = {}
    for name in props.fields:
        if not props.obj_attr_is_set(name):
            continue
        value = getattr(props, name)
        if name == "hw_numa_cpus":
            for cell, cpus in enumerate(value):
                found[f"hw_numa_cpus.{cell}"] = ",".join(str(c) for c in sorted(cpus))
        elif name == "hw_numa_mem":
            for cell, memory_mb in enumerate(value):
                found[f"hw_numa_mem.{cell}"] = str(memory_mb)
        elif isinstance(value, _SCALARS):
            found[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return found


def candidates_body(spec_obj: Any, limit: int) -> dict[str, Any]:
    """The POST body for ``spec_obj`` (Nova's ``RequestSpec``), at most ``limit`` candidates."""
    flavor = spec_obj.flavor
    body: dict[str, Any] = {
        "flavor": {
            "name": flavor.name,
            "vcpus": flavor.vcpus,
            "memory_mb": flavor.memory_mb,
            "root_gb": flavor.root_gb,
            "ephemeral_gb": flavor.ephemeral_gb,
            "swap": flavor.swap,
            "extra_specs": {k: str(v) for k, v in (flavor.extra_specs or {}).items()},
        },
        "limit": limit,
    }
    image = spec_obj.image if spec_obj.obj_attr_is_set("image") else None
    properties = image_properties(image)
    if properties:
        body["image"] = properties
    return body
