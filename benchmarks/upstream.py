"""OpenStack Placement 16 side by side: install it once, run it on a port, stop it.

Benchmarks compare placement-numa with upstream Placement on the same fleet; this module runs the
upstream service so they can::

    from benchmarks.upstream import upstream_placement

    with upstream_placement(19301) as base:          # "http://127.0.0.1:19301"
        httpx.get(base + "/resource_providers", headers={"x-auth-token": "admin"})

* ``upstream_placement(port, *, database_url=None, workers=2, placement_options=None)``: a
  context manager yielding the base URL. On first use it creates a virtualenv with
  ``openstack-placement>=16,<17``, gunicorn and psycopg2-binary (``ensure_venv``; by default in
  ``~/.cache/placement-numa/upstream-placement-16``, or ``$PLACEMENT_NUMA_UPSTREAM_VENV``), writes
  a ``placement.conf`` (``[api] auth_strategy = noauth2``: the token ``admin`` is an admin),
  runs ``placement-manage db sync`` and starts gunicorn with ``workers`` processes on
  127.0.0.1:``port``; on exit it stops the server (SIGTERM, then SIGKILL after 10 s).
* ``database_url``: an oslo.db URL (``sqlite:////abs/path.sqlite`` or
  ``postgresql+psycopg2://postgres@127.0.0.1:5432/dbname``, an empty database); by default a
  fresh SQLite file in a temporary directory, removed afterwards.
* ``placement_options``: extra ``[placement]`` options, e.g.
  ``{"max_allocation_candidates": "1000", "allocation_candidates_generation_strategy":
  "breadth-first"}``.

Run it by hand (prints the URL, stops on Ctrl-C)::

    python benchmarks/upstream.py --port 19301 [--database-url URL] [--workers 2]

Raises ``RuntimeError`` when the install or the start fails (with the log's tail).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

__all__ = ["ensure_venv", "upstream_placement", "REQUIREMENT"]

REQUIREMENT = "openstack-placement>=16,<17"
_PACKAGES = (REQUIREMENT, "gunicorn", "psycopg2-binary", "pymysql")


def _default_venv() -> Path:
    configured = os.environ.get("PLACEMENT_NUMA_UPSTREAM_VENV")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "placement-numa" / "upstream-placement-16"


def ensure_venv(venv: Path | None = None) -> Path:
    """The virtualenv holding upstream Placement (created and filled on first use)."""
    venv = venv or _default_venv()
    marker = venv / ".installed"
    if marker.exists():
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", *_PACKAGES],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"installing {REQUIREMENT} failed: {done.stderr[-2000:]}")
    marker.write_text(REQUIREMENT + "\n")
    return venv


def _config(database_url: str, options: Mapping[str, str]) -> str:
    lines = [
        "[DEFAULT]",
        "debug = false",
        "[api]",
        "auth_strategy = noauth2",
        "[placement_database]",
        f"connection = {database_url}",
        "[placement]",
    ]
    lines += [f"{key} = {value}" for key, value in options.items()]
    return "\n".join(lines) + "\n"


def _wait_up(base: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"upstream Placement exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(base + "/", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"upstream Placement did not start: {log.read_text()[-2000:]}")


@contextmanager
def upstream_placement(
    port: int,
    *,
    database_url: str | None = None,
    workers: int = 2,
    placement_options: Mapping[str, str] | None = None,
    venv: Path | None = None,
) -> Iterator[str]:
    """Run OpenStack Placement 16 on ``127.0.0.1:port``; yields ``http://127.0.0.1:port``."""
    env_dir = ensure_venv(venv)
    workdir = Path(tempfile.mkdtemp(prefix="pn-upstream-"))
    url = database_url or f"sqlite:///{workdir / 'placement.sqlite'}"
    (workdir / "placement.conf").write_text(_config(url, placement_options or {}))
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(workdir))
    log = workdir / "server.log"
    bin_dir = env_dir / "bin"
    sync = subprocess.run(
        [str(bin_dir / "placement-manage"), "--config-file", str(workdir / "placement.conf")]
        + ["db", "sync"],
        env=env,
        capture_output=True,
        text=True,
    )
    if sync.returncode != 0:
        shutil.rmtree(workdir, ignore_errors=True)
        raise RuntimeError(f"placement-manage db sync failed: {sync.stderr[-2000:]}")
    base = f"http://127.0.0.1:{port}"
    # Each worker syncs os-traits and the standard resource classes into the database as it
    # boots. On a fresh database two workers racing there can both fail, and gunicorn then
    # stops altogether, possibly after the first worker already answered (the benchmark's
    # client then sees connection resets and refusals). One worker boots first and syncs alone;
    # the real workers then find every row in place.
    prime = _start(bin_dir, 1, port, env, log)
    try:
        _wait_up(base, prime, log)
    except RuntimeError:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    finally:
        _stop(prime)
    proc = _start(bin_dir, workers, port, env, log)
    try:
        _wait_up(base, proc, log)
    except RuntimeError:
        _stop(proc)
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    try:
        yield base
    finally:
        _stop(proc)
        shutil.rmtree(workdir, ignore_errors=True)


def _start(
    bin_dir: Path, workers: int, port: int, env: dict[str, str], log: Path
) -> subprocess.Popen[bytes]:
    """gunicorn with ``workers`` sync workers on 127.0.0.1:``port``, logging to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(bin_dir / "gunicorn"), "--workers", str(workers), "--bind"]
            + [f"127.0.0.1:{port}", "--timeout", "600", "placement.wsgi.api:application"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop gunicorn and its workers (SIGTERM to the process group, SIGKILL after 10 s)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main() -> int:
    """Run upstream Placement until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--database-url")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    try:
        with upstream_placement(
            args.port, database_url=args.database_url, workers=args.workers
        ) as base:
            print(base, flush=True)
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
