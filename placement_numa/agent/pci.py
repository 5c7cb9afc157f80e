"""PCI devices of a host: discovery from sysfs, Nova's ``[pci] device_spec``, and the device
providers they become (issue 22; Nova's "PCI in Placement" rules).

Files read, relative to the sysfs root, per device ``bus/pci/devices/<address>/``::

    vendor, device        "0x8086", "0x1572"
    numa_node             the device's NUMA cell, -1 when the platform reports none
    sriov_totalvfs        VFs a PF can have (absent: not an SR-IOV PF)
    physfn                symlink to the PF (present on a VF)
    virtfn<N>             symlinks to the VFs a PF has now
    net/<ifname>/         the network interface (``devname`` of a device spec)

``[pci] device_spec`` (nova.conf; one JSON object, or a list of them, per line): ``vendor_id``,
``product_id`` (hex, ``*`` for any), ``address`` (``0000:81:00.0``, a glob such as
``*:81:00.*``, or without the domain), ``devname``, ``resource_class``, ``traits``
(comma-separated). The first spec that matches a device claims it. Then, per PF or standalone
device, one provider (``PciProvider``):

* VFs matched: one provider for their PF, inventory = the matched VFs; a PF matched by
  ``address`` or ``devname`` only (no ``vendor_id``/``product_id``) with ``sriov_totalvfs`` > 0
  offers its VFs (the VFs present, else ``sriov_totalvfs``);
* anything else matched (a PF named by its product, a GPU, a NIC without SR-IOV): the whole
  device, inventory 1;
* resource class ``resource_class`` of the spec, else ``CUSTOM_PCI_<VENDOR>_<PRODUCT>`` of the
  assignable function (the VF's product for VFs); traits from the spec plus
  ``COMPUTE_MANAGED_PCI_DEVICE`` (as Nova marks its PCI providers);
* parent: the NUMA cell of ``numa_node``, or the compute node when it is -1 or not a cell.

Errors: ``DeviceSpecError`` for a spec that is not Nova's format; ``SysfsError``
(``agent.sysfs_files``) for an unreadable device file.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from placement_numa.agent.sysfs_files import read_sysfs
from placement_numa.numa.pci_alias import normalise_traits, pci_resource_class

__all__ = [
    "DeviceSpecError",
    "DeviceSpec",
    "PciDevice",
    "PciProvider",
    "MANAGED_TRAIT",
    "parse_device_specs",
    "discover_pci",
    "pci_providers",
]

MANAGED_TRAIT = "COMPUTE_MANAGED_PCI_DEVICE"
_KEYS = {
    "vendor_id",
    "product_id",
    "address",
    "devname",
    "resource_class",
    "traits",
    "physical_network",
    "remote_managed",
    "managed",
    "live_migratable",
}
_ID = re.compile(r"^([0-9a-fA-F]{1,4}|\*)$")
_VIRTFN = re.compile(r"^virtfn(\d+)$")


class DeviceSpecError(ValueError):
    """A ``[pci] device_spec`` line that is not Nova's format (the message names it)."""


@dataclass(frozen=True)
class DeviceSpec:
    """One device spec: what it matches (``None``: anything) and what it gives."""

    vendor_id: str | None = None
    product_id: str | None = None
    address: str | None = None
    devname: str | None = None
    resource_class: str | None = None
    traits: frozenset[str] = frozenset()

    def matches(self, device: PciDevice) -> bool:
        """Whether every key the spec gives matches ``device``."""
        if self.vendor_id not in (None, "*") and int(self.vendor_id, 16) != int(
            device.vendor_id, 16
        ):
            return False
        if self.product_id not in (None, "*") and int(self.product_id, 16) != int(
            device.product_id, 16
        ):
            return False
        if self.address is not None and not fnmatch.fnmatch(device.address, self.address):
            return False
        return self.devname is None or self.devname in device.devnames

    @property
    def by_location(self) -> bool:
        """Matched by ``address``/``devname`` only (names no product)."""
        return self.vendor_id is None and self.product_id is None


@dataclass(frozen=True)
class PciDevice:
    """One PCI function: address, ids (4 lower-case hex digits), NUMA node (-1: none),
    ``sriov_totalvfs`` (0: not a PF), its PF's address (VFs), its VFs' addresses (PFs) and
    network interface names."""

    address: str
    vendor_id: str
    product_id: str
    numa_node: int = -1
    total_vfs: int = 0
    physfn: str | None = None
    vfs: tuple[str, ...] = ()
    devnames: tuple[str, ...] = ()


@dataclass(frozen=True)
class PciProvider:
    """A device provider to report: PF or standalone device ``address``, its NUMA node (-1:
    none), resource class, assignable functions (inventory) and traits."""

    address: str
    numa_node: int
    resource_class: str
    total: int
    traits: frozenset[str]


def _hex_id(value: object, key: str, line: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _ID.match(value):
        raise DeviceSpecError(f"[pci] device_spec {line}: {key} must be hex digits or '*'")
    return value.lower()


def _address(value: object, line: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise DeviceSpecError(f"[pci] device_spec {line}: address must be a string")
    text = value.lower()
    return text if text.count(":") >= 2 else f"*:{text}"


def parse_device_specs(lines: Iterable[str]) -> tuple[DeviceSpec, ...]:
    """The device specs of ``[pci] device_spec`` lines (JSON objects or lists of them).
    Raises ``DeviceSpecError`` for a line that is not JSON, an unknown key, a bad id."""
    specs: list[DeviceSpec] = []
    for line in lines:
        try:
            loaded = json.loads(line)
        except ValueError as exc:
            raise DeviceSpecError(f"[pci] device_spec {line}: not JSON ({exc})") from None
        for entry in loaded if isinstance(loaded, list) else [loaded]:
            if not isinstance(entry, dict):
                raise DeviceSpecError(f"[pci] device_spec {line}: not a JSON object")
            unknown = sorted(set(entry) - _KEYS)
            if unknown:
                raise DeviceSpecError(f"[pci] device_spec {line}: unknown keys {unknown}")
            rc = entry.get("resource_class")
            traits = entry.get("traits")
            devname = entry.get("devname")
            if rc is not None and not isinstance(rc, str):
                raise DeviceSpecError(f"[pci] device_spec {line}: resource_class: a string")
            if traits is not None and not isinstance(traits, str):
                raise DeviceSpecError(f"[pci] device_spec {line}: traits: comma-separated names")
            if devname is not None and not isinstance(devname, str):
                raise DeviceSpecError(f"[pci] device_spec {line}: devname: a string")
            specs.append(
                DeviceSpec(
                    vendor_id=_hex_id(entry.get("vendor_id"), "vendor_id", line),
                    product_id=_hex_id(entry.get("product_id"), "product_id", line),
                    address=_address(entry.get("address"), line),
                    devname=devname,
                    resource_class=rc,
                    traits=normalise_traits(traits),
                )
            )
    return tuple(specs)


def _read(path: Path) -> str:
    return read_sysfs(path).strip()


def _id(path: Path) -> str:
    text = _read(path).lower()
    return (text[2:] if text.startswith("0x") else text).zfill(4)


def _device(directory: Path) -> PciDevice:
    numa_path = directory / "numa_node"
    numa = int(_read(numa_path)) if numa_path.exists() else -1
    total_path = directory / "sriov_totalvfs"
    total = int(_read(total_path)) if total_path.exists() else 0
    physfn = directory / "physfn"
    vfs = sorted(
        (
            (int(m.group(1)), entry)
            for entry in directory.iterdir()
            if (m := _VIRTFN.match(entry.name))
        ),
    )
    net = directory / "net"
    return PciDevice(
        address=directory.name.lower(),
        vendor_id=_id(directory / "vendor"),
        product_id=_id(directory / "device"),
        numa_node=numa,
        total_vfs=total,
        physfn=physfn.resolve().name.lower() if physfn.exists() else None,
        vfs=tuple(entry.resolve().name.lower() for _, entry in vfs),
        devnames=tuple(sorted(e.name for e in net.iterdir())) if net.is_dir() else (),
    )


def discover_pci(sysfs_root: Path | str = "/sys") -> tuple[PciDevice, ...]:
    """Every PCI function under ``<sysfs_root>/bus/pci/devices`` (none when the directory is
    missing), by address. Raises ``SysfsError`` for an unreadable ``vendor``/``device``."""
    base = Path(sysfs_root) / "bus/pci/devices"
    if not base.is_dir():
        return ()
    return tuple(_device(entry) for entry in sorted(base.iterdir(), key=lambda e: e.name))


def _first_match(specs: tuple[DeviceSpec, ...], device: PciDevice) -> DeviceSpec | None:
    return next((spec for spec in specs if spec.matches(device)), None)


def pci_providers(
    devices: Iterable[PciDevice], specs: tuple[DeviceSpec, ...]
) -> tuple[PciProvider, ...]:
    """The device providers of ``devices`` under ``specs`` (rules in the module docstring),
    by address. A PF claimed whole and for its VFs at once keeps the VFs (Nova refuses such
    a configuration; we report the VFs)."""
    by_address = {d.address: d for d in devices}
    units: dict[str, tuple[str, int, frozenset[str]]] = {}  # PF/device -> (rc, total, traits)
    whole: dict[str, tuple[str, frozenset[str]]] = {}
    for device in by_address.values():
        spec = _first_match(specs, device)
        if spec is None:
            continue
        if device.physfn is not None:
            rc = pci_resource_class(device.vendor_id, device.product_id, spec.resource_class)
            _, count, _ = units.get(device.physfn, (rc, 0, spec.traits))
            units[device.physfn] = (rc, count + 1, spec.traits)
        elif spec.by_location and device.total_vfs > 0:
            first_vf = by_address.get(device.vfs[0]) if device.vfs else None
            product = first_vf.product_id if first_vf is not None else device.product_id
            rc = pci_resource_class(device.vendor_id, product, spec.resource_class)
            count = len(device.vfs) or device.total_vfs
            units[device.address] = (rc, count, spec.traits)
        else:
            rc = pci_resource_class(device.vendor_id, device.product_id, spec.resource_class)
            whole[device.address] = (rc, spec.traits)
    found: list[PciProvider] = []
    for address in sorted(set(units) | set(whole)):
        owner = by_address.get(address)
        numa = owner.numa_node if owner is not None else -1
        if address in units:
            rc, total, traits = units[address]
        else:
            (rc, traits), total = whole[address], 1
        found.append(PciProvider(address, numa, rc, total, traits | {MANAGED_TRAIT}))
    return tuple(found)
