"""Benchmark the command line's start-up: wall time of ``placement-numa --help`` and
``placement-numa agent --show`` (each a fresh process, as a user runs it), median of ``--runs``.

    python benchmarks/cli_startup.py            # target: both under 0.5 s on the dev machine
    python benchmarks/cli_startup.py --runs 20

``agent --show`` reads this host's sysfs (``--sysfs-root`` to point elsewhere). Exits 1 when a
median is over ``--target`` seconds. The machine is shared: figures are noisy; run twice.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = {
    "--help": ["--help"],
    "agent --show": ["agent", "--show"],
}


def measure(command: list[str], runs: int) -> list[float]:
    """Wall seconds of ``runs`` fresh processes of ``command`` (output discarded)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="processes per command")
    parser.add_argument("--target", type=float, default=0.5, help="seconds (median)")
    parser.add_argument("--sysfs-root", default=None, help="sysfs for agent --show")
    args = parser.parse_args()
    executable = shutil.which("placement-numa", path=str(Path(sys.executable).parent))
    base = [executable] if executable else [sys.executable, "-m", "placement_numa"]
    slow = False
    for name, argv in COMMANDS.items():
        extra = (
            ["--sysfs-root", args.sysfs_root] if name == "agent --show" and args.sysfs_root else []
        )
        measure([*base, *argv, *extra], 1)  # warm the page cache and bytecode
        times = measure([*base, *argv, *extra], args.runs)
        median = statistics.median(times)
        slow = slow or median > args.target
        print(
            f"placement-numa {name:14} median {median:.3f} s  min {min(times):.3f} s"
            f"  max {max(times):.3f} s  ({args.runs} runs, target < {args.target} s)"
        )
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
