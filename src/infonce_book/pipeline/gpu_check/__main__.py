"""``python -m infonce_book.pipeline.gpu_check``: the same commands as ``scripts/gpu_check.py``."""

import sys

from .cli import main

sys.exit(main())
