"""Service settings: one typed object, read from flags, the environment and placement.conf.

Precedence, highest first: keyword arguments (the CLI's flags), ``PLACEMENT_NUMA_*`` environment
variables, the configuration file (``config_file``, read with oslo.config: see
``placement_numa/conf.py``), then the defaults below. A field tagged with
``json_schema_extra=conf_option("section", "option")`` is read from that option of the file.

Nothing here is instantiated at import time: ``create_app(settings)`` and the CLI build a
``Settings`` object explicitly, so tests can switch backends per test run.

Settings are grouped by concern, one block each; add a field to the block it belongs to.

The placement.conf entry points bound to ``Settings`` live here too (``conf.py`` is generic, so
imports run one way: settings -> conf, settings -> observability.logs):
``list_opts`` (the oslo-config-generator hook), ``load_config`` (the ``ConfigOpts`` of a
file, ``app.state.conf``) and ``settings_file_values``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from oslo_config import cfg
from pydantic import Field, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from placement_numa.conf import conf_option, field_values, options_by_section, parse_config
from placement_numa.observability.logs import register_options as register_log_options

__all__ = [
    "Settings",
    "DEFAULT_DATABASE_URL",
    "list_opts",
    "load_config",
    "settings_file_values",
]

DEFAULT_DATABASE_URL = "sqlite:///placement-numa.sqlite"


class Settings(BaseSettings):
    """Configuration of one placement-numa process.

    Environment variables: ``PLACEMENT_NUMA_DATABASE_URL``, ``PLACEMENT_NUMA_HOST``, ... (one per
    field, upper-cased). ``database_url`` is any SQLAlchemy URL; ``postgresql://`` and ``mysql://``
    URLs are rewritten to the psycopg 3 and PyMySQL drivers.
    """

    model_config = SettingsConfigDict(env_prefix="PLACEMENT_NUMA_", extra="ignore")

    # --- the configuration file itself ---
    config_file: Path | None = Field(
        default=None,
        description="placement.conf (oslo.config INI); flags and environment variables win.",
    )

    # --- database ---
    database_url: str = Field(
        default=DEFAULT_DATABASE_URL,
        description="SQLAlchemy URL; SQLite file in the working directory when unset.",
        json_schema_extra=conf_option("placement_database", "connection"),
    )
    # Upstream Placement's [placement_database] options (oslo.db's); the ones we do not honour
    # are named in one warning at start (db/upstream_options.py).
    sync_on_startup: bool = Field(
        default=False,
        description=(
            "Upgrade the schema to our head when the service starts (Placement's option, off by"
            " default as upstream). Off, a start still creates the schema in an empty database"
            " (zero set-up), and refuses a schema behind head or an OpenStack Placement one"
            " (run 'placement-numa db upgrade' or 'db adopt')."
        ),
        json_schema_extra=conf_option("placement_database", "sync_on_startup"),
    )
    connection_parameters: str = Field(
        default="",
        description="Appended to the connection URL's query string (oslo.db's option).",
        json_schema_extra=conf_option("placement_database", "connection_parameters"),
    )
    connection_recycle_time: int = Field(
        default=3600,
        ge=-1,
        description="Seconds after which a pooled connection is replaced; -1 never (oslo.db).",
        json_schema_extra=conf_option("placement_database", "connection_recycle_time"),
    )
    # --- HTTP server and processes ---
    host: str = Field(default="127.0.0.1", description="Address the HTTP server binds.")
    port: int = Field(default=8778, ge=1, le=65535, description="Placement's port by default.")
    workers: int = Field(default=1, ge=1, le=64, description="uvicorn worker processes.")
    prefork: bool = Field(
        default=False,
        description=(
            "With several workers: load the fleet snapshot once in a supervisor process and fork"
            " the workers from it (they share it copy-on-write; a dead worker's replacement"
            " serves at once). Off: uvicorn's supervisor spawns workers that each load their own"
            " (cli/prefork.py)."
        ),
    )
    prefork_max_private_mb: int = Field(
        default=0,
        ge=0,
        description=(
            "With prefork: a worker holding more memory of its own than this (MiB: pages it"
            " no longer shares with the supervisor, and its caches) is replaced by a fresh fork"
            " (forked first, then stopped gracefully). 0: never."
        ),
    )
    auto_migrate: bool = Field(
        default=True, description="Apply alembic migrations when the service starts."
    )
    sync_standard_names: bool = Field(
        default=True,
        description=(
            "Insert os-traits / os-resource-classes names missing from the database at start."
        ),
    )
    migrations_dir: Path | None = Field(
        default=None,
        description="Alembic script directory; the package's own migrations/ by default.",
    )
    log_level: str = Field(
        default="info",
        description=(
            "Deprecated (PLACEMENT_NUMA_LOG_LEVEL): use oslo.log's [DEFAULT] debug. When set,"
            " debug overrides [DEFAULT] debug; warning or error raise the root level."
        ),
    )

    # --- authentication, policy, CORS (issue 9) ---
    # [keystone_authtoken], [oslo_policy] and [cors] belong to their libraries (keystonemiddleware,
    # oslo.policy, oslo.middleware), which read them from app.state.conf.
    auth_strategy: Literal["keystone", "noauth2"] = Field(
        default="keystone",
        description=(
            "keystone: tokens validated by keystonemiddleware ([keystone_authtoken]); noauth2: "
            "Placement's development mode, the token names the user and anyone may claim any "
            "role (x-roles)."
        ),
        json_schema_extra=conf_option("api", "auth_strategy"),
    )

    # --- allocation candidates ([placement]) ---
    randomize_allocation_candidates: bool = Field(
        default=False,
        description="Shuffle allocation candidates before applying limit (Placement's option).",
        json_schema_extra=conf_option("placement", "randomize_allocation_candidates"),
    )
    max_allocation_candidates: int = Field(
        default=100_000,
        ge=-1,
        description=(
            "At most this many allocation candidates are generated per request, before limit"
            " (Placement's option); past it the answer is truncated. -1: no cap but the"
            " engine's budget of 2,000,000 group placements per search."
        ),
        json_schema_extra=conf_option("placement", "max_allocation_candidates"),
    )
    allocation_candidates_generation_strategy: Literal["depth-first", "breadth-first"] = Field(
        default="depth-first",
        description=(
            "Order in which viable roots give candidates (Placement's option): depth-first"
            " (every candidate of a root before the next) or breadth-first (one candidate of"
            " every root before a second of any: more hosts under limit)."
        ),
        json_schema_extra=conf_option("placement", "allocation_candidates_generation_strategy"),
    )
    foreign_write_staleness: float = Field(
        default=3.0,
        ge=0,
        description=(
            "Seconds within which a write made around placement-numa (upstream Placement serving"
            " the same database, an operator's SQL, nova-manage) reaches allocation candidate"
            " answers on PostgreSQL and MariaDB: a fingerprint of the tables is checked twice"
            " as often (db/foreign_writes.py). 0 turns the check off."
        ),
        json_schema_extra=conf_option("placement", "foreign_write_staleness"),
    )
    preload_fleet: bool = Field(
        default=True,
        description=(
            "Load the candidate engine's fleet snapshot when a worker starts, before it serves"
            " (else on the first allocation candidates query)."
        ),
    )

    # --- schedule and claim (issue 14) ---
    claim_strategy: Literal["spread", "ordered"] = Field(
        default="spread",
        description=(
            "How POST /allocation_candidates/claim walks the ranked candidates: spread (equally"
            " ranked candidates shuffled, hosts being claimed by others skipped, SKIP LOCKED)"
            " or ordered (rank order, waiting for each host's locks; the baseline)."
        ),
        json_schema_extra=conf_option("placement", "claim_strategy"),
    )

    # --- limits and timeouts (issue 10) ---
    # Input caps: each bounds the work one request can cause, checked before the work starts.
    max_request_body_size: int = Field(
        default=1_048_576,
        ge=1024,
        description=(
            "Largest request body accepted, in bytes; larger ones get 413"
            " placement.limit.body_size (oslo.middleware's option)."
        ),
        json_schema_extra=conf_option("oslo_middleware", "max_request_body_size"),
    )
    max_json_depth: int = Field(
        default=32,
        ge=8,
        le=512,
        description="Deepest JSON nesting accepted in a body (400 placement.limit.json_depth).",
        json_schema_extra=conf_option("placement", "max_json_depth"),
    )
    max_query_string_length: int = Field(
        default=32_768,
        ge=1024,
        description=("Longest query string accepted, in bytes (400 placement.limit.query_length)."),
        json_schema_extra=conf_option("placement", "max_query_string_length"),
    )
    max_request_groups: int = Field(
        default=64,
        ge=1,
        description=(
            "Most request groups in one allocation candidates query"
            " (400 placement.limit.request_groups)."
        ),
        json_schema_extra=conf_option("placement", "max_request_groups"),
    )
    max_resource_classes_per_group: int = Field(
        default=64,
        ge=1,
        description=(
            "Most resource classes in one request group or resources= filter"
            " (400 placement.limit.resource_classes)."
        ),
        json_schema_extra=conf_option("placement", "max_resource_classes_per_group"),
    )
    max_batch_providers: int = Field(
        default=1000,
        ge=1,
        description=(
            "Most providers in one POST /resource_providers/batch"
            " (400 placement.limit.batch_providers)."
        ),
        json_schema_extra=conf_option("api", "max_batch_providers"),
    )

    # Database: connection pool per worker process, timeouts, retries (oslo.db's option names).
    max_pool_size: int = Field(
        default=10,
        ge=1,
        description=(
            "Connections each worker keeps open to PostgreSQL/MariaDB; workers x (max_pool_size"
            " + max_overflow) must stay below the server's max_connections."
        ),
        json_schema_extra=conf_option("placement_database", "max_pool_size"),
    )
    max_overflow: int = Field(
        default=20,
        ge=0,
        description="Connections a worker may open beyond max_pool_size under load.",
        json_schema_extra=conf_option("placement_database", "max_overflow"),
    )
    pool_timeout: float = Field(
        default=10.0,
        gt=0,
        description=(
            "Seconds a request waits for a free connection; then 503 placement.db.pool_exhausted."
        ),
        json_schema_extra=conf_option("placement_database", "pool_timeout"),
    )
    statement_timeout: float = Field(
        default=30.0,
        ge=0,
        description=(
            "Seconds one SQL statement may run (PostgreSQL statement_timeout, MariaDB"
            " max_statement_time); then 503 placement.db.timeout. 0 disables."
        ),
        json_schema_extra=conf_option("placement_database", "statement_timeout"),
    )
    lock_timeout: float = Field(
        default=10.0,
        ge=0,
        description=(
            "Seconds a statement waits for a row or table lock (PostgreSQL lock_timeout, MariaDB"
            " innodb_lock_wait_timeout, rounded up to whole seconds); then 503"
            " placement.db.timeout. 0 disables."
        ),
        json_schema_extra=conf_option("placement_database", "lock_timeout"),
    )
    db_max_retries: int = Field(
        default=5,
        ge=0,
        le=20,
        description=(
            "Times a request is re-run after a deadlock, serialization failure or Galera"
            " certification conflict (as oslo.db's wrap_db_retry); then 503."
        ),
        json_schema_extra=conf_option("placement_database", "db_max_retries"),
    )
    db_retry_interval: float = Field(
        default=0.05,
        ge=0,
        description="Seconds before the first retry; doubled on each retry (with jitter).",
        json_schema_extra=conf_option("placement_database", "db_retry_interval"),
    )
    db_max_retry_interval: float = Field(
        default=1.0,
        ge=0,
        description="Longest wait between two retries, in seconds.",
        json_schema_extra=conf_option("placement_database", "db_max_retry_interval"),
    )
    retry_after: int = Field(
        default=2,
        ge=0,
        description="Retry-After seconds sent with every 503 (database unavailable or busy).",
        json_schema_extra=conf_option("placement", "retry_after"),
    )
    # Timeouts of the built-in HTTP server (seconds).
    header_read_timeout: float = Field(
        default=30.0,
        gt=0,
        description=(
            "Seconds a connection may take to send a complete request line and headers"
            " (idle connections included); then it is closed."
        ),
        json_schema_extra=conf_option("placement", "header_read_timeout"),
    )
    body_read_timeout: float = Field(
        default=30.0,
        gt=0,
        description="Seconds to wait for each chunk of a request body (408 after that).",
        json_schema_extra=conf_option("placement", "body_read_timeout"),
    )
    keep_alive_timeout: float = Field(
        default=5.0,
        gt=0,
        description="Seconds an idle keep-alive connection stays open between requests.",
        json_schema_extra=conf_option("placement", "keep_alive_timeout"),
    )

    # --- observability: metrics and logs (issue 12) ---
    metrics_enabled: bool = Field(
        default=True,
        description="Serve Prometheus metrics at /metrics (prometheus-client).",
        json_schema_extra=conf_option("metrics", "enabled"),
    )
    metrics_token: str | None = Field(
        default=None,
        description=(
            "When set, /metrics answers only requests with 'Authorization: Bearer <token>'; "
            "unset, /metrics is open like / and /docs."
        ),
        json_schema_extra=conf_option("metrics", "token"),
    )
    metrics_per_host_series: bool = Field(
        default=False,
        description=(
            "Also export per compute node and per NUMA cell series at /metrics"
            " (placement_numa_fleet_numa_cell_free, placement_numa_fleet_numa_free_cpu_stddev:"
            " 2 x cells + 1 series per compute node). Off: fleet-level and per-aggregate"
            " series only, a count that does not grow with the number of hosts."
        ),
        json_schema_extra=conf_option("metrics", "per_host_series"),
    )
    metrics_flavors_file: Path | None = Field(
        default=None,
        description=(
            "A flavor catalogue in Nova's flavor format (JSON or YAML: the body of Nova's GET"
            ' /flavors/detail, {"flavors": [{"name", "vcpus", "ram", "disk",'
            ' "OS-FLV-EXT-DATA:ephemeral", "swap", "extra_specs"}]}, or a list of such'
            " flavors). /metrics then exports placement_numa_flavor_capacity{flavor} (how many"
            " more fit, as POST /allocation_candidates/capacity counts them) and the stranded"
            " capacity and fragmentation of the fleet for the catalogue."
        ),
        json_schema_extra=conf_option("metrics", "flavors_file"),
    )
    log_json: bool = Field(
        default=False,
        description=(
            "Deprecated (PLACEMENT_NUMA_LOG_JSON): use oslo.log's [DEFAULT] use_json. When set,"
            " it overrides use_json."
        ),
    )
    access_log: bool = Field(
        default=True,
        description=(
            "One log line per request (logger placement_numa.access): request id, user, "
            "project, method, route, status, duration."
        ),
        json_schema_extra=conf_option("DEFAULT", "access_log"),
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Flags (init arguments), then the environment, then placement.conf."""
        return (init_settings, env_settings, _ConfigFileSource(settings_cls))

    @field_validator("database_url")
    @classmethod
    def _normalise_driver(cls, value: str) -> str:
        """Pick the drivers we ship: psycopg 3 for PostgreSQL, PyMySQL for MariaDB/MySQL,
        whatever driver the URL names (``db.database.normalise_url``)."""
        from placement_numa.db.database import normalise_url

        return normalise_url(value)

    @model_validator(mode="after")
    def _connection_parameters(self) -> Settings:
        """Append ``[placement_database] connection_parameters`` to the URL's query (oslo.db)."""
        extra = self.connection_parameters.strip().lstrip("?&")
        if extra:
            joiner = "&" if "?" in self.database_url else "?"
            self.database_url = f"{self.database_url}{joiner}{extra}"
            self.connection_parameters = ""
        return self


class _ConfigFileSource(PydanticBaseSettingsSource):
    """Values from the oslo.config file named by ``config_file`` (from a flag or the env)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        """Unused: ``__call__`` reads every field at once."""
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        """The file's values for the fields it sets; ``{}`` without a file."""
        config_file = self.current_state.get("config_file")
        if not config_file:
            return {}
        return settings_file_values(load_config(config_file), dict(self.settings_cls.model_fields))


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """Every option placement-numa reads from the file, by section (oslo-config-generator's
    ``placement-numa`` namespace): the ``Settings`` fields mapped to the file and ``[pci]
    alias`` (``conf.PCI_OPTS``)."""
    return options_by_section(dict(Settings.model_fields))


def load_config(config_file: Path | str | None) -> cfg.ConfigOpts:
    """A ``ConfigOpts`` parsed from ``config_file`` (an empty one when ``None``).

    Our options (``list_opts``) and oslo.log's ``[DEFAULT]`` options are registered on it;
    keystonemiddleware, oslo.policy and the CORS middleware register their own sections on the
    same object. Raises ``conf.ConfigFileError`` when the file cannot be read or a value does
    not parse.
    """
    return parse_config(config_file, list_opts(), register_log_options)


def settings_file_values(
    conf: cfg.ConfigOpts, fields: dict[str, FieldInfo] | None = None
) -> dict[str, Any]:
    """The ``Settings`` field values (or ``fields``') the file sets (unset options omitted).

    Raises ``conf.ConfigFileError`` naming ``[section] option`` when a value does not parse.
    """
    return field_values(conf, fields if fields is not None else dict(Settings.model_fields))
