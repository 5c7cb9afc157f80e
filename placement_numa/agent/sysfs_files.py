"""Reading one sysfs file, and the error that names it: shared by ``agent.sysfs`` (cells, CPUs,
memory, huge pages) and ``agent.pci`` (PCI devices)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["SysfsError", "read_sysfs"]


class SysfsError(RuntimeError):
    """A sysfs file is missing or malformed; the message names the file."""


def read_sysfs(path: Path) -> str:
    """The whole text of the sysfs file ``path`` (unstripped).

    Raises ``SysfsError`` naming the file when it cannot be read (missing, permission denied).
    """
    try:
        return path.read_text()
    except OSError as exc:
        raise SysfsError(f"cannot read {path}: {exc.strerror or exc}") from exc
