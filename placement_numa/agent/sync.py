"""Reconcile a host's desired provider tree with Placement.

One ``sync`` run, in order:

1. find the compute node by name (its uuid may predate the agent) and read its tree; a root
   nova-compute manages (``agent.ownership``: Nova's traits or ``VCPU``/``PCPU``/``MEMORY_MB`` on
   it) is refused with ``NovaManagedTree`` before anything is written, unless ``take_over``;
2. flat-host check: ``VCPU``/``PCPU``/``MEMORY_MB`` still on the root *with usage* means the
   host must be reshaped first; the agent asks the reshape planner (``POST /reshaper/plan``
   style API, when the service has one) and applies the plan with ``POST /reshaper``; without a
   planner it reports and stops before writing anything. Without usage those classes are simply
   dropped from the root;
3. providers, parents first: create what is missing, re-parent what moved (a PCI device
   provider Nova created under the compute node, ``<host>_<PCI address>``, moves under its
   NUMA cell with its uuid, so its consumers' allocations move with it);
4. per provider: inventories, then traits, each written only when they differ, with the
   generation read just before; on 409 ``placement.concurrent_update`` the provider is re-read
   and the diff recomputed (``max_retries`` times);
5. providers of the agent (names ``<host>_NUMA...`` and ``<host>_<PCI address>``) that
   vanished from the host: deleted,
   deepest first, when nothing is allocated on them or below them; otherwise kept and reported;
6. the distance matrix and the cells' sockets, through the NUMA topology API when the service
   has it. Custom resource classes of device inventories are created before use.

Traits other than the agent's own (``is_agent_trait``) and inventories of classes other than
the ones the agent reports are left as they are, so other agents and operators can decorate
the same providers. An unchanged host costs only GETs: no write is sent.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import TypeVar

from placement_numa.agent import distances
from placement_numa.agent.client import (
    NotFoundError,
    PlacementClient,
    PlacementClientError,
    ProviderConflict,
    ProviderRecord,
)
from placement_numa.agent.desired_tree import (
    ROOT_CLASSES,
    DesiredProvider,
    DesiredTree,
    Inventory,
    is_agent_trait,
)
from placement_numa.agent.ownership import (
    NOVA_ROOT_CLASSES,
    NovaManagedTree,
    alias_refusal,
    nova_signs,
    nova_trait,
    other_names,
    refusal,
    takeover_refusal,
)
from placement_numa.agent.sync_report import SyncReport

__all__ = ["SyncReport", "SyncError", "ReshapeRequired", "NovaManagedTree", "sync"]

LOG = logging.getLogger("placement_numa.agent")
T = TypeVar("T")
FLAT_CLASSES = NOVA_ROOT_CLASSES
PCI_ADDRESS = r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]"


class SyncError(RuntimeError):
    """The tree could not be brought in line; the message says which provider and why."""


class ReshapeRequired(SyncError):
    """The compute node is flat with allocations and no reshape planner is available."""


def _retrying(action: Callable[[], T], what: str, max_retries: int) -> T:
    """Run ``action`` again (it re-reads what it needs) after a generation conflict."""
    for attempt in range(max_retries + 1):
        try:
            return action()
        except ProviderConflict as exc:
            if not exc.is_generation_conflict or attempt == max_retries:
                raise SyncError(f"{what}: {exc}") from exc
            LOG.info("%s: generation conflict, re-reading (attempt %d)", what, attempt + 1)
    raise AssertionError("unreachable")


def _describe_inventory_change(
    current: Mapping[str, Inventory], wanted: Mapping[str, Inventory]
) -> str:
    parts = []
    for rc in sorted(set(current) | set(wanted)):
        old, new = current.get(rc), wanted.get(rc)
        if old is None and new is not None:
            parts.append(f"+{rc} total={new.total}")
        elif new is None and old is not None:
            parts.append(f"-{rc}")
        elif old is not None and new is not None and not old.same_as(new):
            fields = [
                f"{k} {v}->{new.as_dict()[k]}"
                for k, v in old.as_dict().items()
                if v != new.as_dict()[k]
            ]
            parts.append(f"{rc} " + ", ".join(fields))
    return "; ".join(parts)


class _Syncer:
    def __init__(
        self,
        client: PlacementClient,
        tree: DesiredTree,
        max_retries: int,
        on_provider: Callable[[], None] | None = None,
        take_over: bool = False,
    ) -> None:
        self.on_provider = on_provider
        self.take_over = take_over
        self.client = client
        self.tree = tree
        self.max_retries = max_retries
        self.report = SyncReport()
        self.uuids: dict[str, str] = {}  # desired path -> uuid in Placement
        self.unknown_traits: set[str] = set()
        self.classes_seen: set[str] = set()

    # -- 1, 2 -----------------------------------------------------------------------------------

    def run(
        self,
        reshape: Callable[[PlacementClient, DesiredTree, ProviderRecord, SyncReport], bool] | None,
    ) -> SyncReport:
        writes_before = len(self.client.writes)
        root = self.client.find_provider(self.tree.root.name)
        existing: list[ProviderRecord] = []
        if root is None:
            self._check_other_names()
        else:
            self._check_owner(root)
            existing = self.client.list_tree(root.uuid)
            if self._flat_with_usage(root):
                if reshape is None or not reshape(self.client, self.tree, root, self.report):
                    raise ReshapeRequired(
                        f"compute node {root.name} ({root.uuid}) still carries "
                        f"{'/'.join(FLAT_CLASSES)} with allocations and no reshape planner is "
                        "available; reshape it (placement-numa reshape) and run the agent again"
                    )
                existing = self.client.list_tree(root.uuid)
        by_name = {p.name: p for p in existing}
        for provider in self.tree.providers:
            self._ensure_provider(provider, by_name, root)
        for provider in self.tree.providers:
            self._sync_inventories(provider, is_root=provider.parent_path is None)
            self._sync_traits(provider)
            if self.on_provider is not None:
                self.on_provider()
        self._remove_vanished(existing)
        self._sync_distances()
        self.report.writes = len(self.client.writes) - writes_before
        return self.report

    def _check_owner(self, root: ProviderRecord) -> None:
        """Raise ``NovaManagedTree`` when nova-compute manages ``root`` (unless taking over)."""
        _, inventories = self.client.get_inventories(root.uuid)
        _, traits = self.client.get_traits(root.uuid)
        signs = nova_signs(inventories, traits)
        if not signs:
            return
        if not self.take_over:
            raise refusal(root.name, root.uuid, signs)
        blocked = takeover_refusal(root.name, root.uuid, traits)
        if blocked is not None:
            raise blocked
        self.report.note(f"taking over {root.name} from nova-compute ({', '.join(signs)})")

    def _check_other_names(self) -> None:
        """Raise ``NovaManagedTree`` when this host is nova-compute's under another name."""
        for name in other_names(self.tree.root.name):
            found = self.client.find_provider(name)
            if found is None or found.parent_provider_uuid is not None:
                continue
            _, inventories = self.client.get_inventories(found.uuid)
            _, traits = self.client.get_traits(found.uuid)
            signs = nova_signs(inventories, traits)
            if signs:
                raise alias_refusal(found.name, found.uuid, signs, self.tree.root.name)

    def _flat_with_usage(self, root: ProviderRecord) -> bool:
        _, inventories = self.client.get_inventories(root.uuid)
        if not any(rc in inventories for rc in FLAT_CLASSES):
            return False
        usages = self.client.get_usages(root.uuid)
        return any(usages.get(rc, 0) > 0 for rc in FLAT_CLASSES)

    # -- 3 ---------------------------------------------------------------------------------------

    def _ensure_provider(
        self,
        provider: DesiredProvider,
        by_name: dict[str, ProviderRecord],
        root: ProviderRecord | None,
    ) -> None:
        parent_uuid = None if provider.parent_path is None else self.uuids[provider.parent_path]
        found = by_name.get(provider.name)
        if found is None and provider.parent_path is None and root is not None:
            found = root
        if found is None:
            try:
                created = self.client.create_provider(
                    name=provider.name, uuid=provider.uuid, parent_uuid=parent_uuid
                )
            except PlacementClientError as exc:
                raise SyncError(f"cannot create provider {provider.name}: {exc}") from exc
            self.uuids[provider.path] = created.uuid
            self.report.change(f"created provider {provider.name} ({created.uuid})")
            return
        self.uuids[provider.path] = found.uuid
        if found.parent_provider_uuid != parent_uuid:
            self.client.update_provider(
                uuid=found.uuid, name=provider.name, parent_uuid=parent_uuid
            )
            self.report.change(f"re-parented provider {provider.name} under {parent_uuid}")

    # -- 4 ---------------------------------------------------------------------------------------

    def _sync_inventories(self, provider: DesiredProvider, *, is_root: bool) -> None:
        uuid = self.uuids[provider.path]

        def attempt() -> None:
            generation, current = self.client.get_inventories(uuid)
            if is_root:
                # Keep classes the agent does not report (VGPU, bandwidth, ...);
                # drop flat leftovers.
                wanted = {rc: inv for rc, inv in current.items() if rc not in ROOT_CLASSES}
                wanted.update(provider.inventories)
            else:
                wanted = dict(provider.inventories)
            same = set(wanted) == set(current) and all(
                wanted[rc].same_as(current[rc]) for rc in wanted
            )
            if same:
                return
            change = _describe_inventory_change(current, wanted)
            for rc in sorted(set(wanted) - set(current)):
                if rc.startswith("CUSTOM_") and rc not in self.classes_seen:
                    if self.client.ensure_resource_class(rc):
                        self.report.change(f"created resource class {rc}")
                    self.classes_seen.add(rc)
            self.client.put_inventories(uuid, generation, wanted)
            self.report.change(f"inventories of {provider.name}: {change}")

        _retrying(attempt, f"inventories of {provider.name}", self.max_retries)

    def _sync_traits(self, provider: DesiredProvider) -> None:
        uuid = self.uuids[provider.path]

        def attempt() -> None:
            generation, current = self.client.get_traits(uuid)
            wanted = frozenset(t for t in current if not is_agent_trait(t)) | provider.traits
            if self.take_over and provider.parent_path is None:  # Nova's traits leave with it
                wanted = frozenset(t for t in wanted if not nova_trait(t))
            if wanted == current:
                return
            new = wanted - current
            missing = new - self.client.existing_traits(new)
            for trait in sorted(missing):
                if trait.startswith("CUSTOM_"):
                    self.client.create_trait(trait)
                    self.report.change(f"created trait {trait}")
                elif trait not in self.unknown_traits:
                    # e.g. MEMORY_PAGE_SIZE_SMALL on an OpenStack Placement without the extension
                    self.unknown_traits.add(trait)
                    self.report.note(f"the service does not know standard trait {trait}; not set")
            wanted -= {t for t in missing if not t.startswith("CUSTOM_")}
            if wanted == current:
                return
            self.client.put_traits(uuid, generation, wanted)
            added, removed = sorted(wanted - current), sorted(current - wanted)
            self.report.change(f"traits of {provider.name}: +{added} -{removed}")

        _retrying(attempt, f"traits of {provider.name}", self.max_retries)

    # -- 5 ---------------------------------------------------------------------------------------

    def _remove_vanished(self, existing: list[ProviderRecord]) -> None:
        wanted = {p.name for p in self.tree.providers}
        prefix = f"{self.tree.root.name}_NUMA"
        device = re.compile(rf"^{re.escape(self.tree.root.name)}_{PCI_ADDRESS}$")
        by_uuid = {p.uuid: p for p in existing}

        def depth(record: ProviderRecord) -> int:
            level, parent = 0, record.parent_provider_uuid
            while parent is not None and parent in by_uuid:
                level, parent = level + 1, by_uuid[parent].parent_provider_uuid
            return level

        vanished = [
            p
            for p in existing
            if p.name not in wanted and (p.name.startswith(prefix) or device.match(p.name))
        ]
        blocked: set[str] = set()  # uuids that must stay because something below them stays
        for record in sorted(vanished, key=depth, reverse=True):
            why = "providers below it are kept" if record.uuid in blocked else None
            if why is None:
                allocations = self.client.get_provider_allocations(record.uuid)
                if allocations:
                    why = f"allocations of consumer(s) {', '.join(sorted(allocations))}"
            if why is None:
                try:
                    self.client.delete_provider(record.uuid)
                    self.report.change(f"deleted vanished provider {record.name} ({record.uuid})")
                    continue
                except (ProviderConflict, NotFoundError) as exc:
                    why = str(exc)
            self._keep(record, why)
            parent = record.parent_provider_uuid
            while parent is not None and parent in by_uuid:
                blocked.add(parent)
                parent = by_uuid[parent].parent_provider_uuid

    def _keep(self, record: ProviderRecord, why: str) -> None:
        text = f"kept vanished provider {record.name} ({record.uuid}): {why}"
        self.report.kept.append(text)
        LOG.warning("%s", text)

    # -- 6 ---------------------------------------------------------------------------------------

    def _sync_distances(self) -> None:
        distances.sync_distances(self.client, self.tree, self.uuids, self.report)


def sync(
    client: PlacementClient,
    tree: DesiredTree,
    *,
    max_retries: int = 3,
    reshape: Callable[[PlacementClient, DesiredTree, ProviderRecord, SyncReport], bool]
    | None = None,
    on_provider: Callable[[], None] | None = None,
    take_over: bool = False,
) -> SyncReport:
    """Bring Placement in line with ``tree`` (steps in the module docstring).

    ``reshape`` is called for a flat compute node with allocations; it returns True once the
    host was reshaped. Raises ``ReshapeRequired`` when it is None or returns False, and
    ``SyncError`` when a write fails for another reason than a generation conflict, or keeps
    conflicting after ``max_retries`` re-reads. ``on_provider`` (optional) is called once per
    provider of ``tree`` whose inventories and traits are in sync (a progress hook).

    Raises ``ownership.NovaManagedTree`` (nothing written) when nova-compute manages the compute
    node; ``take_over=True`` (the operator stopped nova-compute on this host for good) instead
    removes Nova's traits from the root and moves its flat inventory onto the cells.
    """
    return _Syncer(client, tree, max_retries, on_provider, take_over).run(reshape)
