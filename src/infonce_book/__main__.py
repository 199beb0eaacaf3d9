"""``python -m infonce_book``: the ``infonce-book`` command (works without the console script,
e.g. from a source tree on ``PYTHONPATH``)."""

import sys

from .pipeline.cli import main

if __name__ == "__main__":
    sys.exit(main())
