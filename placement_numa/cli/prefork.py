"""``placement-numa serve --prefork``: one fleet snapshot per API node, forked into the workers.

The default ``--workers N`` (uvicorn's supervisor) spawns N fresh interpreters, and each loads
its own fleet snapshot from the database before it serves (at 100,000 hosts about 5 s and
850 MiB each). With ``prefork`` (``serve --prefork`` or ``PLACEMENT_NUMA_PREFORK=true``) a
supervisor process does it once:

1. **The supervisor loads.** It builds the application, loads the fleet snapshot and builds
   what each worker's first queries would otherwise build over the whole fleet (``warm``:
   per-class indexes, tree layout, NUMA cell index and host views), closes its database
   connections, freezes the garbage collector's view (``gc.freeze``: no collection walks the
   inherited objects, which would write to every page of them), binds the listening socket
   and forks the workers.
2. **Workers inherit the snapshot copy-on-write.** A worker shares the supervisor's pages
   until it writes to them (see "Memory" below), opens its own database connections (none are
   inherited) and, in its start-up, brings the inherited snapshot up to date with the
   incremental refresh (``SqlFleetSource``: only the trees written since the fork are
   reloaded; the whole fleet when the change log no longer covers the gap). All workers
   accept on the one socket.
3. **A worker that dies is replaced at once**: the supervisor patches its own snapshot forward
   (one incremental refresh, whatever the number of workers; when the change log no longer
   reaches, a whole load and ``warm`` again) and forks a replacement from it, which serves
   without loading the fleet. So that the log still reaches after a quiet while, the
   supervisor reads the revision every ``KEEP_UP_CHECK_S`` and refreshes its snapshot once it
   is ``KEEP_UP_REVISIONS`` behind (``Supervisor.keep_up``).

Refresh after a write: every process keeps following ``placement_revision`` as with spawned
workers (each query reads the revision; a moved revision patches the trees written). Each
worker therefore patches the same few trees after a write (O(trees written), a few
milliseconds each); what they share is the unchanged rest of the fleet. A snapshot a worker no
longer references is freed by that worker as before; the pages it still shared with the
supervisor stay in memory for the others, and are freed by the kernel once no process maps them.

Memory: CPython writes an object's reference count whenever code takes or drops a reference
to it, so each page of the snapshot a worker's searches touch becomes that worker's private
copy; ``benchmarks/workers_memory.py`` measures the whole node's PSS right after start and after
a load of queries and claims.

Signals to the supervisor: ``SIGTERM``/``SIGINT`` stop every worker gracefully (requests in
flight finish) and then the supervisor; ``SIGHUP`` re-reads placement.conf, the policy file and
the logging options in the supervisor and in every worker (``placement_numa.reload``), which
keep serving. If the supervisor dies (``SIGKILL``, a crash), each worker receives ``SIGTERM``
from the kernel (Linux ``PR_SET_PDEATHSIG``), finishes its requests in flight and exits: the
listening socket closes with the last of them and the service manager restarts the service
(``Restart=on-failure``), which loads the fleet again. Workers never run without a supervisor.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import os
import signal
import socket
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import FastAPI

    from placement_numa.settings import Settings

__all__ = ["serve_prefork", "Supervisor"]

LOG = logging.getLogger("placement_numa.prefork")

# Signals the supervisor waits for (blocked, taken with sigtimedwait: no handler runs mid-fork).
_WATCHED = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
# Seconds a stopping supervisor waits for its workers before SIGKILL.
STOP_TIMEOUT = 60.0
# A worker dying sooner than this after its start counts as a crash at start; past
# MAX_QUICK_DEATHS in a row the supervisor gives up (a broken configuration, not bad luck).
QUICK_DEATH_S = 5.0
MAX_QUICK_DEATHS = 5
_PR_SET_PDEATHSIG = 1
# Seconds between two reads of the workers' private memory (``prefork_max_private_mb``): a read
# of ``smaps_rollup`` walks the page tables, about 8 ms per worker at 100,000 hosts.
RECYCLE_CHECK_S = 5.0
# A worker younger than this (seconds) is never replaced for its memory: a limit below what a
# worker needs to serve would otherwise replace workers in a loop.
RECYCLE_MIN_AGE_S = 30.0
# Seconds between two reads of the fleet revision by the supervisor (``keep_up``).
KEEP_UP_CHECK_S = 5.0
# Revisions the supervisor's snapshot may fall behind before it refreshes it (``keep_up``): a
# quarter of what the change log keeps per stripe (``changes.KEEP_REVISIONS``, 2,000; not
# imported: SQLAlchemy stays out of the CLI's start), so that a replacement forked later still
# patches from the log instead of loading the whole fleet.
KEEP_UP_REVISIONS = 500
# The CPU classes of the NUMA host views built before forking: those a translated flavor asks
# (``numa.translate``: shared CPUs, dedicated, mixed)
WARMED_CPU_CLASSES = (("VCPU",), ("PCPU",), ("VCPU", "PCPU"))
# The key ``warm`` sets in the lineage's ``FleetSnapshot.derived`` once it built everything
WARMED = "prefork-warmed"


def serve_prefork(settings: Settings, options: dict[str, Any]) -> None:
    """Serve ``settings.workers`` forked workers (uvicorn ``options``) from one fleet snapshot
    loaded here (see the module docstring). Returns when the supervisor was asked to stop.

    Raises ``CommandError`` (``EXIT_FAILED``) when the address cannot be bound or the workers
    keep dying at start."""
    from placement_numa.api.engine_dep import preload_fleet
    from placement_numa.app import app_from_env

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # prometheus-client picks its value class at import, which ``serve`` did before it set
        # the multiprocess directory; every metric of the app is built below, after this
        from prometheus_client import values

        values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]
    app = app_from_env()
    started = time.perf_counter()
    app.state.load_watcher = _load_watcher(app)  # its baseline precedes the load
    preload_fleet(app)
    warm(app)
    LOG.info("prefork: supervisor loaded the fleet in %.2f s", time.perf_counter() - started)
    sock = _bind(settings.host, settings.port)
    try:
        supervisor = Supervisor(app, sock, options, settings.workers)
        supervisor.max_private_kib = settings.prefork_max_private_mb * 1024
        supervisor.run()
    finally:
        sock.close()


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket every worker accepts on (IPv6 when ``host`` is an IPv6 address)."""
    from placement_numa.cli.failures import EXIT_FAILED, CommandError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CommandError(f"cannot listen on {host}:{port}: {exc.strerror}", EXIT_FAILED) from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _load_watcher(app: FastAPI) -> Any:
    """A foreign-write watcher (``db.foreign_writes``; no thread) whose baseline precedes the
    supervisor's fleet load, where ``start_watcher`` would run one: each worker checks it once
    at start, after its own watcher's baseline (``app._lifespan``), so that a write made
    around us between this load and that baseline is not missed. ``None`` when off."""
    from placement_numa.app import watcher_for

    watcher = watcher_for(app)
    if watcher is not None:
        watcher.baseline()
    return watcher


def warm(app: FastAPI) -> None:
    """Build here, once, what a worker's first queries would each build over the whole fleet
    (O(fleet), touching every provider, so that the worker's copy of the fleet became
    private): the snapshot's indexes per resource class (room per provider, roots holding the
    class), its tree layout, the NUMA cell index and the NUMA host views of ``VCPU``, ``PCPU``
    and mixed flavors (``WARMED_CPU_CLASSES``). Workers inherit them and derive what they need
    after writes from them (the trees changed since recomputed:
    ``FleetSnapshot.changes_since``). At 100,000 hosts, a worker's first flavor query after 20
    claims made it 440 MiB private in 1.8 s without, 80 MiB in 0.1 s with them. A database
    that cannot be read is left to the workers."""
    from placement_numa.api.cell_index_dep import cell_index_for_state
    from placement_numa.api.engine_dep import engine_for_state
    from placement_numa.engine.root_classes import tree_layout
    from placement_numa.numa.host_view import host_view

    try:
        fleet = engine_for_state(app.state).snapshot()
        index = cell_index_for_state(app.state).get(app.state.database, fleet.revision, fleet)
    except Exception:  # noqa: BLE001 - logged by preload_fleet; the workers load it then
        return
    classes = {rc for provider in fleet.providers for rc in provider.inventories}
    for resource_class in sorted(classes):
        fleet.room_column(resource_class)
        fleet.roots_having(resource_class)
    tree_layout(fleet)
    for cpu_classes in WARMED_CPU_CLASSES:
        host_view(fleet, index, cpu_classes)
    fleet.derived[WARMED] = True  # shared by the snapshots patched from this one


def private_kib(pid: int) -> int:
    """KiB of memory ``pid`` holds alone (``Private_Clean + Private_Dirty`` of
    ``/proc/<pid>/smaps_rollup``; 0 when unreadable)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            lines = rollup.read().splitlines()
    except OSError:
        return 0
    return sum(int(line.split()[1]) for line in lines if line.startswith("Private_"))


def release_connections(app: FastAPI) -> None:
    """Close every database connection this process holds (the fleet source's and the
    pool's), so that no connection is shared with a forked child."""
    source = getattr(app.state, "fleet_source", None)
    if source is not None:
        source.release_connection()
    app.state.database.dispose()


class Supervisor:
    """Forks and keeps ``count`` workers serving ``app`` on ``sock`` (see the module
    docstring); ``run`` returns once stopped."""

    def __init__(self, app: FastAPI, sock: socket.socket, options: dict[str, Any], count: int):
        self.app = app
        self.sock = sock
        self.options = options
        self.count = count
        self.workers: dict[int, float] = {}  # pid -> monotonic start
        self.retiring: set[int] = set()  # asked to stop after their replacement was forked
        # a worker holding more private memory than this (KiB) is replaced (0: never)
        self.max_private_kib = 0
        self.recycled = 0
        self.next_check = 0.0  # monotonic time of the next private memory check
        # the snapshot is refreshed once it is this many revisions behind (``keep_up``)
        self.keep_up_revisions = KEEP_UP_REVISIONS
        self.next_keep_up = time.monotonic() + KEEP_UP_CHECK_S  # next revision read
        self.stopping = False
        self.deadline = 0.0  # monotonic time past which stopping workers are killed
        self.quick_deaths = 0

    def run(self) -> None:
        """Fork the workers, then replace each that dies until SIGTERM or SIGINT."""
        from placement_numa.cli.failures import EXIT_FAILED, CommandError

        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
        try:
            release_connections(self.app)
            gc.collect()
            gc.freeze()
            for _ in range(self.count):
                self.fork(previous)
            while self.workers:
                info = signal.sigtimedwait(_WATCHED, 1.0)
                if info is not None and info.si_signo != signal.SIGCHLD:
                    self.on_signal(info.si_signo)
                self.reap()
                if self.quick_deaths >= MAX_QUICK_DEATHS and not self.stopping:
                    LOG.error("prefork: workers keep dying at start; stopping")
                    self.stop()
                    self.wait_stopped()
                    raise CommandError("the workers did not start", EXIT_FAILED)
                while not self.stopping and len(self.workers) - len(self.retiring) < self.count:
                    self.refresh()
                    self.fork(previous)
                if self.max_private_kib and not self.stopping:
                    self.recycle(previous)
                if not self.stopping:
                    self.keep_up()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def on_signal(self, signo: int) -> None:
        """SIGTERM/SIGINT: stop the workers; SIGHUP: reload here and in every worker."""
        if signo == signal.SIGHUP:
            from placement_numa.reload import reload_configuration

            reload_configuration(self.app)
            self.signal_all(signal.SIGHUP)
            return
        self.stop()

    def stop(self) -> None:
        """Ask every worker to finish gracefully (SIGTERM); SIGKILL after ``STOP_TIMEOUT``."""
        if not self.stopping:
            self.stopping = True
            self.deadline = time.monotonic() + STOP_TIMEOUT
            self.signal_all(signal.SIGTERM)
        elif time.monotonic() > self.deadline:
            self.signal_all(signal.SIGKILL)

    def wait_stopped(self) -> None:
        """Reap the workers until none is left (after ``stop``)."""
        while self.workers:
            time.sleep(0.1)
            self.reap()
            self.stop()

    def signal_all(self, signo: int) -> None:
        """Send ``signo`` to every worker still running."""
        for pid in list(self.workers):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signo)

    def reap(self) -> None:
        """Forget the workers that exited (logged unless stopping)."""
        if self.stopping:
            self.stop()  # SIGKILL the stragglers past the deadline
        while self.workers:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.workers.clear()
                return
            if pid == 0:
                return
            started = self.workers.pop(pid, None)
            if pid in self.retiring:
                self.retiring.discard(pid)
                continue
            if started is None or self.stopping:
                continue
            quick = time.monotonic() - started < QUICK_DEATH_S
            self.quick_deaths = self.quick_deaths + 1 if quick else 0
            LOG.warning(
                "prefork: worker %d exited (%s); forking a replacement",
                pid,
                _describe(status),
            )

    def recycle(self, mask: Iterable[int]) -> None:
        """Replace the first serving worker whose private memory passed ``max_private_kib``
        (copy-on-write eroded by its reference counts, and its own caches): its replacement is
        forked first, then it is asked to stop gracefully (SIGTERM: requests in flight
        finish). One worker per check (every ``RECYCLE_CHECK_S``), so the node never runs
        short."""
        if time.monotonic() < self.next_check:
            return
        self.next_check = time.monotonic() + RECYCLE_CHECK_S
        now = time.monotonic()
        for pid, started in list(self.workers.items()):
            if pid in self.retiring or now - started < RECYCLE_MIN_AGE_S:
                continue
            held = private_kib(pid)
            if held > self.max_private_kib:
                self.refresh()
                self.fork(mask)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
                self.retiring.add(pid)
                self.recycled += 1
                LOG.info("prefork: worker %d holds %d MiB of its own; replaced", pid, held // 1024)
                return

    def keep_up(self) -> None:
        """Every ``KEEP_UP_CHECK_S``: read the fleet revision and, once the supervisor's
        snapshot is ``keep_up_revisions`` or more behind it, ``refresh`` it (incremental).
        Without it, a node that replaced no worker for a while (a quiet supervisor, a busy
        cloud) falls out of the change log's reach: the next replacement would wait for a
        whole load and ``warm`` (about 9 s at 100,000 hosts) instead of a patch. Each refresh
        makes the pages it patches the supervisor's own (workers keep theirs), so it runs
        only this rarely. A database that cannot be read is logged; the next check tries
        again."""
        if time.monotonic() < self.next_keep_up:
            return
        self.next_keep_up = time.monotonic() + KEEP_UP_CHECK_S
        source = getattr(self.app.state, "fleet_source", None)
        if source is None:
            return
        try:
            lag = source.lag()
        except Exception as exc:  # noqa: BLE001 - the supervisor keeps supervising
            LOG.warning("prefork: fleet revision not read: %s", exc)
            return
        finally:
            release_connections(self.app)
        if lag is not None and lag >= self.keep_up_revisions:
            LOG.info("prefork: snapshot %d revisions behind; refreshing", lag)
            self.refresh()

    def refresh(self) -> None:
        """Bring the supervisor's snapshot up to date (incremental) before a fork, so that the
        replacement inherits a recent one; a snapshot loaded whole (a new lineage) gets what
        ``warm`` builds built again. A database that cannot be read is logged and the
        replacement patches (or loads) itself."""
        from placement_numa.api.cell_index_dep import cell_index_for_state
        from placement_numa.api.engine_dep import engine_for_state

        started = time.perf_counter()
        try:
            watcher = getattr(self.app.state, "load_watcher", None)
            if watcher is not None:
                watcher.check()  # writes made around us since: recorded for every process
            fleet = engine_for_state(self.app.state).snapshot()
            warmed = WARMED in fleet.derived
            # the per-class indexes are patched with the snapshot, and what else warm() built
            # is derived from its lineage; warm() again would touch (and so copy) every
            # provider's page here, which workers forked earlier share. A snapshot loaded
            # whole (the change log did not reach) is a new lineage that no worker shares yet.
            cell_index_for_state(self.app.state).get(self.app.state.database, fleet.revision, fleet)
            del fleet
            if not warmed:
                warm(self.app)
        except Exception as exc:  # noqa: BLE001 - a replacement is forked whatever happens
            LOG.warning("prefork: fleet snapshot not refreshed before fork: %s", exc)
        finally:
            release_connections(self.app)
        LOG.debug("prefork: snapshot refreshed in %.3f s", time.perf_counter() - started)

    def fork(self, mask: Iterable[int]) -> None:
        """Fork one worker (its signal mask restored to ``mask``)."""
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                _worker_main(self.app, self.sock, self.options, parent, mask)
                code = 0
            except BaseException:  # noqa: BLE001 - a forked child never returns to the caller
                LOG.exception("prefork: worker failed")
            finally:
                os._exit(code)
        self.workers[pid] = time.monotonic()


def _worker_main(
    app: FastAPI,
    sock: socket.socket,
    options: dict[str, Any],
    parent: int,
    mask: Iterable[int],
) -> None:
    """One worker: dies with the supervisor, reloads on SIGHUP, serves until SIGTERM."""
    import uvicorn

    from placement_numa.reload import reload_in_background

    _die_with_parent(parent)
    signal.signal(signal.SIGHUP, lambda signum, frame: reload_in_background(app))
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    config = uvicorn.Config(app, **options)
    uvicorn.Server(config).run(sockets=[sock])


def _die_with_parent(parent: int) -> None:
    """Ask the kernel to send this process SIGTERM when the supervisor dies (Linux); if it
    already died, terminate now."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != parent:
        raise SystemExit(0)


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"
