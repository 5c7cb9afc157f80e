"""A PostgreSQL primary with a synchronous streaming standby on loopback (issue 23).

``PrimaryStandby().start()`` runs ``initdb`` for a primary on a free loopback port
(``synchronous_standby_names = '*'``: a commit returns once the standby has flushed it), takes
a ``pg_basebackup -R`` of it and starts that as a hot standby on another port.
``kill_primary()`` stops the primary with ``pg_ctl stop -m immediate`` (no shutdown checkpoint:
a crash), ``promote()`` promotes the standby, ``stop()`` stops both and removes the directories.

The servers run as the OS user ``postgres`` when the tests run as root (``initdb`` refuses
root), else as the current user. Binaries: ``/usr/lib/postgresql/15/bin`` (Debian), or
``PLACEMENT_NUMA_TEST_PG_BIN``.
"""

from __future__ import annotations

import os
import pwd
import random
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.servers import free_port

__all__ = ["PrimaryStandby", "available"]

PORTS = range(19700, 19800)  # this module's share of the test ports


def _bin_dir() -> Path:
    return Path(os.environ.get("PLACEMENT_NUMA_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))


def available() -> str | None:
    """``None`` when the pair can start here, else the reason it cannot."""
    for tool in ("initdb", "pg_ctl", "pg_basebackup"):
        if not (_bin_dir() / tool).exists():
            return f"{_bin_dir() / tool} is missing (apt-get install postgresql-15)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no OS user postgres"
    return None


@dataclass
class PrimaryStandby:
    home: Path | None = None
    ports: list[int] = field(default_factory=list)

    @property
    def primary_port(self) -> int:
        return self.ports[0]

    @property
    def standby_port(self) -> int:
        return self.ports[1]

    def url(self, database: str) -> str:
        """The multi-host libpq form: both servers, the one accepting writes chosen."""
        return (
            f"postgresql://postgres@/{database}?host=127.0.0.1,127.0.0.1"
            f"&port={self.primary_port},{self.standby_port}&target_session_attrs=read-write"
        )

    def start(self) -> PrimaryStandby:
        """initdb, start the primary, base-backup and start the standby; raises
        ``subprocess.CalledProcessError`` (output kept in the log files) on failure."""
        self.home = Path(tempfile.mkdtemp(prefix="pn-pg-"))
        self.home.chmod(0o755)
        candidates = random.sample(list(PORTS), len(PORTS))
        first = free_port(candidates)
        self.ports = [first, free_port(p for p in candidates if p != first)]
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.home, owner.pw_uid, owner.pw_gid)
        try:
            self._run("initdb", "-D", self._dir("primary"), "-U", "postgres", "--auth=trust", "-N")
            config = "\n".join(
                [
                    "listen_addresses = '127.0.0.1'",
                    f"unix_socket_directories = '{self.home}'",
                    "wal_level = replica",
                    "max_wal_senders = 4",
                    "synchronous_standby_names = '*'",
                    "synchronous_commit = on",
                    "fsync = off",  # a process crash loses nothing; the machine does not crash
                    "shared_buffers = 32MB",
                    "max_connections = 100",
                    "",
                ]
            )
            self._run("sh", "-c", f"cat >> {self._dir('primary')}/postgresql.conf", stdin=config)
            self._pg_ctl("primary", "start", self.primary_port)
            self._run(
                "pg_basebackup",
                "-h",
                "127.0.0.1",
                "-p",
                str(self.primary_port),
                "-U",
                "postgres",
                "-D",
                self._dir("standby"),
                "-R",
                "-X",
                "stream",
            )
            # once promoted it runs alone: it must not wait for a synchronous standby of its own
            self._run(
                "sh",
                "-c",
                f"cat >> {self._dir('standby')}/postgresql.conf",
                stdin="synchronous_standby_names = ''\n",
            )
            self._pg_ctl("standby", "start", self.standby_port)
        except BaseException:
            self.stop()
            raise
        return self

    def kill_primary(self) -> None:
        """``pg_ctl stop -m immediate`` on the primary."""
        self._run("pg_ctl", "-D", self._dir("primary"), "stop", "-m", "immediate", "-w")

    def promote(self) -> None:
        """Promote the standby and wait until it accepts writes."""
        self._run("pg_ctl", "-D", self._dir("standby"), "promote", "-w")

    def stop(self) -> None:
        """Stop both servers (immediate) and remove the directories."""
        if self.home is None:
            return
        for name in ("primary", "standby"):
            if (Path(self._dir(name)) / "postmaster.pid").exists():
                pg_ctl = str(_bin_dir() / "pg_ctl")
                subprocess.run(
                    self._prefix() + [pg_ctl, "-D", self._dir(name), "stop", "-m", "immediate"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    check=False,
                    timeout=60,
                )
        shutil.rmtree(self.home, ignore_errors=True)
        self.home = None

    def __enter__(self) -> PrimaryStandby:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def _dir(self, name: str) -> str:
        assert self.home is not None
        return str(self.home / name)

    def _prefix(self) -> list[str]:
        return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _pg_ctl(self, name: str, action: str, port: int) -> None:
        log = f"{self._dir(name)}.log"
        self._run("pg_ctl", "-D", self._dir(name), "-l", log, "-o", f"-p {port}", "-w", action)

    def _run(self, tool: str, *args: str, stdin: str | None = None) -> None:
        executable = tool if tool == "sh" else str(_bin_dir() / tool)
        subprocess.run(
            self._prefix() + [executable, *args],
            input=stdin.encode() if stdin is not None else None,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=True,
            timeout=120,
        )
