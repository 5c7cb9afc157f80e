"""README is a newcomer's first hour, and its commands and curls work; the manual is in doc/.

* README stays short (<= 200 lines) and every link into ``doc/`` points at a page that exists;
* every setting and every command is documented in the docs tree (the settings table and the
  command reference are generated from ``Settings`` and the argparse parser by
  ``doc/source/_ext/``; checked here on the generators' own output);
* README's curls, and those of the tour page (``doc/source/install/tour.rst``), run against a
  real service started as README's first command starts it (SQLite, ``--demo``, noauth2), and
  every answer shown in a ``# {...`` comment is what the service says (up to its ``...``).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from placement_numa.cli import build_parser
from placement_numa.settings import Settings
from tests.servers import free_port, running, service_env

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOC = ROOT / "doc" / "source"


def test_readme_is_short_and_links_into_the_docs() -> None:
    assert len(README.splitlines()) <= 200
    links = re.findall(r"\]\((doc/[^)#]+)", README)
    assert links, "README links into the docs"
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, f"README links to missing pages: {missing}"


def test_every_setting_is_in_the_generated_settings_table() -> None:
    sys.path.insert(0, str(DOC / "_ext"))
    from settings_reference import setting_rows

    assert ".. placement-numa-settings::" in (DOC / "configuration" / "settings.rst").read_text()
    variables = {row[0] for row in setting_rows(Settings)}
    missing = [
        name
        for name in Settings.model_fields
        if f"``PLACEMENT_NUMA_{name.upper()}``" not in variables
    ]
    assert not missing
    conf = {row[0]: row[2] for row in setting_rows(Settings)}
    assert conf["``PLACEMENT_NUMA_DATABASE_URL``"] == "``[placement_database] connection``"


def test_every_command_is_in_the_generated_command_reference() -> None:
    sys.path.insert(0, str(DOC / "_ext"))
    from cli_reference import commands

    assert ".. placement-numa-cli::" in (DOC / "reference" / "cli.rst").read_text()
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    listed = {full for full, _help, _parser in commands(parser)}
    missing = [name for name in action.choices if f"placement-numa {name}" not in listed]
    assert not missing
    assert "placement-numa db upgrade" in listed  # sub-commands too


def _readme_curl_blocks() -> list[str]:
    """The ```sh blocks of README's "main jobs" section (the ``H=``/``P=`` block first)."""
    section = README.split("## The main jobs, by curl", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, flags=re.S)


def _rst_curl_blocks(page: Path) -> list[str]:
    """The ``.. code:: sh`` blocks of a docs page that call the service (``$P``)."""
    blocks = []
    for match in re.finditer(r"\.\. code:: sh\n\n((?:   .*\n|\n)+)", page.read_text()):
        block = "\n".join(line[3:] for line in match.group(1).splitlines())
        if "$P" in block or "P=" in block:
            blocks.append(block)
    return blocks


def _expected(block: str) -> list[str]:
    """The answers a block shows: ``# {...`` comments, cut at their first ``...``."""
    return [
        "".join(line[2:].split("...")[0].rstrip(",").split())
        for line in block.splitlines()
        if line.startswith("# {")
    ]


def _run_blocks(blocks: list[str], base_url: str) -> None:
    prelude = "set -euo pipefail\n"
    for block in blocks:
        script = prelude + block.replace("http://127.0.0.1:8778", base_url) + "\necho\n"
        if "H=(" in block:
            prelude += block.replace("http://127.0.0.1:8778", base_url) + "\n"
            continue
        done = subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, f"{block}\n-> exit {done.returncode}: {done.stderr}"
        answers = "".join(done.stdout.split())
        for answer in _expected(block):
            assert answer in answers, f"{block}\nexpected {answer!r} in:\n{done.stdout}"
        assert '"errors"' not in done.stdout, f"{block}\n-> {done.stdout}"


@pytest.mark.parametrize(
    "blocks",
    [
        pytest.param(_readme_curl_blocks, id="README"),
        pytest.param(lambda: _rst_curl_blocks(DOC / "install" / "tour.rst"), id="tour"),
    ],
)
def test_curls_answer_as_shown(blocks, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ports = list(range(19700, 19750))
    random.shuffle(ports)
    port = free_port(ports)
    argv = [
        sys.executable,
        "-m",
        "placement_numa",
        "serve",
        "--demo",
        "--auth-strategy",
        "noauth2",
        "--port",
        str(port),
    ]
    env = service_env(PLACEMENT_NUMA_DATABASE_URL=f"sqlite:///{tmp_path / 'readme.sqlite'}")
    with running(
        argv, port, tmp_path / "service.log", env=env, cwd=tmp_path, timeout=120
    ) as service:
        deadline = time.monotonic() + 120
        while "demo: loaded" not in service.log_text():  # --demo loads once the service is up
            assert time.monotonic() < deadline, service.log_text()[-2000:]
            time.sleep(0.2)
        _run_blocks(blocks(), service.base_url)


def test_device_section_answers_as_shown(tmp_path: Path) -> None:
    """README's "A NIC on the guest's own NUMA cell": the service started as it says (the
    ``printf`` writes ``pci.conf``), then the candidates without and with alignment."""
    section = README.split("## A NIC on the guest's own NUMA cell", 1)[1].split("\n## ", 1)[0]
    start, before, after = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    printf, serve = start.strip().splitlines()
    subprocess.run(["bash", "-c", printf], cwd=tmp_path, check=True)
    assert serve.startswith("placement-numa serve ")
    ports = list(range(19700, 19750))
    random.shuffle(ports)
    port = free_port(ports)
    argv = [sys.executable, "-m", "placement_numa", *serve.split()[1:], "--port", str(port)]
    env = service_env(PLACEMENT_NUMA_DATABASE_URL=f"sqlite:///{tmp_path / 'readme.sqlite'}")
    with running(
        argv, port, tmp_path / "service.log", env=env, cwd=tmp_path, timeout=120
    ) as service:
        deadline = time.monotonic() + 120
        while "demo: loaded" not in service.log_text():
            assert time.monotonic() < deadline, service.log_text()[-2000:]
            time.sleep(0.2)
        prelude = _readme_curl_blocks()[0].replace("http://127.0.0.1:8778", service.base_url)
        answers = []
        for block in (before, before.split("curl ")[0] + after):
            done = subprocess.run(
                ["bash", "-c", f"set -euo pipefail\n{prelude}\n{block}"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            answers.append(json.loads(done.stdout))
    unaligned, aligned = ([a["numa"] for a in x["allocation_requests"]] for x in answers)
    assert len(unaligned) == 4 and sum(not n["aligned"] for n in unaligned) == 2
    assert {n["average_distance"] for n in unaligned if not n["aligned"]} == {15.5}
    assert [n["host"] for n in aligned] == ["nic-2s-2", "nic-2s-1"]
    for numa in aligned:
        assert numa["aligned"] and numa["devices"][0]["cell"] == numa["cells"][0]
    shown = "".join(line[1:].strip() for line in after.splitlines() if line.startswith("#"))
    first = shown.split('"numa":', 1)[1].split("...")[0].rstrip(",")
    assert json.dumps(aligned[0], separators=(",", ":")).startswith(first), first
    device = shown.split('"devices":[', 1)[1].split('"provider"')[0]
    assert device in json.dumps(aligned[0]["devices"][0], separators=(",", ":")), device
