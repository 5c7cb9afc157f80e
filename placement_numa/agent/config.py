"""Agent settings in Nova's terms, and their validation against the discovered host.

Environment variables carry the prefix ``PLACEMENT_NUMA_AGENT_``
(``PLACEMENT_NUMA_AGENT_CPU_DEDICATED_SET=4-15,^8``).
The options and their defaults follow Nova's ``[compute]`` / ``[DEFAULT]`` options of the same
names (``cpu_dedicated_set``, ``cpu_shared_set``, ``reserved_host_cpus``,
``reserved_host_memory_mb``, ``reserved_host_disk_mb``, ``initial_*_allocation_ratio``).

``AgentSettings.policy_for(host)`` checks the settings against a ``HostTopology`` and returns
the resolved ``HostPolicy`` the desired tree is built from; every problem found is listed in
one ``AgentConfigError``.
"""

from __future__ import annotations

import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from placement_numa.agent.pci import DeviceSpec, DeviceSpecError, parse_device_specs
from placement_numa.agent.sysfs import HostTopology
from placement_numa.conf import conf_option
from placement_numa.numa.cpu_spec import CpuSpecError, format_cpu_spec, parse_cpu_spec

if TYPE_CHECKING:
    import httpx

__all__ = ["AgentConfigError", "AgentSettings", "HostPolicy", "device_specs_from_file"]


class AgentConfigError(ValueError):
    """The settings do not fit the host; ``problems`` lists each finding in one sentence."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid agent configuration: " + "; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class HostPolicy:
    """Resolved settings for one host (the input of ``desired_tree.build``).

    ``pcpus``/``vcpus``: host CPU ids reported as PCPU (dedicated) and VCPU (shared).
    Memory in MiB, disk in GiB.
    """

    hostname: str
    pcpus: frozenset[int]
    vcpus: frozenset[int]
    reserved_host_cpus: int = 0
    reserved_host_memory_mb: int = 0
    reserved_host_disk_gb: int = 0
    cpu_allocation_ratio: float = 4.0
    ram_allocation_ratio: float = 1.0
    disk_allocation_ratio: float = 1.0
    disk_gb: int = 0
    device_specs: tuple[DeviceSpec, ...] = ()


def _check_spec(value: str | None) -> str | None:
    if value is None or value.strip() == "":
        return None
    try:
        cpus = parse_cpu_spec(value)
    except CpuSpecError as exc:
        raise ValueError(str(exc)) from exc
    if not cpus:
        raise ValueError(f"CPU spec {value!r} names no CPUs")
    return value


class AgentSettings(BaseSettings):
    """Configuration of ``placement-numa agent``. A field tagged with ``conf_option`` is also
    read from that nova.conf option by ``--config-file`` (``cli/config_file.py`` derives its
    table from these tags: each option declared once, here); ``pci_device_spec`` is nova.conf's
    ``[pci] device_spec`` (``conf.DEVICE_SPEC_OPTS``)."""

    model_config = SettingsConfigDict(env_prefix="PLACEMENT_NUMA_AGENT_", extra="ignore")

    hostname: str = Field(
        default_factory=socket.gethostname,
        json_schema_extra=conf_option("DEFAULT", "host"),
        description="Name of the compute node root provider (cells are <hostname>_NUMA<id>).",
    )
    placement_url: str = Field(
        default="http://127.0.0.1:8778",
        json_schema_extra=conf_option("placement", "endpoint_override"),
        description="Placement API endpoint.",
    )
    token: str = Field(
        default="admin", description="Sent as x-auth-token when auth_url is not set (noauth2)."
    )
    auth_url: str | None = Field(
        default=None,
        json_schema_extra=conf_option("placement", "auth_url"),
        description="Keystone identity endpoint (http://keystone:5000/v3): with it the agent "
        "authenticates as username with password (keystoneauth1) instead of sending token.",
    )
    username: str | None = Field(
        default=None,
        description="Keystone user (e.g. nova).",
        json_schema_extra=conf_option("placement", "username"),
    )
    password: SecretStr | None = Field(
        default=None,
        description="The Keystone user's password (environment only).",
        json_schema_extra=conf_option("placement", "password"),
    )
    project_name: str = Field(
        default="service",
        description="Project the token is scoped to.",
        json_schema_extra=conf_option("placement", "project_name"),
    )
    user_domain_name: str = Field(default="Default", description="The user's domain.")
    project_domain_name: str = Field(default="Default", description="The project's domain.")
    timeout: float = Field(default=30.0, gt=0, description="HTTP timeout, seconds.")
    sysfs_root: Path = Field(default=Path("/sys"), description="Where sysfs is mounted.")
    cpu_dedicated_set: str | None = Field(
        default=None,
        description="Host CPUs reported as PCPU (Nova spec syntax, e.g. 4-15,^8).",
        json_schema_extra=conf_option("compute", "cpu_dedicated_set"),
    )
    cpu_shared_set: str | None = Field(
        default=None,
        description="Host CPUs reported as VCPU (Nova spec syntax).",
        json_schema_extra=conf_option("compute", "cpu_shared_set"),
    )
    reserved_host_cpus: int = Field(default=0, ge=0, description="VCPUs reserved for the host.")
    reserved_host_memory_mb: int = Field(
        default=512, ge=0, description="MiB of small-page memory reserved for the host."
    )
    reserved_host_disk_mb: int = Field(default=0, ge=0, description="MiB of disk reserved.")
    cpu_allocation_ratio: float = Field(default=4.0, gt=0)
    ram_allocation_ratio: float = Field(default=1.0, gt=0)
    disk_allocation_ratio: float = Field(default=1.0, gt=0)
    disk_gb: int | None = Field(
        default=None,
        ge=0,
        description="DISK_GB total; the size of instances_path's filesystem when unset.",
    )
    instances_path: Path = Field(
        default=Path("/"), description="Filesystem measured for DISK_GB when disk_gb is unset."
    )
    pci_device_spec: list[str] = Field(
        default_factory=list,
        description=(
            "Nova's [pci] device_spec lines (JSON each: vendor_id, product_id, address, devname,"
            " resource_class, traits): the PCI devices reported as providers under their NUMA"
            " cell. Environment: a JSON list of strings. Read from --config-file's [pci]."
        ),
    )

    _spec = field_validator("cpu_dedicated_set", "cpu_shared_set")(_check_spec)

    @model_validator(mode="after")
    def _nova_rules(self) -> AgentSettings:
        """Host-independent rules: the two CPU sets are disjoint (Nova refuses overlap), and
        ``reserved_host_cpus`` cannot be combined with ``cpu_dedicated_set`` (as in Nova)."""
        if self.cpu_dedicated_set and self.cpu_shared_set:
            both = parse_cpu_spec(self.cpu_dedicated_set) & parse_cpu_spec(self.cpu_shared_set)
            if both:
                raise ValueError(
                    f"cpu_dedicated_set and cpu_shared_set overlap on CPUs {format_cpu_spec(both)}"
                )
        if self.cpu_dedicated_set and self.reserved_host_cpus:
            raise ValueError(
                "reserved_host_cpus cannot be used with cpu_dedicated_set; leave the host's CPUs "
                "out of both CPU sets instead"
            )
        if self.auth_url and not (self.username and self.password):
            raise ValueError(
                "auth_url needs username and password (PLACEMENT_NUMA_AGENT_USERNAME, "
                "PLACEMENT_NUMA_AGENT_PASSWORD)"
            )
        return self

    def http_auth(self) -> httpx.Auth | None:
        """Keystone authentication for the Placement client when ``auth_url`` is set
        (``agent.auth.KeystoneTokenAuth``), else None (the fixed ``token`` is sent)."""
        if not self.auth_url:
            return None
        from placement_numa.agent.auth import KeystoneTokenAuth

        assert self.username is not None and self.password is not None  # _nova_rules
        return KeystoneTokenAuth(
            auth_url=self.auth_url,
            username=self.username,
            password=self.password.get_secret_value(),
            project_name=self.project_name,
            user_domain_name=self.user_domain_name,
            project_domain_name=self.project_domain_name,
            timeout=self.timeout,
        )

    def cpu_sets(self, host: HostTopology) -> tuple[frozenset[int], frozenset[int]]:
        """``(pcpus, vcpus)`` for ``host``, by Nova's rules: neither set configured -> every host
        CPU is a VCPU; only ``cpu_dedicated_set`` -> no VCPU; only ``cpu_shared_set`` -> no PCPU."""
        dedicated = parse_cpu_spec(self.cpu_dedicated_set) if self.cpu_dedicated_set else None
        shared = parse_cpu_spec(self.cpu_shared_set) if self.cpu_shared_set else None
        if dedicated is None and shared is None:
            return frozenset(), host.cpus
        return dedicated or frozenset(), shared or frozenset()

    def policy_for(self, host: HostTopology) -> HostPolicy:
        """Validate against ``host`` and resolve. Raises ``AgentConfigError`` listing: CPU sets
        naming CPUs the host lacks, more reserved CPUs than VCPUs, more reserved memory than the
        host's small-page memory, a DISK_GB size that cannot be measured."""
        problems: list[str] = []
        pcpus, vcpus = self.cpu_sets(host)
        host_cpus = format_cpu_spec(host.cpus)
        for option, cpus in (("cpu_dedicated_set", pcpus), ("cpu_shared_set", vcpus)):
            missing = cpus - host.cpus
            if missing:
                problems.append(
                    f"{option} names CPUs {format_cpu_spec(missing)} that this host lacks "
                    f"(host CPUs: {host_cpus})"
                )
        if self.reserved_host_cpus > len(vcpus):
            problems.append(
                f"reserved_host_cpus={self.reserved_host_cpus} exceeds the {len(vcpus)} CPUs "
                "reported as VCPU"
            )
        small_mb = sum(cell.memory_kb - cell.hugepage_memory_kb for cell in host.cells) // 1024
        if self.reserved_host_memory_mb > small_mb:
            problems.append(
                f"reserved_host_memory_mb={self.reserved_host_memory_mb} exceeds the host's "
                f"{small_mb} MiB of small-page memory"
            )
        disk_gb = self.disk_gb
        if disk_gb is None:
            try:
                disk_gb = shutil.disk_usage(self.instances_path).total // 1024**3
            except OSError as exc:
                problems.append(
                    f"cannot measure disk at instances_path={self.instances_path}: {exc}"
                )
                disk_gb = 0
        device_specs: tuple[DeviceSpec, ...] = ()
        try:
            device_specs = parse_device_specs(self.pci_device_spec)
        except DeviceSpecError as exc:
            problems.append(str(exc))
        if problems:
            raise AgentConfigError(problems)
        return HostPolicy(
            hostname=self.hostname,
            pcpus=pcpus,
            vcpus=vcpus,
            reserved_host_cpus=self.reserved_host_cpus,
            reserved_host_memory_mb=self.reserved_host_memory_mb,
            reserved_host_disk_gb=-(-self.reserved_host_disk_mb // 1024),
            cpu_allocation_ratio=self.cpu_allocation_ratio,
            ram_allocation_ratio=self.ram_allocation_ratio,
            disk_allocation_ratio=self.disk_allocation_ratio,
            disk_gb=disk_gb,
            device_specs=device_specs,
        )


def device_specs_from_file(path: Path | str) -> list[str]:
    """The ``[pci] device_spec`` lines of a nova.conf-style file (Nova's ``MultiStrOpt``; none
    when unset). Raises ``placement_numa.conf.ConfigFileError`` for a missing or unparsable
    file."""
    from oslo_config import cfg

    from placement_numa.conf import DEVICE_SPEC_OPTS, ConfigFileError

    if not Path(path).is_file():
        raise ConfigFileError(f"configuration file not found: {path}")
    conf = cfg.ConfigOpts()
    conf.register_opts(DEVICE_SPEC_OPTS, group="pci")
    try:
        conf(args=[], project="nova", default_config_files=[str(path)], default_config_dirs=[])
    except cfg.Error as exc:
        raise ConfigFileError(f"{path}: {exc}") from None
    return list(conf.pci.device_spec or [])
