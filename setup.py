"""Packaging beyond pyproject.toml: the alembic environment lives in the top-level
``migrations/`` folder of the checkout and ships inside the wheel as ``placement_numa/migrations``
(found at run time with ``importlib.resources``, so an installed wheel migrates from anywhere)."""

from setuptools import find_packages, setup

MIGRATIONS = {
    "placement_numa.migrations": "migrations",
    "placement_numa.migrations.versions": "migrations/versions",
}

setup(
    packages=find_packages(include=["placement_numa", "placement_numa.*"]) + list(MIGRATIONS),
    package_dir=MIGRATIONS,
    package_data={
        "placement_numa.migrations": ["*.py", "*.mako"],
        "placement_numa.migrations.versions": ["*.py"],
    },
)
