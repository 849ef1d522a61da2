"""``python -m harness.cli``: the ``harness`` command."""

import sys

from harness.cli.entry import main

sys.exit(main())
