"""``python -m otel_toolscore``: the same command line as the ``otel-toolscore`` script."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
