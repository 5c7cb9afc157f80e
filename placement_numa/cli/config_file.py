"""``--config-file`` on every ``placement-numa`` command.

The service's commands (``serve``, ``export-openapi``, ``status``) read placement.conf into
``Settings`` (``placement_numa/conf.py``). The client commands (``agent``, ``demo``,
``reshape``, ``schedule``) run on compute nodes and operator hosts, where the file at hand is
nova.conf: they read the options Nova itself uses to reach Placement and to describe the host,
under the same names, so ``placement-numa agent --config-file /etc/nova/nova.conf`` needs no
file of its own:

=================================  ====================================================
nova.conf option                   command option
=================================  ====================================================
``[placement] endpoint_override``  ``--url`` (``--placement-url`` of ``agent``)
``[placement] auth_url``           ``agent --auth-url``
``[placement] username``           ``agent --username``
``[placement] password``           the agent's Keystone password
``[placement] project_name``       ``agent --project-name``
``[DEFAULT] host``                 ``agent --hostname``
``[compute] cpu_dedicated_set``    ``agent --cpu-dedicated-set``
``[compute] cpu_shared_set``       ``agent --cpu-shared-set``
=================================  ====================================================

Precedence, highest first: the command's flags, ``PLACEMENT_NUMA_AGENT_*`` variables (agent),
the file, the built-in defaults. A missing or unparsable file is one line and exit 2
(``placement_numa.cli.failures``).
"""

from __future__ import annotations

import argparse
import os

__all__ = ["CLIENT_COMMANDS", "add_config_file", "apply_client_defaults"]

CLIENT_COMMANDS = frozenset({"agent", "demo", "reshape", "schedule"})

# ``--url`` of the other client commands: nova.conf's endpoint, as the agent's placement_url.
_URL_OPTION = ("placement", "endpoint_override")


def _file_options() -> dict[str, tuple[str, str]]:
    """argparse destination -> (section, option) of nova.conf: the ``AgentSettings`` fields
    tagged with ``conf_option`` (declared there once; their argparse destinations share the
    field names), and ``url`` of the other client commands."""
    from placement_numa.agent.config import AgentSettings
    from placement_numa.conf import _mapped_fields

    found = {"url": _URL_OPTION}
    for name, section, option, _field in _mapped_fields(dict(AgentSettings.model_fields)):
        found[name] = (section, option)
    return found


# Destinations of the agent, whose PLACEMENT_NUMA_AGENT_* variable beats the file.
_AGENT_ENV_PREFIX = "PLACEMENT_NUMA_AGENT_"


def add_config_file(parser: argparse.ArgumentParser, *, client: bool = False) -> None:
    """Add ``--config-file`` to one (leaf) command parser.

    ``client`` commands read nova.conf's options (module docstring); the others, placement.conf.
    """
    parser.add_argument(
        "--config-file",
        metavar="PATH",
        help=(
            "nova.conf-style INI: [placement] endpoint_override and the options listed in the "
            "manual (flags win)"
            if client
            else "placement.conf to read (oslo.config INI; flags and PLACEMENT_NUMA_* "
            "variables win)"
        ),
    )


def _file_values(path: str) -> dict[str, str]:
    """The options of ``_file_options()`` that ``path`` sets, by argparse destination.

    Raises ``placement_numa.conf.ConfigFileError`` when the file is missing or unparsable.
    """
    from oslo_config import cfg

    from placement_numa.conf import ConfigFileError

    if not os.path.isfile(path):
        raise ConfigFileError(f"configuration file not found: {path}")
    options = _file_options()
    conf = cfg.ConfigOpts()
    for section, option in set(options.values()):
        group = None if section == "DEFAULT" else section
        conf.register_opt(cfg.StrOpt(option, secret=option == "password"), group=group)
    try:
        conf(args=[], project="nova", default_config_files=[path], default_config_dirs=[])
    except cfg.Error as exc:
        raise ConfigFileError(f"{path}: {exc}") from None
    values: dict[str, str] = {}
    for dest, (section, option) in options.items():
        value = conf[option] if section == "DEFAULT" else conf[section][option]
        if value:
            values[dest] = value
    return values


def apply_client_defaults(
    parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str] | None
) -> argparse.Namespace:
    """``args`` re-parsed with the file's values as defaults (a client command with a file).

    Flags given on the command line keep their values; an agent option whose
    ``PLACEMENT_NUMA_AGENT_*`` variable is set keeps the variable's value.
    """
    path = getattr(args, "config_file", None)
    if args.command not in CLIENT_COMMANDS or not path:
        return args
    values = _file_values(path)
    if args.command == "agent":
        values = {
            k: v for k, v in values.items() if _AGENT_ENV_PREFIX + k.upper() not in os.environ
        }
    for sub in _leaf_parsers(parser):
        dests = {action.dest for action in sub._actions}
        chosen = {k: v for k, v in values.items() if k in dests}
        if "placement_url" in dests and "password" in values:
            chosen["password"] = values["password"]  # no flag: from the file or the environment
        sub.set_defaults(**chosen)
    return parser.parse_args(argv)


def _leaf_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.append(sub)
                found.extend(_leaf_parsers(sub))
    return found
