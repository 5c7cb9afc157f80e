"""Sphinx configuration of placement-numa's documentation (``tox -e docs``).

Built the OpenStack way: oslo.config's and oslo.policy's Sphinx
extensions for the configuration and policy references (namespace ``placement-numa``), and our
own extension ``_ext/openapi_reference.py`` for the API reference, generated from
``api-spec/openapi.json``. CI builds with ``sphinx-build -W`` (warnings are errors).
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parents[1]))  # tests.nova_differences (the Nova fidelity page)

project = "placement-numa"
release = version = importlib.metadata.version("placement-numa")
copyright = "2026, the placement-numa developers"  # noqa: A001 (Sphinx's name)
author = "the placement-numa developers"

from oslo_references import generator_files  # noqa: E402 (after sys.path)

extensions = [
    "oslo_config.sphinxext",
    "oslo_config.sphinxconfiggen",
    "oslo_policy.sphinxext",
    "oslo_policy.sphinxpolicygen",
    "oslo_references",
    "openapi_reference",
    "settings_reference",
    "cli_reference",
]

# oslo.config and oslo.policy: etc/'s generator files (or ones written from the entry points).
placement_config_generator_file, placement_policy_generator_file = (
    str(path) for path in generator_files(HERE.parent / "build" / "generator")
)
# Sample placement.conf and policy file, written into _static at build time (linked from the
# configuration section as _static/placement-numa.conf.sample and .policy.yaml.sample).
config_generator_config_file = [(placement_config_generator_file, "_static/placement-numa")]
policy_generator_config_file = [(placement_policy_generator_file, "_static/placement-numa")]

# The API reference's source.
openapi_document = str(HERE.parents[1] / "api-spec" / "openapi.json")

# Sphinx's own theme: openstackdocstheme would dress the pages as openstack.org's (its top bar,
# bug links to Launchpad), which this project is not part of.
html_theme = "alabaster"
html_theme_options = {
    "description": "OpenStack Placement's API, NUMA-aware",
    "fixed_sidebar": True,
    "page_width": "1180px",
    "sidebar_width": "250px",
    "show_relbars": True,
}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}
html_static_path = ["_static"]
html_title = "placement-numa"

master_doc = "index"
exclude_patterns = ["_build", "**/_include/*"]
highlight_language = "none"
smartquotes = False  # options such as --config-file stay as typed
