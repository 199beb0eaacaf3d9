"""Where things live: the project root, the build folder, the ledger and the cache; which commit
of the project is running (:func:`git_commit`), and a hash of its source (:func:`source_hash`)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

#: Set to ``"1"`` by the pipeline (:func:`infonce_book.pipeline.execute.run_chapter`) in the kernel that
#: executes a chapter for the book (figures are then only glued, not shown a second time; see
#: :func:`infonce_book.experiment.style.glue_figure`).
PIPELINE_ENV = "INFONCE_BOOK_PIPELINE"


def project_root(start: Path | None = None) -> Path:
    """The repository root: ``INFONCE_BOOK_ROOT``, else the nearest folder above ``start`` (or the
    current directory) that holds ``_toc.yml`` and ``book/``; else the current directory."""
    env = os.environ.get("INFONCE_BOOK_ROOT")
    if env:
        return Path(env).resolve()
    here = (start or Path.cwd()).resolve()
    for p in (here, *here.parents):
        if (p / "_toc.yml").is_file() and (p / "book").is_dir():
            return p
    return here


def source_hash(directory: Path | None = None) -> str:
    """SHA-256 of every ``.py`` file under ``directory`` (its name relative to ``directory``, then its
    content), in sorted order; ``directory`` defaults to the installed package ``infonce_book``.

    The one source hash of the project: the experiment cache keys on the package's
    (:func:`infonce_book.experiment.cache.cached`), the pipeline's skip key on ``<root>/src``
    (:func:`infonce_book.pipeline.execute.run_chapter`; jupyter-cache keys ignore imported code).
    """
    base = Path(directory) if directory is not None else Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for p in sorted(base.rglob("*.py")):
        h.update(p.relative_to(base).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def build_dir() -> Path:
    """The build folder: ``INFONCE_BOOK_BUILD_DIR``, else ``<root>/_build``."""
    env = os.environ.get("INFONCE_BOOK_BUILD_DIR")
    return Path(env).resolve() if env else project_root() / "_build"


def ledger_dir() -> Path:
    """Where chapter runs write ledger records: ``INFONCE_BOOK_LEDGER_DIR``, else ``<build>/ledger``."""
    env = os.environ.get("INFONCE_BOOK_LEDGER_DIR")
    return Path(env).resolve() if env else build_dir() / "ledger"


def cache_dir() -> Path:
    """Experiment cache: ``INFONCE_BOOK_CACHE_DIR``, else ``<build>/cache``."""
    env = os.environ.get("INFONCE_BOOK_CACHE_DIR")
    return Path(env).resolve() if env else build_dir() / "cache"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def git_commit(root=None) -> str:
    """The project's git commit (with ``+dirty`` if the work tree has changes), or ``unknown``."""
    root = root or project_root()
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True,
                             text=True, encoding="utf-8", errors="replace", timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, encoding="utf-8", errors="replace",
                               timeout=10).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
