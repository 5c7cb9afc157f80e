"""Choosing the authentication strategy at start: keystone by default, noauth2 explicitly."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from placement_numa.app import create_app
from placement_numa.settings import Settings


def _serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLACEMENT_NUMA_")}
    command = [str(Path(sys.executable).with_name("placement-numa")), "serve", *args]
    return subprocess.run(
        [*command, "--database-url", f"sqlite:///{tmp_path / 'start.sqlite'}"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_keystone_is_the_default_and_needs_its_configuration(tmp_path: Path) -> None:
    done = _serve(tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
    assert "[keystone_authtoken] www_authenticate_uri and auth_type not set" in done.stderr
    assert "--auth-strategy noauth2" in done.stderr


def test_bad_strategy_names_the_setting(tmp_path: Path) -> None:
    conf = tmp_path / "placement.conf"
    conf.write_text("[api]\nauth_strategy = trustme\n")
    done = _serve(tmp_path, "--config-file", str(conf))
    assert done.returncode == 2
    assert "auth_strategy" in done.stderr


def test_noauth2_warns_at_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="placement_numa.api.auth"):
        app = create_app(
            Settings(database_url=f"sqlite:///{tmp_path / 'n.sqlite'}", auth_strategy="noauth2")
        )
    app.state.database.dispose()
    assert "anyone who can reach the service can claim any role" in caplog.text
