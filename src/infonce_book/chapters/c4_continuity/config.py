"""Chapter 4's set-up: its stem, its sizes per profile, and the fixed choices of its experiments
(:class:`ContinuitySetup`, which the page constructs next to its models and passes to the runners)."""

from __future__ import annotations

from dataclasses import dataclass

from ...experiment.setup import ChapterContext, ChapterSetup, setup_chapter

__all__ = ["STEM", "SIZES", "ContinuitySetup", "SideClaimsSetup", "setup"]

STEM = "c4_continuity"

# Sizes per profile. ``c4_*``: the perturbation pairs (ks, pairs, similarities per batch);
# ``lip_*``: the Lipschitz constants on sampled tuples; ``check_*``: the Lipschitz property on
# random parameter pairs (ks, tuples, pairs); ``rad_*``: the Rademacher sweeps (ns, ks, dims, the
# fixed n and k, sign vectors, optimiser steps and starts); ``seg_*``: the pairs of the ball
# product (ks, betas, pairs); ``ex_*``: the radius exercise (radii, tuples, sign vectors, steps);
# ``temp_*``: the temperature sweep (taus, k, training tuples, test tuples, seeds, Adam steps, tuples
# for the constants); ``dim_*``: the dimension sweep (dims, tuples, k, sign vectors, optimiser steps,
# seeds, training steps, test tuples).
SIZES = {
    "smoke": {"c4_ks": [1, 10, 100, 1000, 10000], "c4_pairs": 100, "c4_max_elements": 1_000_000,
              "lip_ks": [1, 10, 100, 1000, 10000], "lip_tuples": 1000, "lip_max_elements": 1_000_000,
              "check_ks": [1, 16], "check_tuples": 100, "check_pairs": 3,
              "rad_ns": [32, 96, 256], "rad_ks": [1, 4, 32, 256], "rad_dims": [2, 4, 8], "rad_n": 128,
              "rad_k": 16, "rad_sigma": 6, "rad_steps": 30, "rad_starts": 1,
              "seg_ks": [1, 4, 16, 64], "seg_betas": [0.25, 1.0, 2.0, 4.0], "seg_pairs": 2000,
              "ex_radii": [0.05, 0.1, 0.2], "ex_n": 128, "ex_sigma": 6, "ex_steps": 30,
              "temp_taus": [1.0, 0.5, 0.2, 0.1, 0.05], "temp_k": 16, "temp_n": 128, "temp_test": 2000,
              "temp_seeds": 10, "temp_steps": 80, "temp_lip": 1000,
              "dim_dims": [2, 8, 32, 128], "dim_n": 96, "dim_k": 8, "dim_sigma": 6, "dim_rad_steps": 20,
              "dim_seeds": 6, "dim_steps": 40, "dim_test": 1000},
    "standard": {"c4_ks": [1, 10, 100, 1000, 10000, 100000], "c4_pairs": 100, "c4_max_elements": 1_000_000,
                 "lip_ks": [1, 10, 100, 1000, 10000, 100000], "lip_tuples": 4000,
                 "lip_max_elements": 5_000_000, "check_ks": [1, 16, 256], "check_tuples": 200,
                 "check_pairs": 5, "rad_ns": [32, 64, 128, 256, 512, 1024], "rad_ks": [1, 4, 16, 64, 256],
                 "rad_dims": [2, 3, 4, 6, 8], "rad_n": 256, "rad_k": 16, "rad_sigma": 10, "rad_steps": 40,
                 "rad_starts": 1, "seg_ks": [1, 2, 4, 16, 64, 256], "seg_betas": [0.1, 0.25, 0.5, 1.0, 2.0, 4.0],
                 "seg_pairs": 4000, "ex_radii": [0.05, 0.1, 0.2], "ex_n": 128, "ex_sigma": 8, "ex_steps": 40,
                 "temp_taus": [1.0, 0.5, 0.2, 0.1, 0.05], "temp_k": 16, "temp_n": 256, "temp_test": 8000,
                 "temp_seeds": 8, "temp_steps": 120, "temp_lip": 4000,
                 "dim_dims": [2, 8, 32, 128], "dim_n": 128, "dim_k": 16, "dim_sigma": 6, "dim_rad_steps": 30,
                 "dim_seeds": 6, "dim_steps": 60, "dim_test": 2000},
    "full": {"c4_ks": [1, 10, 100, 1000, 10000, 100000], "c4_pairs": 1000, "c4_max_elements": 20_000_000,
             "lip_ks": [1, 10, 100, 1000, 10000, 100000], "lip_tuples": 20000,
             "lip_max_elements": 200_000_000, "check_ks": [1, 16, 256, 4096], "check_tuples": 1000,
             "check_pairs": 10, "rad_ns": [32, 64, 128, 256, 512, 1024, 2048],
             "rad_ks": [1, 4, 16, 64, 256, 1024], "rad_dims": [2, 3, 4, 6, 8, 12], "rad_n": 512,
             "rad_k": 16, "rad_sigma": 24, "rad_steps": 60, "rad_starts": 2,
             "seg_ks": [1, 2, 4, 16, 64, 256, 4096], "seg_betas": [0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0],
             "seg_pairs": 20000, "ex_radii": [0.05, 0.1, 0.2, 0.4], "ex_n": 256, "ex_sigma": 24, "ex_steps": 60,
             "temp_taus": [2.0, 1.0, 0.5, 0.2, 0.1, 0.05], "temp_k": 16, "temp_n": 512, "temp_test": 20000,
             "temp_seeds": 12, "temp_steps": 300, "temp_lip": 20000,
             "dim_dims": [2, 8, 32, 128, 256], "dim_n": 256, "dim_k": 16, "dim_sigma": 16, "dim_rad_steps": 60,
             "dim_seeds": 8, "dim_steps": 100, "dim_test": 20000},
}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)


@dataclass(frozen=True)
class ContinuitySetup(ChapterSetup):
    """The fixed choices of Chapter 4's experiments (the page constructs one next to its models;
    the runners take it, and the result cache hashes it by :attr:`params`).

    Embedding classes: ``NormalisedLinear(dim, sphere_radius)`` on sphere data (the vMF model),
    ``BallLinear(dim -> ball_dim_out, scale ball_scale, radius ball_radius)`` and
    ``BallMLP(dim -> mlp_hidden -> ball_dim_out, radius mlp_radius)`` on Euclidean data.

    Attributes:
        tau: the temperature of the experiments (``beta = 1/tau``).
        eps, eps_theta: the perturbation sizes, of the similarities and of the parameters.
        table_n, table_taus, table_ks: the closed-form comparison of the complexity bounds
            (tuples, temperatures, numbers of negatives).
        sphere_radius: the radius of ``NormalisedLinear``'s parameter ball.
        ball_dim_out, ball_scale, ball_radius: ``BallLinear``'s output dimension, initial scale
            and radius (``BallMLP`` has the same output dimension).
        mlp_hidden, mlp_radius: ``BallMLP``'s hidden width and radius.
        segment_dim: the dimension of the ball product of the embedding-continuity check.
        exercise_k: the number of negatives of the exercises (the radius exercise and the numbers).
        tau_scalings: the temperature of the block-scalings exercise.
        lipschitz_level: the level of the intervals of the ``C5-lipschitz-*`` records (99%: the
            chapter records one value per (data, k, kind)).
    """

    tau: float = 1.0
    eps: float = 1e-3
    eps_theta: float = 0.01
    table_n: int = 2048
    table_taus: tuple = (0.5, 1.0)
    table_ks: tuple = (4, 16, 256)
    sphere_radius: float = 0.5
    ball_dim_out: int = 4
    ball_scale: float = 0.25
    ball_radius: float = 0.05
    mlp_hidden: int = 16
    mlp_radius: float = 0.5
    segment_dim: int = 3
    exercise_k: int = 16
    tau_scalings: float = 0.5
    lipschitz_level: float = 0.99



@dataclass(frozen=True)
class SideClaimsSetup(ChapterSetup):
    """The fixed choices of the two side-claim experiments of Chapter 4 (temperature and norms;
    dimension), and the margins of their tests, declared before the runs.

    Attributes:
        train_lr: Adam's learning rate of the trained embeddings (projected onto the class).
        frobenius_radius: the norm budget ``b`` of ``FrobeniusLinear`` (``|W|_F <= b``).
        normalised_radius: the radius ``r`` of ``NormalisedLinear`` (``|A - I|_F <= r``).
        margin_slope: the largest log-log slope against d that still counts as "does not grow"
            (the complexity may grow by at most ``64^margin_slope`` from d = 2 to 128).
        margin_gap: the largest increase of the gap (nats) from the smallest to the largest d
            that still counts as "does not grow".
    """

    train_lr: float = 0.01
    frobenius_radius: float = 1.0
    normalised_radius: float = 0.5
    margin_slope: float = 0.1
    margin_gap: float = 0.02
