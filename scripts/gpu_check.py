#!/usr/bin/env python3
"""The offline GPU check (``bash scripts/gpu_check.sh``; README "Running on a GPU"): this tree's
:mod:`infonce_book.pipeline.gpu_check`, run from ``src/`` (the package is not installed there)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from infonce_book.pipeline.gpu_check.cli import main

if __name__ == "__main__":
    sys.exit(main())
