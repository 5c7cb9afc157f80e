"""The checks of ``placement-numa status upgrade check`` (oslo.upgradecheck).

Run before restarting the service on new code, as ``placement-status upgrade check`` is for
OpenStack Placement. Every check is read-only: it never creates, migrates or writes anything.

=============================  ==========================================================
check                          fails (2) or warns (1) when
=============================  ==========================================================
Database schema                the schema is not at this release's head (alembic), the
                               database is unreachable, or holds a revision we do not know
Adopted Placement database     an upstream Placement database lacks placement-numa's
                               extension tables, or ``placement_revision`` is not seeded
Policy file                    ``[oslo_policy] policy_file`` does not load, names a rule
                               that does not exist (warning), or is JSON (oslo's own check)
Deprecated options             the file sets an option marked deprecated (warning)
=============================  ==========================================================

Exit codes are oslo.upgradecheck's: 0 success, 1 warning, 2 failure (the worst check wins);
255 when a check itself crashed (a bug).
"""

from __future__ import annotations

import configparser
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oslo_config import cfg
from oslo_upgradecheck import common_checks, upgradecheck
from oslo_upgradecheck.upgradecheck import Code, Result

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from placement_numa.settings import Settings

__all__ = ["Checks", "LIBRARY_NAMESPACES", "load_full_config"]

# The oslo.config namespaces of the libraries placement-numa runs (their sections of
# placement.conf), as etc/placement-numa-config-generator.conf lists them.
LIBRARY_NAMESPACES = (
    "keystonemiddleware.auth_token",
    "oslo.log",
    "oslo.middleware.cors",
    "oslo.middleware.http_proxy_to_wsgi",
    "oslo.middleware.healthcheck",
    "oslo.policy",
)

# Extension tables placement-numa adds to Placement's schema (an adopted database needs them).
EXTENSION_TABLES = ("placement_revision", "numa_distances", "placement_changes")
# Tables every Placement database has (upstream's and ours).
PLACEMENT_TABLES = ("resource_providers", "inventories", "allocations", "traits")


def load_full_config(config_file: Path | str | None) -> cfg.ConfigOpts:
    """``load_config(config_file)`` with the libraries' options registered too.

    Raises ``placement_numa.conf.ConfigFileError`` when the file is missing or unparsable.
    """
    from stevedore.named import NamedExtensionManager

    from placement_numa.settings import load_config

    conf = load_config(config_file)
    manager: NamedExtensionManager[Any] = NamedExtensionManager(
        "oslo.config.opts", names=list(LIBRARY_NAMESPACES)
    )
    for extension in manager:
        for group, opts in extension.plugin():
            name = getattr(group, "name", group)
            for opt in opts:
                try:
                    conf.register_opt(opt, group=None if name in (None, "DEFAULT") else name)
                except cfg.DuplicateOptError:
                    pass  # ours and the library's share [oslo_middleware] max_request_body_size
    return conf


class Checks(upgradecheck.UpgradeCommands):
    """placement-numa's upgrade checks over ``settings`` and the parsed ``conf``."""

    display_title = "placement-numa upgrade check results"

    def __init__(self, settings: Settings, conf: cfg.ConfigOpts) -> None:
        """Checks of the deployment ``settings`` describe; ``conf``: its placement.conf."""
        self.settings = settings
        self.conf = conf

    # --- database -----------------------------------------------------------------------------

    def _connect(self) -> Iterator[Connection]:
        """One read-only use of the database (no pool kept). Raises ``LookupError`` for a
        SQLite file that does not exist (connecting would create it)."""
        from sqlalchemy import create_engine
        from sqlalchemy.engine import make_url
        from sqlalchemy.pool import NullPool

        url = make_url(self.settings.database_url)
        if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
            if not Path(str(url.database)).is_file():
                raise LookupError(f"no SQLite database at {url.database}")
        engine = create_engine(url, poolclass=NullPool)
        try:
            with engine.connect() as connection:
                yield connection
        finally:
            engine.dispose()

    def _with_database(self, check: Callable[[Connection], Result]) -> Result:
        """``check(connection)``; an unreachable database is a failure naming the error."""
        from sqlalchemy.exc import SQLAlchemyError

        try:
            for connection in self._connect():
                return check(connection)
        except LookupError as exc:
            return Result(Code.FAILURE, f"{exc}; run placement-numa db upgrade")
        except SQLAlchemyError as exc:
            detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
            return Result(Code.FAILURE, f"cannot use the database: {detail}")
        raise AssertionError("unreachable")  # pragma: no cover

    def _check_schema(self) -> Result:
        """Schema at head: the database's alembic revision against this release's heads."""
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory

        from placement_numa.db.migrate import alembic_config

        script = ScriptDirectory.from_config(
            alembic_config(self.settings.database_url, self.settings.migrations_dir)
        )
        heads = set(script.get_heads())

        def check(connection: Connection) -> Result:
            current = set(MigrationContext.configure(connection).get_current_heads())
            if not current:
                return Result(
                    Code.FAILURE, "the database has no schema yet: run placement-numa db upgrade"
                )
            if current == heads:
                return Result(Code.SUCCESS)
            known = {rev.revision for rev in script.walk_revisions()}
            unknown = sorted(current - known)
            if unknown:
                return Result(
                    Code.FAILURE,
                    f"the database is at revision {', '.join(unknown)}, which this release does "
                    "not know (an OpenStack Placement database not yet adopted, or a newer "
                    "placement-numa wrote it)",
                )
            return Result(
                Code.FAILURE,
                f"the schema is at {', '.join(sorted(current))}, head is "
                f"{', '.join(sorted(heads))}: run placement-numa db upgrade",
            )

        return self._with_database(check)

    def _check_adopted(self) -> Result:
        """An (adopted) Placement database carries our extension tables, seeded."""
        from sqlalchemy import inspect, text

        def check(connection: Connection) -> Result:
            tables = set(inspect(connection).get_table_names())
            if not set(PLACEMENT_TABLES) <= tables:
                return Result(Code.SUCCESS, "no Placement tables yet (nothing to adopt)")
            missing = [name for name in EXTENSION_TABLES if name not in tables]
            if missing:
                return Result(
                    Code.FAILURE,
                    f"a Placement database without placement-numa's tables ({', '.join(missing)})"
                    ": adopt it with placement-numa db upgrade",
                )
            rows = connection.execute(
                text("SELECT revision FROM placement_revision WHERE id = 1")
            ).all()
            if not rows:
                return Result(
                    Code.FAILURE,
                    "placement_revision has no row id = 1 (the extension tables were not "
                    "seeded): run placement-numa db upgrade",
                )
            return Result(Code.SUCCESS)

        return self._with_database(check)

    # --- policy and options ---------------------------------------------------------------------

    def _check_policy(self) -> Result:
        """The policy file loads with oslo.policy and overrides only rules that exist."""
        from placement_numa.api.policy import make_enforcer

        try:
            enforcer = make_enforcer(self.conf)
            enforcer.load_rules(force_reload=True)
        except Exception as exc:  # YAML, I/O and rule syntax errors alike: the file is unusable
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return Result(Code.FAILURE, f"the policy file does not load: {first}")
        registered = set(enforcer.registered_rules)
        unknown = sorted(set(enforcer.file_rules) - registered)
        if unknown:
            return Result(
                Code.WARNING,
                f"the policy file sets rules placement-numa does not have: {', '.join(unknown)}",
            )
        return Result(Code.SUCCESS)

    def _check_policy_json(self) -> Result:
        """oslo.upgradecheck's common check: a JSON policy file is deprecated (failure)."""
        return common_checks.check_policy_json(self, self.conf)

    def _check_deprecated(self) -> Result:
        """Options set in the file that are deprecated (for removal, or by an old name)."""
        found = sorted(set(_deprecated_in_use(self.conf, self.settings.config_file)))
        if found:
            return Result(Code.WARNING, "deprecated options in use: " + "; ".join(found))
        return Result(Code.SUCCESS)

    _upgrade_checks = (
        ("Database schema", _check_schema),
        ("Adopted Placement database", _check_adopted),
        ("Policy file", _check_policy),
        ("Policy file JSON to YAML migration", _check_policy_json),
        ("Deprecated options", _check_deprecated),
    )


def _deprecated_in_use(conf: cfg.ConfigOpts, config_file: Path | None) -> Iterator[str]:
    """``[section] option`` texts for deprecated options the file sets.

    Reads the file's section and option names with ``configparser`` (names only; values are
    oslo.config's business) and compares them with every registered option's deprecation.
    """
    if config_file is None:
        return
    raw = configparser.ConfigParser(strict=False, interpolation=None)
    raw.optionxform = str  # type: ignore[assignment,method-assign]
    raw.read(config_file)
    present = {(section, key) for section in raw.sections() for key in raw[section]}
    present |= {("DEFAULT", key) for key in raw.defaults()}
    for group_name, opt in _registered(conf):
        if opt.deprecated_for_removal and (group_name, opt.dest) in present:
            reason = f": {opt.deprecated_reason}" if opt.deprecated_reason else ""
            yield f"[{group_name}] {opt.dest} is deprecated for removal{reason}"
        for old in opt.deprecated_opts:
            old_group = old.group or group_name
            old_name = (old.name or opt.dest).replace("-", "_")
            if (old_group, old_name) in present and (old_group, old_name) != (group_name, opt.dest):
                yield f"[{old_group}] {old_name} is deprecated: use [{group_name}] {opt.dest}"


def _registered(conf: cfg.ConfigOpts) -> Iterator[tuple[str, Any]]:
    """``(section, opt)`` for every option registered on ``conf`` (oslo.config keeps them in
    ``_opts`` of the object and of each group; it has no public listing)."""
    for info in conf._opts.values():
        yield "DEFAULT", info["opt"]
    for group_name, group in conf._groups.items():
        for info in group._opts.values():
            yield group_name, info["opt"]
