"""Chapter set-up: one call at the top of every chapter after the ``parameters`` cell.

``ctx = setup_chapter("c1", profile, device, seed)`` validates the parameters, seeds every
random number generator, picks the device, applies the book's plotting style, opens the
chapter's claims ledger and prints what the chapter runs with (package version, git commit,
torch version, device, profile, seed), so that book and package cannot drift apart unseen.
"""

from __future__ import annotations

import platform
import random
import subprocess
from dataclasses import dataclass

import numpy as np
import torch

from . import __version__
from .device import describe, resolve_device
from .ledger import Ledger
from .paths import project_root
from .profiles import check_profile, sizes


def git_commit(root=None) -> str:
    """The project's git commit (with ``+dirty`` if the work tree has changes), or ``unknown``."""
    root = root or project_root()
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators (CPU and CUDA)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


@dataclass
class ChapterContext:
    chapter: str
    profile: str
    device: torch.device
    seed: int
    sizes: dict
    ledger: Ledger

    def banner(self) -> str:
        return (f"infonce_book {__version__} (commit {git_commit()}), torch {torch.__version__}, "
                f"Python {platform.python_version()}; device: {describe(self.device)}; "
                f"profile: {self.profile}; seed: {self.seed}")


def setup_chapter(chapter: str, profile: str = "standard", device: str = "auto", seed: int = 0,
                  quiet: bool = False) -> ChapterContext:
    """Validate the papermill parameters and prepare a chapter run (see module docstring).

    Raises:
        ValueError: unknown profile or device, ``cuda`` without a GPU, negative seed.
    """
    check_profile(profile)
    dev = resolve_device(device)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got seed={seed!r}")
    seed_everything(seed)
    from .plotting import use_book_style

    use_book_style()
    ctx = ChapterContext(chapter=chapter, profile=profile, device=dev, seed=seed,
                         sizes=sizes(chapter, profile),
                         ledger=Ledger(chapter=chapter, profile=profile, device=str(dev), seed=seed))
    if not quiet:
        print(ctx.banner())
    return ctx
