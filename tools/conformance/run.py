"""Run OpenStack Placement's own gabbi API tests against placement-numa.

Each YAML file of the installed ``openstack-placement`` package's functional tests runs against a
fresh ``placement-numa serve`` on an empty SQLite database; the data those tests expect is created
over HTTP by ``fixtures.py`` (re-implementations of upstream's fixture trees). The server runs
with noauth2 and the placement.conf that the file's fixtures set upstream (``server_conf``):
Placement's legacy policy defaults (``enforce_new_defaults = false``) unless the file uses
``SecureRBACPolicyFixture``; an open policy file (every rule ``@`` but ``admin_api``) for
``OpenPolicyFixture``; ``[cors]`` for ``CORSFixture``.

Usage (from ``tools/conformance/run.sh``): ``python run.py [substring ...]``; writes
``last.json`` with every failure next to this file.
"""

import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import placement  # the installed openstack-placement package (conformance venv only)
from gabbi import driver

GAB = os.path.join(os.path.dirname(placement.__file__), "tests", "functional", "gabbits")
SERVER = os.environ.get("PLACEMENT_NUMA_BIN", "placement-numa")
HERE = os.path.dirname(os.path.abspath(__file__))
PORT = int(os.environ.get("CONFORMANCE_PORT", "8799"))
os.environ["CONF_BASE_URL"] = f"http://127.0.0.1:{PORT}"
sys.path.insert(0, os.path.dirname(__file__))
import fixtures as conf_fixtures  # noqa: E402


def fixtures_of(path):
    import yaml

    with open(path) as f:
        return set((yaml.safe_load(f) or {}).get("fixtures") or [])


def server_conf(path, workdir):
    """The placement.conf for the file at ``path`` (see the module docstring)."""
    names = fixtures_of(path)
    secure = "SecureRBACPolicyFixture" in names
    lines = ["[oslo_policy]", f"enforce_new_defaults = {'true' if secure else 'false'}"]
    if "OpenPolicyFixture" in names:
        policy = os.path.join(workdir, "policy.json")
        rules = subprocess.run(
            [
                os.path.join(os.path.dirname(SERVER), "oslopolicy-sample-generator"),
                "--namespace",
                "placement-numa",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        names_found = sorted(
            set(re.findall(r'^#?"([a-z_:]+)":', rules, re.M)) - {"admin_api", "rule:admin_api"}
        )
        with open(policy, "w") as f:
            json.dump({name: "@" for name in names_found}, f)
        lines.append(f"policy_file = {policy}")
    if "CORSFixture" in names:
        lines += [
            "[cors]",
            "allowed_origin = http://valid.example.com",
            "allow_headers = openstack-api-version",
        ]
    conf = os.path.join(workdir, "placement.conf")
    with open(conf, "w") as f:
        f.write("\n".join(lines) + "\n")
    return conf


def wait(port):
    for _ in range(600):  # up to 60 s (a loaded machine starts slowly)
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def run_file(path, verbose):
    db = tempfile.mktemp(suffix=".sqlite", dir="/tmp")
    conf = server_conf(path, tempfile.mkdtemp())
    srv = subprocess.Popen(
        [
            SERVER,
            "serve",
            "--port",
            str(PORT),
            "--database-url",
            f"sqlite:///{db}",
            "--auth-strategy",
            "noauth2",
            "--config-file",
            conf,
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(tempfile.gettempdir(), "conformance-server.log"), "a"),
    )
    try:
        if not wait(PORT):
            return (0, 0, 1, ["server did not start"], 0)
        d = tempfile.mkdtemp()
        shutil.copy(path, d)
        loader = unittest.TestLoader()
        try:
            suite = driver.build_tests(
                d,
                loader,
                host="127.0.0.1",
                port=PORT,
                fixture_module=conf_fixtures,
                test_loader_name="conf",
            )
        except Exception as e:
            return (0, 0, 1, [f"build error {e}"], 0)
        result = unittest.TextTestRunner(
            stream=open(os.devnull, "w") if not verbose else sys.stderr,
            verbosity=2 if verbose else 0,
        ).run(suite)
        problems = result.failures + result.errors
        unsendable = [t for t, tb in problems if _unsendable(str(t), tb)]
        fails = [
            str(t).split(" ")[1]
            + " :: "
            + (tb[tb.find("Error:") :][:700] if "Error:" in tb else tb[-700:])
            for t, tb in problems
            if t not in unsendable
        ]
        return (result.testsRun - len(unsendable), len(fails), 0, fails, len(unsendable))
    finally:
        srv.terminate()
        srv.wait()
        for f in glob.glob(db + "*"):
            os.remove(f)


# Requests an HTTP client refuses to send (so the server never sees them): counted as skipped.
UNSENDABLE = {"basic-http_bad_content_length_not_int": "bad Content-Length"}


def _unsendable(test_id, traceback):
    return any(name in test_id and why in traceback for name, why in UNSENDABLE.items())


def main():
    names = sys.argv[1:]
    verbose = bool(os.environ.get("V"))
    files = sorted(glob.glob(f"{GAB}/*.yaml"))
    if names:
        files = [f for f in files if any(n in os.path.basename(f) for n in names)]
    tot = bad = skipped = 0
    report = {}
    for f in files:
        n, nbad, err, fails, nskip = run_file(f, verbose)
        tot += n
        bad += nbad
        skipped += nskip
        report[os.path.basename(f)] = {"run": n, "failed": nbad, "error": err, "fails": fails}
        print(
            f"{os.path.basename(f):55s} run={n:4d} failed={nbad:4d}"
            f"{f' skipped={nskip}' if nskip else ''}{' ERROR' if err else ''}",
            flush=True,
        )
    print(f"TOTAL run={tot} failed={bad} passed={tot - bad} skipped={skipped} (unsendable)")
    json.dump(report, open(os.path.join(HERE, "last.json"), "w"), indent=1)


main()
