"""Chapter set-up: one call at the top of every chapter after the ``parameters`` cell.

``ctx = chapter.setup(profile, device, seed)`` (each chapter module's ``setup`` calls
:func:`setup_chapter` with its stem and its ``SIZES``) validates the parameters, seeds every
random number generator, picks the device, applies the book's plotting style, opens the
chapter's claims ledger and prints what the chapter runs with (package version, git commit,
torch version, device, profile, seed), so that book and package cannot drift apart unseen.
"""

from __future__ import annotations

import platform
import random
from dataclasses import asdict, dataclass

import numpy as np
import torch

from .. import __version__
from ..utils.device import describe, resolve_device
from ..utils.validation import check_k, check_scalar, check_seed
from .ledger import Ledger
from .paths import git_commit
from .profiles import check_profile, sizes_for
from .style import use_book_style


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators (CPU and CUDA)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


class ChapterSetup:
    """Base of the chapters' frozen configuration dataclasses (``DigitsSetup``, ...): the fixed
    choices a page constructs in its visible configuration cell and passes to its runners.
    :attr:`params` is what the result cache hashes."""

    @property
    def params(self) -> dict:
        """The fields as a dict (the cache key of the runners)."""
        return asdict(self)


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
                  quiet: bool = False, *, sizes: dict | None = None) -> ChapterContext:
    """Validate the papermill parameters and prepare a chapter run (see module docstring).

    ``sizes`` is the chapter's table ``{profile: {name: size}}``; ``ctx.sizes`` is its entry
    for ``profile`` (empty when the page has no experiment sizes).

    Raises:
        ValueError: unknown profile or device, ``cuda`` without a GPU, negative seed.
        TypeError: a seed that is not an integer.
    """
    check_profile(profile)
    dev = resolve_device(device)
    seed = check_seed(seed)
    seed_everything(seed)
    use_book_style()
    ctx = ChapterContext(chapter=chapter, profile=profile, device=dev, seed=seed,
                         sizes=sizes_for(sizes, profile) if sizes is not None else {},
                         ledger=Ledger(chapter=chapter, profile=profile, device=str(dev), seed=seed))
    if not quiet:
        print(ctx.banner())
    return ctx


def log_grid(k_max_log2: int, per_octave: int = 2) -> list[int]:
    """Integers from 1 to 2^k_max_log2, about ``per_octave`` per doubling (distinct, sorted)."""
    k_max_log2 = check_scalar(k_max_log2, "k_max_log2", ge=0, integer=True)
    per_octave = check_k(per_octave, "per_octave")
    ks = np.unique(np.round(2.0 ** np.arange(0, k_max_log2 + 1e-9, 1.0 / per_octave)).astype(int))
    return [int(k) for k in ks]
