"""Persistence: table definitions, the engine/connection factory, migrations, repositories."""
