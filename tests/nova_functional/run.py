"""Run Nova functional tests (and our scenarios) against a live placement-numa (issue 28).

Usage, with the Python of the Nova virtualenv::

    PLACEMENT_NUMA_SERVER=.venv/bin/placement-numa \\
        .nova-func-venv/bin/python tests/nova_functional/run.py TEST_ID [TEST_ID ...]

``TEST_ID``: a dotted test id, module or class (``nova.tests.functional.libvirt.
test_numa_servers.NUMAServersTest.test_create_server_with_hugepages``, ``scenarios``). Exit code
0 when every test passed. ``--upstream`` keeps upstream Placement's in-process fixture (for side
by side runs of stock Nova with upstream Placement). ``--exclude=TEST_ID`` (repeatable) leaves one
test of the given modules or classes out (a known failure, run on its own elsewhere); an exclude
that names no loaded test is an error (exit 2). ``--numa-reporting`` makes
``[compute] enable_numa_reporting_to_placement = True`` the default (the patch series' NUMA trees
and scheduler query in tests that do not set it). ``PLACEMENT_NUMA_FUNC_DUMP_AFTER=<s>`` dumps
every thread's stack and exits once one test (its set-up, body and clean-up) has run that many
seconds: a hung test costs that, not the rest of the run's time limit, and its stacks show where.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv: list[str]) -> int:
    """Install the live fixture (unless ``--upstream``) and run ``argv``'s tests."""
    sys.path.insert(0, HERE)
    dump_after = os.environ.get("PLACEMENT_NUMA_FUNC_DUMP_AFTER")
    excluded = {a.split("=", 1)[1] for a in argv if a.startswith("--exclude=")}
    args = [
        a
        for a in argv
        if a not in ("--upstream", "--numa-reporting") and not a.startswith("--exclude=")
    ]
    # Nova's functional package monkey-patches with eventlet on import; it must come before
    # anything imports oslo.db (the live fixture imports upstream Placement), or oslo.db's
    # per-thread transaction state is shared by every green thread of the process, and a green
    # thread that yields inside a read transaction (an HTTP call to placement-numa) fails the
    # next writer: "TypeError: Can't upgrade a READER transaction to a WRITER mid-transaction".
    import nova.tests.functional  # noqa: F401

    if dump_after:
        _dump_when_one_test_hangs(float(dump_after))
    if "--upstream" in argv:
        os.environ["PLACEMENT_NUMA_FUNC_UPSTREAM"] = "1"
    else:
        import live_placement

        live_placement.install()
    if "--numa-reporting" in argv:
        _default_numa_reporting()
    from testtools import run

    if excluded:
        listed = _listed_without(args, excluded)
        if listed is None:
            return 2
        args = ["--load-list", listed, *args]
    try:
        run.main([sys.argv[0], *args], sys.stdout)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return 0


def _dump_when_one_test_hangs(seconds: float) -> None:
    """Every thread's stack on stderr, then exit, when one test runs ``seconds`` (s): the clock
    starts again at each test (``faulthandler``'s timer, re-armed in ``TestCase.run``), and once
    at import, for the loading of the tests."""
    import faulthandler

    import testtools

    faulthandler.dump_traceback_later(seconds, exit=True)
    run_test = testtools.TestCase.run

    def run(self: testtools.TestCase, result: object = None) -> object:
        faulthandler.dump_traceback_later(seconds, exit=True)
        return run_test(self, result)

    testtools.TestCase.run = run  # type: ignore[method-assign]


def _default_numa_reporting() -> None:
    """``[compute] enable_numa_reporting_to_placement = True`` as the default of every test.

    Nova's ``ConfFixture`` resets the configuration after each test (``CONF.reset()`` drops
    defaults set with ``set_default`` too), so a default set once here held for the first test of
    a run only; it is set again in each fixture's ``setUp``. A test's own ``self.flags(...)`` (an
    override) still wins."""
    from nova.tests.fixtures import conf

    fixture_set_up = conf.ConfFixture.setUp

    def set_up(self: conf.ConfFixture) -> None:
        fixture_set_up(self)
        self.conf.set_default("enable_numa_reporting_to_placement", True, group="compute")

    conf.ConfFixture.setUp = set_up  # type: ignore[method-assign]


def _listed_without(test_ids: list[str], excluded: set[str]) -> str | None:
    """A ``--load-list`` file of ``test_ids``' tests but ``excluded`` (``None``, with a message
    on stderr, when an excluded id names none of them)."""
    import tempfile
    import unittest

    from testtools import iterate_tests

    loaded = [
        t.id() for t in iterate_tests(unittest.defaultTestLoader.loadTestsFromNames(test_ids))
    ]
    unknown = excluded - set(loaded)
    if unknown:
        print(f"--exclude names no loaded test: {sorted(unknown)}", file=sys.stderr)
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".list", delete=False) as listing:
        listing.write("".join(f"{test_id}\n" for test_id in loaded if test_id not in excluded))
    return listing.name


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
