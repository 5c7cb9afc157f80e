"""Run Nova functional tests (and our scenarios) against a live placement-numa (issue 28).

Usage, with the Python of the Nova virtualenv::

    PLACEMENT_NUMA_SERVER=.venv/bin/placement-numa \\
        .nova-func-venv/bin/python tests/nova_functional/run.py TEST_ID [TEST_ID ...]

``TEST_ID``: a dotted test id, module or class (``nova.tests.functional.libvirt.
test_numa_servers.NUMAServersTest.test_create_server_with_hugepages``, ``scenarios``). Exit code
0 when every test passed. ``--upstream`` keeps upstream Placement's in-process fixture (for side
by side runs of stock Nova with upstream Placement). ``PLACEMENT_NUMA_FUNC_DUMP_AFTER=<s>`` dumps
every thread's stack and exits after that many seconds (to see where a run hangs).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv: list[str]) -> int:
    """Install the live fixture (unless ``--upstream``) and run ``argv``'s tests."""
    sys.path.insert(0, HERE)
    dump_after = os.environ.get("PLACEMENT_NUMA_FUNC_DUMP_AFTER")
    if dump_after:  # a hung run: every thread's stack on stderr, then exit
        import faulthandler

        faulthandler.dump_traceback_later(float(dump_after), exit=True)
    args = [a for a in argv if a != "--upstream"]
    if "--upstream" in argv:
        os.environ["PLACEMENT_NUMA_FUNC_UPSTREAM"] = "1"
    else:
        import live_placement

        live_placement.install()
    from testtools import run

    try:
        run.main([sys.argv[0], *args], sys.stdout)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
