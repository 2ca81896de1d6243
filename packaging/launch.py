"""Entry point of the frozen build: ``magi-desktop`` is the ``magi`` command (no argument: the app)."""

import sys

from magi_desktop.cli import main

if __name__ == "__main__":
    sys.exit(main())
