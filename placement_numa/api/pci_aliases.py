"""``[pci] alias`` of placement.conf for the flavor form of ``POST /allocation_candidates``.

The option is Nova's (a ``MultiStrOpt``: one JSON alias per line, ``numa.pci_alias``), defined
with placement-numa's other options (``conf.PCI_OPTS``, in the oslo-config-generator output); it
is registered on ``app.state.conf`` (the oslo.config object of ``settings.config_file``) and parsed
once per application, on the first flavor that asks for a device. A configuration line that is
not Nova's format answers 400 ``placement_numa.pci_alias.invalid`` naming the line to such a
flavor (the service itself keeps serving every other request).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placement_numa.errors import BadRequest
from placement_numa.numa.flavor import Flavor
from placement_numa.numa.pci_alias import ALIAS_SPEC, AliasConfigError, PciAlias, parse_aliases

__all__ = ["InvalidAliasConfig", "aliases_for"]

_STATE_KEY = "pci_aliases"


class InvalidAliasConfig(BadRequest):
    """400 ``placement_numa.pci_alias.invalid``: a ``[pci] alias`` line is not Nova's format."""

    default_code = "placement_numa.pci_alias.invalid"


def _load(conf: Any) -> dict[str, PciAlias]:
    """The parsed ``[pci] alias`` of ``conf`` (registered by ``settings.load_config`` with every
    other option: declared once, in ``conf.PCI_OPTS``)."""
    if conf is None:
        return {}
    return parse_aliases(conf.pci.alias or [])


def aliases_for(state: Any, flavor: Flavor) -> Mapping[str, PciAlias] | None:
    """The alias table of the application whose ``app.state`` is ``state`` when ``flavor``
    asks for devices (``None`` otherwise: nothing to read). Raises ``InvalidAliasConfig``."""
    if flavor.spec(ALIAS_SPEC) is None:
        return None
    cached = getattr(state, _STATE_KEY, None)
    if cached is None:
        try:
            cached = _load(getattr(state, "conf", None))
        except AliasConfigError as exc:
            raise InvalidAliasConfig(str(exc)) from None
        setattr(state, _STATE_KEY, cached)
    return cached
