"""Nova's functional tests against a live placement-numa (issue 28): runs in the Nova virtualenv.

Nova's ``PlacementFixture`` (``nova.tests.functional.fixtures``) subclasses upstream's
``placement.tests.functional.fixtures.placement.PlacementFixture`` and sends every report-client
call to that fixture's ``endpoint``. ``install()`` replaces the upstream base class's ``setUp``:
instead of loading upstream's WSGI app behind wsgi-intercept, each fixture gets a real
``placement-numa serve`` process (noauth2, one worker, a fresh SQLite file copied from a template
migrated once per run, a free loopback port) and ``endpoint`` points at it. Nova's tests then run
unchanged. Stdlib only (the Nova virtualenv has none of our dependencies).

Environment:

* ``PLACEMENT_NUMA_SERVER``: the ``placement-numa`` executable of our virtualenv (required).
* ``PLACEMENT_NUMA_FUNC_TMP``: where databases and server logs go (default: a temporary dir).

Calls to placement-numa block the Nova process (a socket eventlet did not patch), as upstream's
in-process fixture does (wsgi-intercept serves a call inline): a green thread that yielded in
the middle of a Placement call let Nova's functional tests interleave in ways they never do with
upstream, and ``test_numa_live_migration``'s rollback tests deadlocked on the test database's
reader-writer lock (``_run_periodics`` inside the migration stub).

The service runs with ``[oslo_policy] enforce_new_defaults = False``, as upstream's fixture
configures upstream Placement for Nova's tests (an admin token may reshape).

Start-up is hidden: while one test runs, the next test's server is already starting
(``_Pool``), so a test waits for a server only when the previous one came up slower than the
test ran.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

# As upstream's fixture (``policy_opts.set_defaults(enforce_new_defaults=False)``): Nova's
# functional tests call Placement as admin, and the reshaper's new default is role:service.
POLICY_CONF = "[oslo_policy]\nenforce_new_defaults = False\n"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    """In the forked child: SIGTERM when the Nova test process dies, as when a hung run's
    stacks are dumped and it exits at once (``run.py``), without its ``atexit`` clean-up (Linux's
    ``PR_SET_PDEATHSIG``; elsewhere nothing)."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class LiveServer:
    """One ``placement-numa serve`` process on its own SQLite copy of the template."""

    def __init__(self, executable: str, template: str, workdir: str, serial: int) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.database = os.path.join(workdir, f"placement-{serial}.sqlite")
        self.log_path = os.path.join(workdir, f"placement-{serial}.log")
        shutil.copyfile(template, self.database)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_NUMA_")}
        env.update(PLACEMENT_NUMA_AUTH_STRATEGY="noauth2", PYTHONUNBUFFERED="1")
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [
                    executable,
                    "serve",
                    "--no-migrate",
                    "--workers",
                    "1",
                    "--port",
                    str(self.port),
                    "--database-url",
                    f"sqlite:///{self.database}",
                    "--config-file",
                    os.path.join(workdir, "placement.conf"),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=_die_with_parent,
            )

    def wait(self, timeout: float = 120.0) -> LiveServer:
        """Block until ``GET /`` answers (``RuntimeError`` with the log tail otherwise)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                with urllib.request.urlopen(self.url + "/", timeout=5) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        with open(self.log_path, errors="replace") as log:
            raise RuntimeError(f"placement-numa did not start: {log.read()[-3000:]}")

    def stop(self) -> None:
        """SIGTERM, SIGKILL after 15 s; the database file is removed."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for path in (self.database, self.database + "-wal", self.database + "-shm"):
            if os.path.exists(path):
                os.unlink(path)


class _Pool:
    """Servers handed out one per fixture, the next one always starting in the background."""

    def __init__(self) -> None:
        self.executable = os.environ.get("PLACEMENT_NUMA_SERVER", "")
        if not self.executable or not os.path.exists(self.executable):
            raise RuntimeError("PLACEMENT_NUMA_SERVER must name the placement-numa executable")
        self.workdir = os.environ.get("PLACEMENT_NUMA_FUNC_TMP") or tempfile.mkdtemp(
            prefix="placement-numa-nova-"
        )
        os.makedirs(self.workdir, exist_ok=True)
        self.template = os.path.join(self.workdir, "template.sqlite")
        with open(os.path.join(self.workdir, "placement.conf"), "w") as conf:
            conf.write(POLICY_CONF)
        subprocess.run(
            [self.executable, "db", "upgrade", "--database-url", f"sqlite:///{self.template}"],
            check=True,
            capture_output=True,
        )
        self.serial = 0
        self.next: LiveServer | None = None
        self.started: list[LiveServer] = []
        atexit.register(self.close)

    def _spawn(self) -> LiveServer:
        self.serial += 1
        server = LiveServer(self.executable, self.template, self.workdir, self.serial)
        self.started.append(server)
        return server

    def take(self) -> LiveServer:
        """A running server for one fixture; starts the one after it."""
        server = self.next or self._spawn()
        self.next = self._spawn()
        return server.wait()

    def close(self) -> None:
        """Stop every server still running (at exit)."""
        for server in self.started:
            server.stop()


_POOL: _Pool | None = None
_LIVE: set[tuple[str, int]] = set()  # (host, port) of every server started


NO_ANSWER_TIMEOUT = 120.0  # s


def _blocking_sockets_to_live_servers() -> None:
    """urllib3 connects to a live server with a socket eventlet did not patch (other
    addresses as before), so a Placement call never yields to another green thread."""
    import urllib3.util.connection as connection
    from eventlet import patcher

    native = patcher.original("socket")
    default = connection.create_connection

    def create_connection(address, timeout=None, source_address=None, socket_options=None):  # type: ignore[no-untyped-def]
        if tuple(address) not in _LIVE:
            return default(address, timeout, source_address, socket_options)
        sock = native.socket(native.AF_INET, native.SOCK_STREAM)
        for option in socket_options or ():
            sock.setsockopt(*option)
        # A call with no timeout of its own (keystoneauth's default) gets one: a server that
        # never answers fails that call instead of blocking every green thread of the run.
        sock.settimeout(timeout if isinstance(timeout, (int, float)) else NO_ANSWER_TIMEOUT)
        sock.connect(tuple(address))
        return sock

    connection.create_connection = create_connection


def pool() -> _Pool:
    """The process-wide server pool (created on first use)."""
    global _POOL
    if _POOL is None:
        _POOL = _Pool()
    return _POOL


def _live_setup(self):  # type: ignore[no-untyped-def]
    """Replacement for upstream ``PlacementFixture.setUp``: a live placement-numa."""
    import fixtures

    fixtures.Fixture.setUp(self)
    if not self.conf_fixture:
        # Tests tune upstream's options through it (test_pci_in_placement); they do not apply.
        from oslo_config import cfg
        from oslo_config import fixture as config_fixture
        from placement import conf

        self.conf_fixture = self.useFixture(config_fixture.Config(cfg.ConfigOpts()))
        if self.register_opts:
            conf.register_opts(self.conf_fixture.conf)
    server = pool().take()
    _LIVE.add(("127.0.0.1", server.port))
    self.addCleanup(server.stop)
    self.server = server
    self.endpoint = server.url


def install() -> None:
    """Make every (Nova) ``PlacementFixture`` use a live placement-numa."""
    from placement.tests.functional.fixtures import placement as placement_fixtures

    placement_fixtures.PlacementFixture.setUp = _live_setup
    _blocking_sockets_to_live_servers()
