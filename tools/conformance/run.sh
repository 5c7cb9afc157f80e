#!/usr/bin/env bash
# Conformance check against OpenStack Placement's own API tests (not part of CI: it installs
# openstack-placement and gabbi into a separate virtualenv, .conformance-venv, on first use).
#   tools/conformance/run.sh                 # every file (79), each with its fixture's configuration
#   tools/conformance/run.sh allocations     # files whose name contains "allocations"
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.conformance-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "openstack-placement>=16,<17" gabbi httpx
fi
export PLACEMENT_NUMA_BIN="${PLACEMENT_NUMA_BIN:-$(command -v placement-numa)}"
exec "$venv/bin/python" "$here/run.py" "$@"
