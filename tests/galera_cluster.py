"""A MariaDB Galera cluster on loopback, started by tests and benchmarks (issue 23).

``GaleraCluster(size=3).start()`` runs ``size`` ``mariadbd`` processes (Debian's
``mariadb-server`` with ``galera-4``) as OS user ``mysql`` (rsync state transfer needs it), each
with its own temporary data directory and free loopback ports (client, group communication,
incremental and full state transfer). Node 0 bootstraps the cluster (``--wsrep-new-cluster``);
the others join it by rsync state transfer from node 0. ``kill(i)`` SIGKILLs a node, ``rejoin(i)``
starts it again (a full state transfer from a node no test writes through, ``donor``), and
``stop()`` stops every node and removes the directories.

Clients connect as ``root`` without a password over TCP: ``url(i, database)``.

Requirements: root or user ``mysql`` (the nodes run as ``mysql``), ``/usr/sbin/mariadbd``,
``/usr/lib/galera/libgalera_smm.so``, ``rsync``; ``available()`` says why not when one is missing.
"""

from __future__ import annotations

import os
import pwd
import random
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pymysql

from tests.servers import free_port

__all__ = ["GaleraCluster", "available", "PROVIDER"]

PROVIDER = "/usr/lib/galera/libgalera_smm.so"
MARIADBD = "/usr/sbin/mariadbd"
PORTS = range(19600, 19700)  # this module's share of the test ports
START_TIMEOUT_S = 90.0


def available() -> str | None:
    """``None`` when a cluster can start here, else the reason it cannot."""
    for path in (MARIADBD, PROVIDER):
        if not os.path.exists(path):
            return f"{path} is missing (apt-get install mariadb-server galera-4)"
    for tool in ("rsync", "mariadb-install-db"):
        if shutil.which(tool) is None:
            return f"{tool} is missing"
    try:
        pwd.getpwnam("mysql")
    except KeyError:
        return "no OS user mysql"
    if os.geteuid() not in (0, pwd.getpwnam("mysql").pw_uid):
        return "the nodes run as OS user mysql: needs root (or mysql)"
    return None


@dataclass
class _Node:
    index: int
    home: Path
    port: int
    gcomm_port: int
    ist_port: int
    sst_port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def datadir(self) -> Path:
        return self.home / "data"

    @property
    def log(self) -> Path:
        return self.home / "error.log"


@dataclass
class GaleraCluster:
    size: int = 3
    donor: int = 2  # the node rejoining nodes copy their state from
    name: str = field(default_factory=lambda: f"pn{random.randrange(10**6)}")
    nodes: list[_Node] = field(default_factory=list)
    home: Path | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> GaleraCluster:
        """Bootstrap node 0 and join the others; ``RuntimeError`` (with the log's tail) when a
        node does not come up within ``START_TIMEOUT_S``."""
        self.home = Path(tempfile.mkdtemp(prefix="pn-galera-"))
        self.home.chmod(0o755)
        ports = random.sample(list(PORTS), len(PORTS))
        taken: set[int] = set()
        for index in range(self.size):
            picked = []
            for _ in range(4):
                port = free_port(p for p in ports if p not in taken)
                taken.add(port)
                picked.append(port)
            port, gcomm_port, ist_port, sst_port = picked
            node = _Node(index, self.home / f"node{index}", port, gcomm_port, ist_port, sst_port)
            node.datadir.mkdir(parents=True)
            self.nodes.append(node)
        mysql = pwd.getpwnam("mysql")
        for path in [self.home, *(p for n in self.nodes for p in (n.home, n.datadir))]:
            os.chown(path, mysql.pw_uid, mysql.pw_gid)
        try:
            for node in self.nodes:
                self._write_config(node)
            first = self.nodes[0]
            subprocess.run(
                ["mariadb-install-db", f"--defaults-file={first.home / 'my.cnf'}"]
                + ["--user=mysql", "--auth-root-authentication-method=normal"]
                + ["--skip-test-db", "--skip-name-resolve"],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=120,
            )
            self._launch(first, bootstrap=True)
            self._wait_ready(first)
            with self._connect(first, unix_socket=True) as conn, conn.cursor() as cursor:
                cursor.execute("CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'")
                cursor.execute("GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION")
            for node in self.nodes[1:]:
                self._launch(node, donor=first.index)
                self._wait_ready(node)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every node (SIGTERM, then SIGKILL after 20 s) and remove the directories."""
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                node.process.terminate()
        for node in self.nodes:
            if node.process is not None:
                try:
                    node.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    node.process.kill()
                    node.process.wait()
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None

    def __enter__(self) -> GaleraCluster:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def kill(self, index: int) -> None:
        """SIGKILL node ``index`` (no shutdown: a crash)."""
        process = self.nodes[index].process
        assert process is not None
        process.send_signal(signal.SIGKILL)
        process.wait()

    def rejoin(self, index: int, *, wait: bool = True) -> None:
        """Start node ``index`` again; it copies the state from ``donor`` (rsync) and rejoins."""
        node = self.nodes[index]
        self._launch(node, donor=self.donor if self.donor != index else None)
        if wait:
            self._wait_ready(node)

    def wait_ready(self, index: int) -> None:
        """Wait until node ``index`` is synced and accepts writes."""
        self._wait_ready(self.nodes[index])

    # --- addresses ----------------------------------------------------------------------------

    def url(self, index: int, database: str = "") -> str:
        """The SQLAlchemy URL of node ``index`` (TCP, root without password)."""
        return f"mysql://root@127.0.0.1:{self.nodes[index].port}/{database}"

    def execute(self, index: int, *statements: str) -> list[tuple[object, ...]]:
        """Run ``statements`` on node ``index`` (autocommit); the rows of the last."""
        with self._connect(self.nodes[index]) as conn, conn.cursor() as cursor:
            rows: list[tuple[object, ...]] = []
            for statement in statements:
                cursor.execute(statement)
                rows = list(cursor.fetchall())
            return rows

    # --- internals ----------------------------------------------------------------------------

    def _write_config(self, node: _Node) -> None:
        peers = ",".join(f"127.0.0.1:{n.gcomm_port}" for n in self.nodes)
        options = ";".join(
            [
                f"gmcast.listen_addr=tcp://127.0.0.1:{node.gcomm_port}",
                f"ist.recv_addr=127.0.0.1:{node.ist_port}",
                "gcache.size=64M",
                "evs.suspect_timeout=PT3S",
                "evs.inactive_timeout=PT6S",
                "evs.install_timeout=PT6S",
                "pc.wait_prim_timeout=PT30S",
            ]
        )
        config = f"""[mysqld]
datadir={node.datadir}
socket={node.home / "mysqld.sock"}
pid-file={node.home / "mysqld.pid"}
log-error={node.log}
port={node.port}
bind-address=127.0.0.1
skip-name-resolve
user=mysql
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
innodb_buffer_pool_size=48M
innodb_log_file_size=16M
innodb_flush_log_at_trx_commit=0
max_connections=300
performance_schema=OFF
wsrep_on=ON
wsrep_provider={PROVIDER}
wsrep_cluster_name={self.name}
wsrep_cluster_address=gcomm://{peers}
wsrep_node_name=node{node.index}
wsrep_node_address=127.0.0.1:{node.gcomm_port}
wsrep_node_incoming_address=127.0.0.1:{node.port}
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:{node.sst_port}
wsrep_provider_options="{options}"
wsrep_slave_threads=2
"""
        path = node.home / "my.cnf"
        path.write_text(config)
        path.chmod(0o644)

    def _launch(self, node: _Node, *, bootstrap: bool = False, donor: int | None = None) -> None:
        command = [MARIADBD, f"--defaults-file={node.home / 'my.cnf'}"]
        if bootstrap:
            command.append("--wsrep-new-cluster")
        if donor is not None:
            command.append(f"--wsrep-sst-donor=node{donor}")
        with open(node.home / "stdout.log", "ab") as out:
            node.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)

    def _connect(self, node: _Node, *, unix_socket: bool = False) -> pymysql.Connection:
        if unix_socket:
            return pymysql.connect(
                unix_socket=str(node.home / "mysqld.sock"), user="root", autocommit=True
            )
        return pymysql.connect(
            host="127.0.0.1", port=node.port, user="root", autocommit=True, connect_timeout=5
        )

    def _wait_ready(self, node: _Node) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        last = ""
        while time.monotonic() < deadline:
            if node.process is not None and node.process.poll() is not None:
                break
            try:
                with self._connect(node, unix_socket=True) as conn, conn.cursor() as cursor:
                    cursor.execute("SHOW STATUS LIKE 'wsrep_local_state_comment'")
                    row = cursor.fetchone()
                    if row and row[1] == "Synced":
                        cursor.execute("SHOW STATUS LIKE 'wsrep_ready'")
                        ready = cursor.fetchone()
                        if ready and ready[1] == "ON":
                            return
                    last = str(row)
            except pymysql.MySQLError as exc:
                last = str(exc)
            time.sleep(0.3)
        tail = node.log.read_text(errors="replace")[-3000:] if node.log.exists() else ""
        raise RuntimeError(f"Galera node {node.index} did not come up ({last}):\n{tail}")
