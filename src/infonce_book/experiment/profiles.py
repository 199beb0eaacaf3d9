"""Profiles: how big each chapter's experiments are.

* ``smoke``: CI; the whole book in a few minutes on 2 CPU cores.
* ``standard``: the default local run on a CPU.
* ``full``: one GPU (``device=auto`` picks it).

Chapters read their sizes with :func:`sizes` (``sizes("c1_rate", profile)``).
"""

from __future__ import annotations

PROFILES = ("smoke", "standard", "full")

_SIZES = {
    "c1_rate": {
        "smoke": {"mc_tuples": 2000, "mc_ks": [1, 4, 16, 64, 256, 1024], "exact_k_max_log2": 20,
                  "sweep_taus": [0.25, 0.5, 1.0], "sweep_kappas": [1.0, 4.0, 16.0], "mc_batch": 1000},
        "standard": {"mc_tuples": 20000, "mc_ks": [1, 4, 16, 64, 256, 1024, 4096], "exact_k_max_log2": 20,
                     "sweep_taus": [0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0],
                     "sweep_kappas": [0.5, 1.0, 2.0, 4.0, 8.0, 16.0], "mc_batch": 2000},
        "full": {"mc_tuples": 100000, "mc_ks": [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536],
                 "exact_k_max_log2": 20, "sweep_taus": [0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0],
                 "sweep_kappas": [0.5, 1.0, 2.0, 4.0, 8.0, 16.0], "mc_batch": 4000},
    },
    "c2_search": {
        "smoke": {"k_max_log2": 14, "mc_ks": [4, 64, 1024], "mc_queries": 4000, "retrieval_ks": [1, 4, 16, 64, 256],
                  "retrieval_queries": 4000},
        "standard": {"k_max_log2": 16, "mc_ks": [4, 64, 1024, 4096], "mc_queries": 20000,
                     "retrieval_ks": [1, 4, 16, 64, 256, 1024], "retrieval_queries": 20000},
        "full": {"k_max_log2": 18, "mc_ks": [4, 64, 1024, 16384], "mc_queries": 100000,
                 "retrieval_ks": [1, 4, 16, 64, 256, 1024, 4096], "retrieval_queries": 100000},
    },
    "c3_temperature": {
        "smoke": {"taus": [0.1, 0.2, 0.5, 1.0, 2.0, 5.0], "kl_queries": 256, "kl_sample": 1024, "learn_k": 64,
                  "learn_seeds": 3, "learn_steps": 200, "learn_batch": 128, "gap_taus": [0.05, 0.1, 0.25, 1.0],
                  "gap_n_train": 32, "gap_steps": 150, "gap_test": 5000},
        "standard": {"taus": [0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0], "kl_queries": 512, "kl_sample": 4096,
                     "learn_k": 64, "learn_seeds": 5, "learn_steps": 400, "learn_batch": 256,
                     "gap_taus": [0.05, 0.1, 0.2, 0.5, 1.0, 2.0], "gap_n_train": 32, "gap_steps": 300,
                     "gap_test": 20000},
        "full": {"taus": [0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0], "kl_queries": 2048, "kl_sample": 16384,
                 "learn_k": 256, "learn_seeds": 8, "learn_steps": 800, "learn_batch": 1024,
                 "gap_taus": [0.05, 0.1, 0.2, 0.5, 1.0, 2.0], "gap_n_train": 32, "gap_steps": 500,
                 "gap_test": 100000},
    },
    "c4_continuity": {
        "smoke": {"c4_ks": [1, 10, 100, 1000, 10000], "c4_pairs": 100, "c4_max_elements": 1_000_000,
                  "lip_ks": [1, 10, 100, 1000, 10000], "lip_tuples": 1000, "lip_max_elements": 1_000_000,
                  "check_ks": [1, 16], "check_tuples": 100, "check_pairs": 3,
                  "rad_ns": [32, 96, 256], "rad_ks": [1, 4, 32, 256], "rad_dims": [2, 4, 8], "rad_n": 128,
                  "rad_k": 16, "rad_sigma": 6, "rad_steps": 30, "rad_starts": 1},
        "standard": {"c4_ks": [1, 10, 100, 1000, 10000, 100000], "c4_pairs": 100, "c4_max_elements": 1_000_000,
                     "lip_ks": [1, 10, 100, 1000, 10000, 100000], "lip_tuples": 4000,
                     "lip_max_elements": 5_000_000, "check_ks": [1, 16, 256], "check_tuples": 200,
                     "check_pairs": 5, "rad_ns": [32, 64, 128, 256, 512, 1024], "rad_ks": [1, 4, 16, 64, 256],
                     "rad_dims": [2, 3, 4, 6, 8], "rad_n": 256, "rad_k": 16, "rad_sigma": 10, "rad_steps": 40,
                     "rad_starts": 1},
        "full": {"c4_ks": [1, 10, 100, 1000, 10000, 100000], "c4_pairs": 1000, "c4_max_elements": 20_000_000,
                 "lip_ks": [1, 10, 100, 1000, 10000, 100000], "lip_tuples": 20000,
                 "lip_max_elements": 200_000_000, "check_ks": [1, 16, 256, 4096], "check_tuples": 1000,
                 "check_pairs": 10, "rad_ns": [32, 64, 128, 256, 512, 1024, 2048],
                 "rad_ks": [1, 4, 16, 64, 256, 1024], "rad_dims": [2, 3, 4, 6, 8, 12], "rad_n": 512,
                 "rad_k": 16, "rad_sigma": 24, "rad_steps": 60, "rad_starts": 2},
    },
    "c6_generalisation": {
        "smoke": {"ns": [128, 256, 512], "ks": [4], "seeds": 3, "extra_taus": [], "gaussian_ns": [128],
                  "gaussian_ks": [4], "gaussian_seeds": 1, "steps": 200, "n_test": 5000},
        "standard": {"ns": [128, 512, 2048], "ks": [4, 16], "seeds": 6, "extra_taus": [1.0],
                     "gaussian_ns": [128, 1024], "gaussian_ks": [4, 16], "gaussian_seeds": 2, "steps": 300,
                     "n_test": 20000},
        "full": {"ns": [128, 512, 2048, 8192], "ks": [4, 16, 64], "seeds": 16, "extra_taus": [1.0, 0.25],
                 "gaussian_ns": [128, 1024, 8192], "gaussian_ks": [4, 16, 64], "gaussian_seeds": 4, "steps": 400,
                 "n_test": 100000},
    },
    "c7_digits": {
        "smoke": {"ks": [1, 16, 64], "taus": [0.5], "seeds": 2, "steps": 80, "batch_size": 64, "n_queries": 1000,
                  "k_eval": 64, "view_steps": 80},
        "standard": {"ks": [1, 4, 16, 64, 256], "taus": [0.1, 0.5], "seeds": 3, "steps": 200, "batch_size": 64,
                     "n_queries": 2000, "k_eval": 64, "view_steps": 200},
        "full": {"ks": [1, 4, 16, 64, 256], "taus": [0.05, 0.1, 0.5], "seeds": 8, "steps": 1000, "batch_size": 256,
                 "n_queries": 20000, "k_eval": 64, "view_steps": 1000},
    },
}


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {list(PROFILES)}, got profile={profile!r}")
    return profile


def sizes(chapter: str, profile: str) -> dict:
    """The experiment sizes of ``chapter`` at ``profile`` (a fresh dict)."""
    check_profile(profile)
    if chapter not in _SIZES:
        raise ValueError(f"no sizes for chapter={chapter!r}; known: {sorted(_SIZES)}")
    return dict(_SIZES[chapter][profile])
