"""Chapter 6, ``book/c6_digits.md``: its name, its sizes per profile, its set-up and the fixed
choices of the digits experiment (:class:`DigitsSetup`, constructed once by the page)."""

from __future__ import annotations

from dataclasses import dataclass

from ...datasets import digits
from ...experiment.setup import ChapterContext, ChapterSetup, setup_chapter

__all__ = ["STEM", "SIZES", "setup", "DigitsSetup"]

STEM = "c6_digits"

# Sizes per profile. ``ks``: training negatives (the equivalence test compares the two largest);
# ``seeds``: independent splits and initialisations per (k, tau); ``max_steps``: the largest
# number of steps (the stopping rule usually ends training earlier); ``eval_aug``: augmentations
# per image in the evaluation banks; ``eval_tuples``: tuples per anchor in an evaluation;
# ``rate_ks_log2``: the C1/C2 checks use k = 1, 2, 4, ..., 2^rate_ks_log2; ``rate_tuples``: tuples
# per anchor and k there; ``n_boot``: bootstrap replicates.
SIZES = {
    "smoke": {"ks": [16, 64], "taus": [0.5], "seeds": 3, "max_steps": 400, "batch_size": 32, "k_eval": 64,
              "eval_aug": 4, "eval_tuples": 4, "rate_ks_log2": 10, "rate_tuples": 4, "n_boot": 500},
    "standard": {"ks": [16, 64, 256], "taus": [0.1, 0.5], "seeds": 5, "max_steps": 1500, "batch_size": 64,
                 "k_eval": 64, "eval_aug": 8, "eval_tuples": 8, "rate_ks_log2": 12, "rate_tuples": 8,
                 "n_boot": 2000},
    "full": {"ks": [16, 64, 256], "taus": [0.1, 0.5], "seeds": 12, "max_steps": 4000, "batch_size": 128,
             "k_eval": 64, "eval_aug": 16, "eval_tuples": 16, "rate_ks_log2": 14, "rate_tuples": 16,
             "n_boot": 4000},
}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)


@dataclass(frozen=True)
class DigitsSetup(ChapterSetup):
    """The fixed choices of the digits experiment (the page constructs one and passes it on).

    Attributes:
        n_train: training images per split (the rest are held out; both pools are evaluated on
            ``min(n_train, digits.N_IMAGES - n_train)`` images, so that the gap compares pools of
            equal size; see :attr:`n_heldout` and :attr:`n_eval`).
        hidden, dim_out: the MLP ``64 -> hidden -> dim_out``, normalised onto ``S^{dim_out - 1}``.
        max_rotation (degrees), max_shift (pixels), noise (pixel sd): the augmentation ``M``.
        lr, schedule: Adam's learning rate and its schedule (``"cosine"`` or ``"constant"``).
        check_every, window, rtol: the stopping rule (:class:`~infonce_book.learning.training.PlateauStop`)
            on the training risk of fixed tuples (``monitor_aug`` augmentations per image).
        margin: the equivalence margin (the book's epsilon_eq; ``delta`` in the ledger's params),
            in nats, declared before the experiment.
        alpha: level of each one-sided test (the interval of the equivalence test is ``1 - 2 alpha``).
    """

    n_train: int = 898
    hidden: int = 128
    dim_out: int = 16
    max_rotation: float = 10.0
    max_shift: float = 1.0
    noise: float = 0.05
    lr: float = 1e-2
    schedule: str = "cosine"
    check_every: int = 100
    window: int = 3
    rtol: float = 5e-3
    monitor_aug: int = 2
    margin: float = 0.02
    alpha: float = 0.05

    @property
    def augment(self) -> dict:
        """Keyword arguments of :func:`infonce_book.datasets.digits.augment`."""
        return {"max_rotation": self.max_rotation, "max_shift": self.max_shift, "noise": self.noise}

    @property
    def n_heldout(self) -> int:
        """Held-out images per split: ``digits.N_IMAGES - n_train`` (not a field: no cache key)."""
        return digits.N_IMAGES - self.n_train

    @property
    def n_eval(self) -> int:
        """Images per evaluated pool, ``min(n_train, n_heldout)`` (the larger pool is cut to it)."""
        return min(self.n_train, self.n_heldout)
