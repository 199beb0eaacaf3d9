"""Chapter 2's set-up: its stem, its sizes per profile, and the fixed choices of its experiments
(:class:`SearchSetup`, which the page constructs next to its models and passes to the runners)."""

from __future__ import annotations

from dataclasses import dataclass

from ...experiment.setup import ChapterContext, ChapterSetup, setup_chapter

__all__ = ["STEM", "SIZES", "SearchSetup", "setup"]

STEM = "c2_search"

# Sizes per profile. ``k_max_log2``: the exact curves run to k = 2^this; ``mc_ks``, ``mc_queries``:
# the Monte Carlo of the search cross-entropy; ``retrieval_ks``, ``retrieval_queries``: the
# retrieval experiment; ``gauss_k_max_log2``, ``gauss_nodes``, ``gauss_check_nodes`` (radial,
# angular, per panel), ``gauss_mc_queries``: the Gaussian model's quadrature and Monte Carlo.
SIZES = {
    "smoke": {"k_max_log2": 14, "mc_ks": [4, 64, 1024], "mc_queries": 4000, "retrieval_ks": [1, 4, 16, 64, 256],
              "retrieval_queries": 4000, "gauss_k_max_log2": 10, "gauss_nodes": [12, 20, 3],
              "gauss_check_nodes": [16, 24, 4], "gauss_mc_queries": 50000},
    "standard": {"k_max_log2": 16, "mc_ks": [4, 64, 1024, 4096], "mc_queries": 20000,
                 "retrieval_ks": [1, 4, 16, 64, 256, 1024], "retrieval_queries": 20000, "gauss_k_max_log2": 12,
                 "gauss_nodes": [16, 24, 4], "gauss_check_nodes": [20, 28, 5], "gauss_mc_queries": 200000},
    "full": {"k_max_log2": 18, "mc_ks": [4, 64, 1024, 16384], "mc_queries": 100000,
             "retrieval_ks": [1, 4, 16, 64, 256, 1024, 4096], "retrieval_queries": 100000, "gauss_k_max_log2": 14,
             "gauss_nodes": [24, 32, 6], "gauss_check_nodes": [32, 40, 8], "gauss_mc_queries": 1000000},
}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)


@dataclass(frozen=True)
class SearchSetup(ChapterSetup):
    """The fixed choices of Chapter 2's experiments (the page constructs one next to its models;
    the runners take it, and the result cache hashes it by :attr:`params`).

    Attributes:
        tau: the temperature of every experiment (> 0).
        distortion: the retrieval experiment's embedding ``phi(x) = normalize(A x)`` has
            ``A = diag(1, 1, distortion)`` (1: the identity).
        k_ref: ``d1`` is extrapolated (``C2-d1-<model>-<variant>``) from the exact values at
            ``k_ref/2, k_ref, 2 k_ref``.
        enumeration_ks: the numbers of negatives of the checks by enumeration of every database
            (Laplace integrals against enumeration; Bayes' rule).
        gauss_mc_ks: the numbers of negatives of the Gaussian model's Monte Carlo check.
        n_positives: positives per query in that Monte Carlo (they only reduce the variance).
        k_large: the number of negatives at which the enumeration exercise quotes ``k (E H - L_k)``.
    """

    tau: float = 0.5
    distortion: float = 0.3
    k_ref: int = 2**12
    enumeration_ks: tuple = (1, 2, 3)
    gauss_mc_ks: tuple = (4, 16)
    n_positives: int = 16
    k_large: int = 10**4

