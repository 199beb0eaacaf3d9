"""``python -m infonce_book``: the same command line as the ``infonce-book`` script (see :mod:`.cli`)."""

from .cli import main

raise SystemExit(main())
