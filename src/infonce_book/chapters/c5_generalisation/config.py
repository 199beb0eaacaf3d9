"""Chapter 5's set-up: its stem, the sizes per profile, :func:`setup`, and
:class:`GeneralisationSetup`, the experiment's fixed choices (the page constructs one in its
parameter cell and passes it to :func:`~.runners.grid`; the cache hashes it)."""

from __future__ import annotations

from dataclasses import dataclass

from ...experiment.setup import ChapterContext, ChapterSetup, setup_chapter
from ...learning.pacbayes import POSTERIOR_RATIOS, PRIOR_SCALES
from ...utils.validation import check_k, check_scalar

__all__ = ["STEM", "SIZES", "GeneralisationSetup", "setup"]

STEM = "c5_generalisation"

# Training cells. Each block trains every (tau, k, n, seed) of its lists; "tau" names the page's
# temperatures ("star" = 1/kappa, "other" = the second one). "gap": the block's cells enter the
# generalisation-gap experiment (exact full-batch ERM needed); "batch": minibatch size (None: full
# batch) -- the bounds hold for every theta, so ERM need not be exact for them; the headline cells
# (n = 2048, k = 16) get a block of their own with more seeds; "variants": the (n, k)
# whose cells also compute the certificates with other priors. "steps", "test_elements", "n_test",
# "pb_pilot_elements", "pb_final_elements": see GeneralisationSetup. "gap_sweep": the sizes of the
# gap-against-k experiment (gap_k_sweep). "check_queries": queries of the Monte Carlo check of the
# exact search correction (search_correction_check). "direct_pilot", "direct_final": the Monte
# Carlo pairs of the direct certificates of E H (GeneralisationSetup.direct_*_draws).
# "theorem1_ns", "theorem1_batch": the training-set sizes and the minibatch of the sharp bound
# against n at the headline cell (theorem1_against_n).
SIZES = {
    "smoke": {"blocks": [
        {"model": "vmf", "taus": ["star"], "ks": [16], "ns": [256, 512, 2048], "seeds": 2, "gap": True,
         "variants": [(2048, 16)]},
        {"model": "gaussian", "taus": ["other"], "ks": [4], "ns": [256], "seeds": 1, "gap": False}],
        "steps": 200, "test_elements": 360_000, "n_test": 5000, "pb_pilot_elements": 18_432,
        "pb_final_elements": 900_000, "check_queries": 50_000,
        "direct_pilot": 10_000, "direct_final": 100_000,
        "theorem1_ns": [2048, 8192], "theorem1_batch": 2048, "gap_sweep": {"n": 256, "ks": [4, 16, 64], "seeds": 3, "n_test": 1000}},
    "standard": {"blocks": [
        {"model": "vmf", "taus": ["star"], "ks": [4, 16], "ns": [256, 512, 1024, 2048, 4096], "seeds": 3,
         "gap": True, "variants": [(2048, 16)]},
        {"model": "vmf", "taus": ["other"], "ks": [4, 16], "ns": [256, 1024, 2048], "seeds": 2, "gap": True,
         "variants": [(2048, 16)]},
        {"model": "vmf", "taus": ["star"], "ks": [64, 256], "ns": [2048], "seeds": 2, "gap": False, "batch": 256},
        {"model": "vmf", "taus": ["star", "other"], "ks": [16], "ns": [2048], "seeds": 6, "gap": True,
         "variants": [(2048, 16)]},
        {"model": "gaussian", "taus": ["other"], "ks": [4, 16], "ns": [256, 1024], "seeds": 2, "gap": False}],
        "steps": 300, "test_elements": 360_000, "n_test": 20000, "pb_pilot_elements": 36_864,
        "pb_final_elements": 1_800_000, "check_queries": 200_000,
        "direct_pilot": 20_000, "direct_final": 400_000,
        "theorem1_ns": [2048, 8192, 32768, 65536, 98304, 131072], "theorem1_batch": 2048,
        "gap_sweep": {"n": 512, "ks": [4, 16, 64, 256], "seeds": 12, "n_test": 4000}},
    "full": {"blocks": [
        {"model": "vmf", "taus": ["star", "other"], "ks": [4, 16], "ns": [256, 512, 1024, 2048, 4096, 8192, 16384],
         "seeds": 5, "gap": True, "variants": [(2048, 16)]},
        {"model": "vmf", "taus": ["star", "other"], "ks": [64, 256], "ns": [2048, 16384], "seeds": 3,
         "gap": False, "batch": 1024},
        {"model": "gaussian", "taus": ["other"], "ks": [4, 16, 64], "ns": [256, 1024, 8192], "seeds": 4,
         "gap": False}],
        "steps": 400, "test_elements": 4_000_000, "n_test": 100000, "pb_pilot_elements": 147_456,
        "pb_final_elements": 7_200_000, "check_queries": 1_000_000,
        "direct_pilot": 50_000, "direct_final": 1_600_000,
        "theorem1_ns": [2048, 8192, 32768, 65536, 131072, 262144], "theorem1_batch": 4096,
        "gap_sweep": {"n": 2048, "ks": [4, 16, 64, 256], "seeds": 24, "n_test": 20000}},
}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """Chapter 5's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)


@dataclass(frozen=True)
class GeneralisationSetup(ChapterSetup):
    """The fixed choices of Chapter 5's training cells (the page constructs one; every cell of
    :func:`~.runners.train_cell` gets it, and the cache key holds its :attr:`params`).

    Attributes:
        delta: confidence ``1 - delta`` of the generalisation theorem (``c5-thm-main``).
        delta_pb, delta_mc: the confidence of the PAC-Bayes step and of its Monte Carlo step
            (``delta`` and ``delta'`` of ``c5-thm-pac-bayes``; the certificate holds with
            probability ``1 - delta_pb - delta_mc``).
        steps: Adam steps of ERM in each cell.
        n_test: the most fresh test tuples (and databases) per cell; ``test_elements``: a cap on
            test tuples times ``k + 2`` (so the test set shrinks with k and its cost stays flat).
        pb_pilot_elements, pb_final_elements: Monte Carlo pairs of the pilot (per pair of scales)
            and of the certificate, times ``k + 2``.
        prior_scales, posterior_ratios: the PAC-Bayes design grids, fixed before any data
            (:data:`~infonce_book.learning.pacbayes.PRIOR_SCALES`, ``POSTERIOR_RATIOS``).
        away_radius, away_seed: the prior centre of the certificates "with a prior that does not
            know the answer": at Frobenius distance ``away_radius`` from the identity, in a
            direction drawn from ``away_seed`` (both fixed before any data).
        direct_pilot_draws, direct_final_draws: Monte Carlo pairs of the pilot (per posterior
            scale) and of the direct certificates of ``E H`` (:mod:`.direct`); the final count is
            set so that the Monte Carlo step costs under 0.003 nat at the standard profile.
        gap_margin, gap_alpha: the equivalence margin of "the gap does not grow with k" (on the
            slope of ``n * gap`` per doubling of k; the default 5/12 allows a change of half of
            ``p_eff = 5`` over the six doublings from k = 4 to 256), declared before the run, and
            the level of each one-sided test.
    Raises:
        ValueError: a level outside (0, 1), a size below 1 or a non-positive scale.
    """

    delta: float
    delta_pb: float
    delta_mc: float
    steps: int
    n_test: int
    test_elements: int
    pb_pilot_elements: int
    pb_final_elements: int
    prior_scales: tuple = PRIOR_SCALES
    posterior_ratios: tuple = POSTERIOR_RATIOS
    away_radius: float = 0.25
    away_seed: int = 2026
    gap_margin: float = 5.0 / 12.0
    gap_alpha: float = 0.05
    direct_pilot_draws: int = 20_000
    direct_final_draws: int = 400_000

    def __post_init__(self):
        for name in ("delta", "delta_pb", "delta_mc"):
            check_scalar(getattr(self, name), name, gt=0, lt=1, why="a confidence level")
        check_scalar(self.away_radius, "away_radius", gt=0, lt=1)
        check_scalar(self.gap_margin, "gap_margin", gt=0)
        check_scalar(self.gap_alpha, "gap_alpha", gt=0, lt=0.5)
        for name in ("steps", "n_test", "test_elements", "pb_pilot_elements", "pb_final_elements",
                     "direct_pilot_draws", "direct_final_draws"):
            check_k(getattr(self, name), name)
        for name in ("prior_scales", "posterior_ratios"):
            values = tuple(getattr(self, name))
            if not values:
                raise ValueError(f"{name} must hold at least one scale")
            for v in values:
                check_scalar(v, name, gt=0)
            object.__setattr__(self, name, values)

    def n_test_for(self, k: int) -> int:
        """Test tuples of a cell with k negatives: ``min(n_test, test_elements // (k + 2))``."""
        return min(self.n_test, self.test_elements // (k + 2))

    def pilot_draws(self, k: int) -> int:
        """Monte Carlo pairs of the pilot per pair of scales: ``max(64, pb_pilot_elements // (k + 2))``."""
        return max(64, self.pb_pilot_elements // (k + 2))

    def final_draws(self, k: int) -> int:
        """Monte Carlo pairs of the certificate: ``pb_final_elements // (k + 2)``."""
        return self.pb_final_elements // (k + 2)
