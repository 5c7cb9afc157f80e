"""``placement-numa status upgrade check`` (oslo.upgradecheck) on real databases.

Each case prepares a real database (SQLite, PostgreSQL, MariaDB) or a placement.conf, runs the
command and reads its JSON results and exit code (0 success, 1 warning, 2 failure).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from placement_numa.cli import main
from placement_numa.db import migrate
from tests.backends import BACKENDS, TestDatabase, drop_database, reachable_database

HEAD = "0004_change_generations"


@pytest.fixture(params=BACKENDS, ids=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestDatabase]:
    db = reachable_database(request.param, tmp_path, "upgchk")
    try:
        yield db
    finally:
        drop_database(db)


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, dict]]:
    code = main(["status", "upgrade", "check", "--json", *argv])
    out = capsys.readouterr().out
    results = {c["check"]: c for c in json.loads(out)["checks"]}
    return code, results


def _execute(url: str, statement: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(statement))
    engine.dispose()


def test_a_database_at_head_passes_every_check(
    database: TestDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    migrate.upgrade(database.url)
    code, results = _check(capsys, "--database-url", database.url)
    assert code == 0, results
    assert {c["result"] for c in results.values()} == {0}
    assert set(results) == {
        "Database schema",
        "Adopted Placement database",
        "Policy file",
        "Policy file JSON to YAML migration",
        "Deprecated options",
    }


def test_schema_behind_head_fails_and_says_what_to_run(
    database: TestDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    migrate.upgrade(database.url, "0002_numa_distances")
    code, results = _check(capsys, "--database-url", database.url)
    assert code == 2
    schema = results["Database schema"]
    assert schema["result"] == 2
    assert f"at 0002_numa_distances, head is {HEAD}" in schema["details"]
    assert "db upgrade" in schema["details"]
    # an adopted database lacking our newest table is named by the second check
    assert "placement_changes" in results["Adopted Placement database"]["details"]


def test_unknown_revision_and_unseeded_revision_row_fail(
    database: TestDatabase, capsys: pytest.CaptureFixture[str]
) -> None:
    """An upstream Placement revision in alembic_version (not ours), and a missing
    placement_revision row: both failures, nothing written by the check."""
    migrate.upgrade(database.url)
    _execute(database.url, "UPDATE alembic_version SET version_num = 'b5c396305c25'")
    _execute(database.url, "DELETE FROM placement_revision")
    code, results = _check(capsys, "--database-url", database.url)
    assert code == 2
    assert "b5c396305c25" in results["Database schema"]["details"]
    assert "placement_revision" in results["Adopted Placement database"]["details"]
    engine = create_engine(database.url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM placement_revision")).scalar() == 0
    engine.dispose()


def test_no_database_fails_without_creating_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "absent.sqlite"
    code, results = _check(capsys, "--database-url", f"sqlite:///{path}")
    assert code == 2 and results["Database schema"]["result"] == 2
    assert not path.exists()


def test_unreachable_database_is_a_failure_not_a_crash(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, results = _check(capsys, "--database-url", "postgresql://nobody@127.0.0.1:1/none")
    assert code == 2
    assert results["Database schema"]["details"].startswith("cannot use the database")


@pytest.fixture
def sqlite_at_head(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'placement.sqlite'}"
    migrate.upgrade(url)
    return url


def _conf(tmp_path: Path, url: str, body: str = "", policy: str | None = None) -> Path:
    lines = [f"[placement_database]\nconnection = {url}\n", body]
    if policy is not None:
        policy_file = tmp_path / "policy.yaml"
        policy_file.write_text(policy)
        lines.append(f"[oslo_policy]\npolicy_file = {policy_file}\n")
    path = tmp_path / "placement.conf"
    path.write_text("\n".join(lines))
    return path


@pytest.mark.parametrize(
    ("policy", "expected", "detail"),
    [
        ('"placement:resource_providers:list": "role:admin"\n', 0, None),
        ('"placement:nonexistent:rule": "@"\n', 1, "placement:nonexistent:rule"),
        ("a: [\n", 2, "does not load"),
    ],
    ids=["valid", "unknown-rule", "bad-yaml"],
)
def test_policy_file(
    tmp_path: Path,
    sqlite_at_head: str,
    capsys: pytest.CaptureFixture[str],
    policy: str,
    expected: int,
    detail: str | None,
) -> None:
    conf = _conf(tmp_path, sqlite_at_head, policy=policy)
    code, results = _check(capsys, "--config-file", str(conf))
    assert code == expected
    assert results["Policy file"]["result"] == expected
    if detail:
        assert detail in results["Policy file"]["details"]


def test_deprecated_option_names_warn(
    tmp_path: Path, sqlite_at_head: str, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = _conf(
        tmp_path,
        sqlite_at_head,
        "[DEFAULT]\nlogfile = /tmp/x.log\n[keystone_authtoken]\nmemcache_servers = 127.0.0.1:1\n",
    )
    code, results = _check(capsys, "--config-file", str(conf))
    assert code == 1
    details = results["Deprecated options"]["details"]
    assert "[DEFAULT] logfile is deprecated: use [DEFAULT] log_file" in details
    assert "[keystone_authtoken] memcache_servers is deprecated" in details


def test_console_script_prints_oslo_table_and_exit_code(
    tmp_path: Path, sqlite_at_head: str
) -> None:
    conf = _conf(tmp_path, sqlite_at_head, policy='"placement:nonexistent:rule": "@"\n')
    script = Path(sys.executable).with_name("placement-numa")
    done = subprocess.run(
        [str(script), "status", "upgrade", "check", "--config-file", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "| Check: Policy file " in done.stdout and "Result: Warning" in done.stdout
