"""``python -m magi_desktop.cli``: what the ``magi`` script runs."""

import sys

from . import main

sys.exit(main())
