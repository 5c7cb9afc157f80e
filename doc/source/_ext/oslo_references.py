"""The configuration and policy references, with whatever namespace the package declares.

oslo.config's ``show-options`` and oslo.policy's ``show-policy`` directives read a generator
configuration file (``namespace = ...`` lines, as ``oslo-config-generator --config-file`` does).
The project keeps those files in ``etc/`` (``etc/*config-generator.conf``,
``etc/*policy-generator.conf``); when a checkout has none yet, this extension writes one into
the build directory from the entry points the installed package declares (``oslo.config.opts``
and ``oslo.policy.policies`` names starting with ``placement``), plus the libraries whose
sections placement.conf holds. ``conf.py`` reads :func:`generator_files` to point oslo's
``sphinxconfiggen``/``sphinxpolicygen`` at the same files, and the directives
``placement-numa-options`` and ``placement-numa-policy`` render the references from them.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from docutils.statemachine import StringList
from oslo_config.sphinxext import ShowOptionsDirective
from oslo_policy.sphinxext import ShowPolicyDirective
from sphinx.application import Sphinx

ROOT = Path(__file__).resolve().parents[3]
# Sections of placement.conf that libraries own (read by the service, see doc/source/configuration).
LIBRARY_NAMESPACES = (
    "keystonemiddleware.auth_token",
    "oslo.log",
    "oslo.middleware.cors",
    "oslo.middleware.http_proxy_to_wsgi",
    "oslo.middleware.sizelimit",
    "oslo.policy",
)


def _ours(group: str) -> list[str]:
    """Names in entry point ``group`` that belong to this project (``placement...``)."""
    return sorted(e.name for e in entry_points(group=group) if e.name.startswith("placement"))


def _options(namespace: str) -> set[tuple[str, str]]:
    """``(section, option)`` of every option an ``oslo.config.opts`` entry point lists."""
    (entry,) = [e for e in entry_points(group="oslo.config.opts") if e.name == namespace]
    found = set()
    for group, opts in entry.load()():
        section = getattr(group, "name", group) or "DEFAULT"
        found |= {(str(section), opt.dest) for opt in opts}
    return found


def _library_namespaces(ours: list[str], candidates: Iterable[str]) -> list[str]:
    """Library namespaces to show beside ours: installed, and not redefining one of our options
    (the rendered reference would hold the same option twice, which Sphinx refuses)."""
    installed = {e.name for e in entry_points(group="oslo.config.opts")}
    mine = set().union(*(_options(n) for n in ours)) if ours else set()
    return [n for n in candidates if n in installed and n not in ours and not (_options(n) & mine)]


def _namespaces(config_file: str) -> list[str]:
    """The ``namespace = ...`` lines of a generator file, in order."""
    found = []
    for line in Path(config_file).read_text().splitlines():
        key, _eq, value = line.partition("=")
        if key.strip() == "namespace" and value.strip():
            found.append(value.strip())
    return found


def generator_files(build_dir: Path) -> tuple[Path, Path]:
    """``(config generator file, policy generator file)``: ``etc/``'s, else written here."""
    etc = ROOT / "etc"
    config = sorted(etc.glob("*config-generator.conf")) if etc.is_dir() else []
    policy = sorted(etc.glob("*policy-generator.conf")) if etc.is_dir() else []
    build_dir.mkdir(parents=True, exist_ok=True)
    if config:
        config_file = config[0]
    else:
        ours = _ours("oslo.config.opts")
        namespaces = ours + _library_namespaces(ours, LIBRARY_NAMESPACES)
        config_file = build_dir / "config-generator.conf"
        config_file.write_text(
            "[DEFAULT]\nwrap_width = 79\n" + "".join(f"namespace = {n}\n" for n in namespaces)
        )
    if policy:
        policy_file = policy[0]
    else:
        policy_file = build_dir / "policy-generator.conf"
        policy_file.write_text(
            "[DEFAULT]\n" + "".join(f"namespace = {n}\n" for n in _ours("oslo.policy.policies"))
        )
    return config_file, policy_file


class PlacementOptions(ShowOptionsDirective):
    """``.. placement-numa-options::``: oslo.config's ``show-options`` over the generator file."""

    has_content = False

    def run(self) -> list[Any]:
        """Render every option of the generator file's namespaces (a library namespace that
        redefines one of our options is left out: the same option twice breaks the build)."""
        env = self.state.document.settings.env
        listed = _namespaces(env.config.placement_config_generator_file)
        ours = [n for n in listed if n in _ours("oslo.config.opts")]
        self.content = StringList(ours + _library_namespaces(ours, listed))
        self.options["split-namespaces"] = None
        return super().run()


class PlacementPolicy(ShowPolicyDirective):
    """``.. placement-numa-policy::``: oslo.policy's ``show-policy`` over the generator file."""

    has_content = False

    def run(self) -> list[Any]:
        """Render every rule of the policy generator file's namespaces."""
        env = self.state.document.settings.env
        self.options["config-file"] = env.config.placement_policy_generator_file
        return super().run()


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the two directives and their configuration values."""
    app.add_config_value("placement_config_generator_file", "", "env")
    app.add_config_value("placement_policy_generator_file", "", "env")
    app.add_directive("placement-numa-options", PlacementOptions)
    app.add_directive("placement-numa-policy", PlacementPolicy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
