"""Chapter 1's set-up: its stem, its sizes per profile, and the fixed choices of its experiments
(:class:`RateSetup`, which the page constructs next to its models and passes to the runners)."""

from __future__ import annotations

from dataclasses import dataclass

from ...experiment.setup import ChapterContext, ChapterSetup, setup_chapter

__all__ = ["STEM", "SIZES", "RateSetup", "setup"]

STEM = "c1_rate"

# Sizes per profile. ``mc_tuples``, ``mc_ks``, ``mc_batch``: the Monte Carlo of the bias (tuples
# per k, the ks, tuples per batch); ``exact_k_max_log2``: the exact curves run to k = 2^this;
# ``sweep_taus``, ``sweep_kappas``: the (tau, kappa) grid of c1; ``inbatch_Bs``, ``inbatch_rows``:
# the in-batch Monte Carlo (batch sizes, anchor rows per batch size).
SIZES = {
    "smoke": {"mc_tuples": 2000, "mc_ks": [1, 4, 16, 64, 256, 1024], "exact_k_max_log2": 20,
              "sweep_taus": [0.25, 0.5, 1.0], "sweep_kappas": [1.0, 4.0, 16.0], "mc_batch": 1000,
              "inbatch_Bs": [2, 8, 32], "inbatch_rows": 2**14},
    "standard": {"mc_tuples": 20000, "mc_ks": [1, 4, 16, 64, 256, 1024, 4096], "exact_k_max_log2": 20,
                 "sweep_taus": [0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0],
                 "sweep_kappas": [0.5, 1.0, 2.0, 4.0, 8.0, 16.0], "mc_batch": 2000,
                 "inbatch_Bs": [2, 4, 8, 16, 32], "inbatch_rows": 2**17},
    "full": {"mc_tuples": 100000, "mc_ks": [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536],
             "exact_k_max_log2": 20, "sweep_taus": [0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0],
             "sweep_kappas": [0.5, 1.0, 2.0, 4.0, 8.0, 16.0], "mc_batch": 4000,
             "inbatch_Bs": [2, 4, 8, 16, 32, 64, 128], "inbatch_rows": 2**20},
}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)


@dataclass(frozen=True)
class RateSetup(ChapterSetup):
    """The fixed choices of Chapter 1's experiments (the page constructs one next to its models;
    the runners take it, and the result cache hashes it by :attr:`params`).

    Attributes:
        tau: the temperature of every experiment (> 0).
        exact_ks: the numbers of negatives of the ``C1-kbias-k<k>`` records (exact
            ``k (L_k - log k - L_inf)`` against ``c1 + c2/k``).
        k_extrapolate: ``c1`` is extrapolated (``C1-c1-<variant>``) from the exact values at
            ``k_extrapolate/2, k_extrapolate, 2 k_extrapolate`` negatives.
        third_order_ks: the numbers of negatives at which the third-order coefficient is
            recorded: large enough for the neglected ``c4/k`` to be small, small enough for
            ``k^3`` times the quadrature's error (about 1e-14 to 1e-13) to stay below 1e-5 (it
            exceeds that from k of about 1000 on).
        k_min_slope: the log-log slope of the Monte Carlo bias is fitted over ``k >= k_min_slope``.
        sweep_k_ref: the reference number of negatives of the Richardson extrapolation in the
            (tau, kappa) sweep of ``c1``.
        ntxent_k: ``c1^NT`` is extrapolated from the exact NT-Xent values at ``ntxent_k/2,
            ntxent_k, 2 ntxent_k`` negatives.
        min_batches: the least number of batches per batch size in the in-batch Monte Carlo.
        exercise_tau, sign_tau: the temperatures of the third-order and of the sign exercise.
    """

    tau: float = 0.5
    exact_ks: tuple = (64, 256, 1024, 4096)
    k_extrapolate: int = 2**14
    third_order_ks: tuple = (64, 128, 256)
    k_min_slope: int = 64
    sweep_k_ref: int = 2**12
    ntxent_k: int = 1024
    min_batches: int = 500
    exercise_tau: float = 1.0
    sign_tau: float = 0.07

