"""placement.conf: options read with oslo.config, below flags and environment variables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from placement_numa.conf import ConfigFileError, _mapped_fields
from placement_numa.settings import Settings, list_opts, load_config, settings_file_values

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
    assert [opt.name for opt in sections["pci"]] == ["alias"]  # Nova's, for flavors' devices


def test_sample_config_shows_every_default() -> None:
    """``oslo-config-generator --namespace placement-numa`` (the real console script) writes
    each option with its ``Settings`` default, bounds and choices; ``<None>`` only where the
    default is None."""
    generator = Path(sys.executable).with_name("oslo-config-generator")
    sample = subprocess.run(
        [str(generator), "--namespace", "placement-numa"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    for line in (
        "#connection = sqlite:///placement-numa.sqlite",
        "#max_pool_size = 10",
        "#max_allocation_candidates = 100000",
        "#allocation_candidates_generation_strategy = depth-first",
        "#randomize_allocation_candidates = false",
        "#pool_timeout = 10.0",
    ):
        assert line in sample.splitlines(), line
    assert "# Minimum value: 1" in sample and "# Maximum value: 20" in sample  # db_max_retries
    assert "[pci]" in sample and "#alias =" in sample  # a MultiStrOpt, no default
    nones = [line for line in sample.splitlines() if line.endswith("= <None>")]
    defaults_none = {
        option
        for _name, _section, option, field in _mapped_fields(dict(Settings.model_fields))
        if field.get_default() is None
    }
    assert {line[1:].split(" =")[0] for line in nones} <= defaults_none


def test_file_values_equal_to_defaults_still_lose_to_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Options now carry defaults: an option the file leaves unset must not be taken as set."""
    path = tmp_path / "placement.conf"
    path.write_text("[placement_database]\nmax_overflow = 3\n")
    monkeypatch.setenv("PLACEMENT_NUMA_MAX_POOL_SIZE", "7")
    settings = Settings(config_file=path)
    assert (settings.max_pool_size, settings.max_overflow) == (7, 3)
    assert settings_file_values(load_config(path)) == {"max_overflow": 3}


def test_bad_value_is_one_line_naming_file_option_and_value(tmp_path: Path) -> None:
    path = tmp_path / "placement.conf"
    path.write_text("[placement_database]\nmax_pool_size = ten\n")
    with pytest.raises(ConfigFileError) as caught:
        Settings(config_file=path)
    assert str(caught.value) == (
        f"{path}: [placement_database] max_pool_size: invalid value: "
        "invalid literal for int() with base 10: 'ten'"
    )
