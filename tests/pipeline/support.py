"""A minimal book for the pipeline tests: an intro page, a good and a failing chapter, a src/ tree."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "infonce_book"]

HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""

PARAMETERS = """
```{code-cell} ipython3
:tags: [parameters]

profile = "standard"
device = "auto"
seed = 0
```
"""

OK_CHAPTER = HEADER + "\n# A chapter\n" + PARAMETERS + """
```{code-cell} ipython3
print(f"ran with {profile} {device} {seed}")
```
"""

BAD_CHAPTER = HEADER + "\n# A failing chapter\n" + PARAMETERS + """
```{code-cell} ipython3
x = 1
```

```{code-cell} ipython3
raise RuntimeError("boom in the third cell")
```
"""


def minimal_project(tmp_path: Path) -> Path:
    """A minimal book: intro page, one good and one failing chapter, a src/ tree."""
    (tmp_path / "book").mkdir()
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "mod.py").write_text("X = 1\n")
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    (tmp_path / "book" / "ok.md").write_text(OK_CHAPTER)
    (tmp_path / "book" / "bad.md").write_text(BAD_CHAPTER)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n"
                                       "  - file: book/ok\n  - file: book/bad\n")
    return tmp_path


#: Where a chromium executable is looked for (tests/pipeline/test_browser.py), after ``INFONCE_BOOK_CHROMIUM``.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome",
                       "google-chrome-stable")


def find_chromium() -> str | None:
    """A chromium executable: ``INFONCE_BOOK_CHROMIUM`` if set (and present), else the first of
    :data:`CHROMIUM_CANDIDATES` found; ``None`` if there is none."""
    import os
    import shutil

    env = os.environ.get("INFONCE_BOOK_CHROMIUM")
    if env:
        return env if shutil.which(env) or Path(env).is_file() else None
    for c in CHROMIUM_CANDIDATES:
        found = shutil.which(c) or (c if Path(c).is_file() and os.access(c, os.X_OK) else None)
        if found:
            return found
    return None
