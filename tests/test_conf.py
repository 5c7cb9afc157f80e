"""placement.conf: options read with oslo.config, below flags and environment variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from placement_numa.conf import ConfigFileError, list_opts
from placement_numa.settings import Settings

CONF = """
[placement_database]
connection = postgresql://postgres@127.0.0.1:5432/test

[placement]
randomize_allocation_candidates = true

[some_unknown_section]
anything = goes
"""


@pytest.fixture
def conf_file(tmp_path: Path) -> Path:
    path = tmp_path / "placement.conf"
    path.write_text(CONF)
    return path


def test_file_values_are_read(conf_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLACEMENT_NUMA_DATABASE_URL", raising=False)
    settings = Settings(config_file=conf_file)
    assert settings.database_url == "postgresql+psycopg://postgres@127.0.0.1:5432/test"
    assert settings.randomize_allocation_candidates is True


def test_environment_beats_file_and_flags_beat_environment(
    conf_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLACEMENT_NUMA_DATABASE_URL", "sqlite:///from-env.sqlite")
    assert Settings(config_file=conf_file).database_url == "sqlite:///from-env.sqlite"
    flag = Settings(config_file=conf_file, database_url="sqlite:///from-flag.sqlite")
    assert flag.database_url == "sqlite:///from-flag.sqlite"


def test_config_file_from_environment(conf_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLACEMENT_NUMA_DATABASE_URL", raising=False)
    monkeypatch.setenv("PLACEMENT_NUMA_CONFIG_FILE", str(conf_file))
    assert Settings().randomize_allocation_candidates is True


def test_bad_value_names_the_option(tmp_path: Path) -> None:
    path = tmp_path / "bad.conf"
    path.write_text("[placement]\nrandomize_allocation_candidates = maybe\n")
    with pytest.raises(ConfigFileError, match=r"\[placement\] randomize_allocation_candidates"):
        Settings(config_file=path)


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="not found"):
        Settings(config_file=tmp_path / "nope.conf")


def test_list_opts_for_the_sample_generator() -> None:
    sections = dict(list_opts())
    assert {opt.name for opt in sections["placement_database"]} >= {"connection"}
    assert {opt.name for opt in sections["placement"]} >= {"randomize_allocation_candidates"}
