"""Chapter 3's set-up: its stem, its sizes per profile, and the fixed choices of its experiments
(:class:`TemperatureSetup`, which the page constructs next to its model and passes to the runners)."""

from __future__ import annotations

from dataclasses import dataclass

from ...experiment.setup import ChapterContext, ChapterSetup, setup_chapter

__all__ = ["STEM", "SIZES", "TemperatureSetup", "setup"]

STEM = "c3_temperature"

# Sizes per profile. ``taus``, ``kl_queries``, ``kl_sample``: the KL sweep (temperatures, queries,
# sample per query); ``learn_*``: learning tau (negatives, seeds, steps, batch); ``gap_*``: the
# gap against tau (temperatures, tuples per training set, steps, test tuples, training sets);
# ``approx_*``: the approximation error (temperatures, Monte Carlo draws and replicates);
# ``decoupled_ks``: the decoupled minimisers; ``sharp_random_starts``: the sharp KL bound's search.
SIZES = {
    "smoke": {"taus": [0.1, 0.2, 0.5, 1.0, 2.0, 5.0], "kl_queries": 256, "kl_sample": 1024, "learn_k": 64,
              "learn_seeds": 3, "learn_steps": 200, "learn_batch": 128, "gap_taus": [0.05, 0.1, 0.25, 1.0],
              "gap_n_train": 32, "gap_steps": 150, "gap_test": 5000, "approx_taus": [2.0, 1.0, 0.5, 0.3, 0.25, 0.2],
              "approx_mc_draws": 100000, "approx_mc_reps": 4, "decoupled_ks": [64, 128, 256],
              "sharp_random_starts": 3, "gap_sets": 4},
    "standard": {"taus": [0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0], "kl_queries": 512, "kl_sample": 4096,
                 "learn_k": 64, "learn_seeds": 5, "learn_steps": 400, "learn_batch": 256,
                 "gap_taus": [0.05, 0.1, 0.2, 0.5, 1.0, 2.0], "gap_n_train": 32, "gap_steps": 300,
                 "gap_test": 20000, "approx_taus": [2.0, 1.0, 0.75, 0.5, 0.4, 0.3, 0.26, 0.25, 0.2, 0.1],
                 "approx_mc_draws": 400000, "approx_mc_reps": 5, "decoupled_ks": [256, 512, 1024],
                 "sharp_random_starts": 6, "gap_sets": 10},
    "full": {"taus": [0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0], "kl_queries": 2048, "kl_sample": 16384,
             "learn_k": 256, "learn_seeds": 8, "learn_steps": 800, "learn_batch": 1024,
             "gap_taus": [0.05, 0.1, 0.2, 0.5, 1.0, 2.0], "gap_n_train": 32, "gap_steps": 500,
             "gap_test": 100000, "approx_taus": [2.0, 1.0, 0.75, 0.5, 0.4, 0.3, 0.26, 0.25, 0.2, 0.1],
             "approx_mc_draws": 1000000, "approx_mc_reps": 8, "decoupled_ks": [1024, 2048, 4096],
             "sharp_random_starts": 12, "gap_sets": 40},
}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)


@dataclass(frozen=True)
class TemperatureSetup(ChapterSetup):
    """The fixed choices of Chapter 3's experiments (the page constructs one next to its model;
    the runners that depend on them take it, and the result cache hashes it by :attr:`params`).

    Attributes:
        tau_example: the temperature at which the approximation error is checked by Monte Carlo.
        gap_k: negatives per tuple of the embeddings trained in the gap-against-tau experiment.
        trained_tau: the KL sweep uses the embedding trained there at the temperature closest
            to this one.
        kl_dims: ambient dimensions of the KL sweep's uniform data: the vMF model's sphere
            (``S^{kl_dims[0] - 1}``, also of the antipodal clusters and the trained embedding) and
            a higher-dimensional one (``S^{kl_dims[1] - 1}``).
        sharp_betas: the inverse temperatures at which the sharp KL bound is checked by
            optimisation.
        n_anchors: anchors of the Monte Carlo of the approximation gain.
    """

    tau_example: float = 0.5
    gap_k: int = 16
    trained_tau: float = 0.25
    kl_dims: tuple = (3, 16)
    sharp_betas: tuple = (0.5, 2.0, 5.0, 20.0)
    n_anchors: int = 16

