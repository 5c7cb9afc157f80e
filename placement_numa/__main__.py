"""``python -m placement_numa``: the ``placement-numa`` command."""

import sys

from placement_numa.cli import main

sys.exit(main())
