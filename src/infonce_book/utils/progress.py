"""Progress bars for the terminal only.

The book pipeline sets ``INFONCE_BOOK_NO_PROGRESS=1`` while it executes chapters, so bars never
end up in rendered pages; in a terminal (or when a user calls the library directly) they show.
"""

from __future__ import annotations

import os

from tqdm import tqdm


def progress_enabled() -> bool:
    return os.environ.get("INFONCE_BOOK_NO_PROGRESS", "") not in ("1", "true", "yes")


def progress(iterable, *, desc: str = "", disable: bool = False, **kwargs):
    """``tqdm`` over ``iterable``, unless disabled here or by ``INFONCE_BOOK_NO_PROGRESS``."""
    return tqdm(iterable, desc=desc, disable=disable or not progress_enabled(), leave=False, **kwargs)
