"""The extra spec names Nova registers in the namespaces that size a guest (``hw:``,
``hw_rng:``, ``hw_video:``), for refusing mistyped keys.

Behaviour of Nova's flavor extra spec validation (``nova.api.validation.extra_specs``, Nova 34):
a key in a namespace Nova knows must be one of the names registered for it, else the flavor is
refused ("does not appear to be a valid extra spec"). Keys in other namespaces, and keys without
one (``group_policy``), are left alone. So ``hw:numa_node`` (for ``hw:numa_nodes``) is a 400
naming the key and the closest valid name (``difflib``), never a silently non-NUMA guest.

Which of these keys the translation uses: ``hw:numa_nodes``, ``hw:numa_cpus.N``,
``hw:numa_mem.N``, ``hw:mem_page_size``, ``hw:cpu_policy``, ``hw:cpu_thread_policy``,
``hw:cpu_dedicated_mask``, ``hw:emulator_threads_policy``. The others are accepted and do not
change placement here (as in Nova's NUMATopologyFilter, which reads only those).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

__all__ = ["CHECKED_NAMESPACES", "KNOWN_KEYS", "unknown_key", "closest_key"]

CHECKED_NAMESPACES = ("hw", "hw_rng", "hw_video")

# Names registered by Nova 34 in those namespaces; ``.N`` stands for a guest NUMA cell number.
KNOWN_KEYS: tuple[str, ...] = (
    "hw:boot_menu",
    "hw:cpu_cores",
    "hw:cpu_dedicated_mask",
    "hw:cpu_max_cores",
    "hw:cpu_max_sockets",
    "hw:cpu_max_threads",
    "hw:cpu_policy",
    "hw:cpu_realtime",
    "hw:cpu_realtime_mask",
    "hw:cpu_sockets",
    "hw:cpu_thread_policy",
    "hw:cpu_threads",
    "hw:emulator_threads_policy",
    "hw:ephemeral_encryption",
    "hw:ephemeral_encryption_format",
    "hw:hide_hypervisor_id",
    "hw:locked_memory",
    "hw:mem_encryption",
    "hw:mem_encryption_model",
    "hw:mem_page_size",
    "hw:numa_cpus.N",
    "hw:numa_mem.N",
    "hw:numa_nodes",
    "hw:pci_numa_affinity_policy",
    "hw:pmem",
    "hw:pmu",
    "hw:redirected_usb_ports",
    "hw:serial_port_count",
    "hw:sound_model",
    "hw:tpm_model",
    "hw:tpm_secret_security",
    "hw:tpm_version",
    "hw:usb_model",
    "hw:vif_multiqueue_enabled",
    "hw:viommu_model",
    "hw:virtio_packed_ring",
    "hw:watchdog_action",
    "hw_rng:allowed",
    "hw_rng:rate_bytes",
    "hw_rng:rate_period",
    "hw_video:ram_max_mb",
)
_PLAIN = frozenset(k for k in KNOWN_KEYS if not k.endswith(".N"))
_CELL_KEY = re.compile(r"^hw:numa_(cpus|mem)\.\d+$")


def _known(key: str) -> bool:
    return key in _PLAIN or bool(_CELL_KEY.match(key))


def closest_key(key: str) -> str | None:
    """The registered name closest to ``key`` (``difflib``; ``.N`` keys keep ``key``'s cell
    number when it has one), or ``None`` when nothing is close."""
    match = re.search(r"\.(\d+)$", key)
    candidates = [k.replace(".N", f".{match.group(1)}" if match else ".0") for k in KNOWN_KEYS]
    found = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_key(keys: Iterable[str]) -> str | None:
    """The first key (sorted) in a checked namespace that Nova does not register, or ``None``."""
    for key in sorted(keys):
        namespace, colon, _ = key.partition(":")
        if colon and namespace in CHECKED_NAMESPACES and not _known(key):
            return key
    return None
