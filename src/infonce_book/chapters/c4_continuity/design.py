"""The design of Chapter 4's replications of its two side claims: the pilot numbers they are sized
from, the power calculations that give their numbers of seeds, and the concentration that holds the
anchor--positive alignment fixed as the dimension grows.

The first runs of the side claims (the records ``C5-temperature-tails`` and
``C5-dimension-free-gap-flat``, whose verdicts stay those of the first run) failed for lack of
power. A referee's reruns of the same designs at the standard profile, with more seeds, are the
pilots (:data:`PILOTS`): a mean and its 95% Student-t interval over seeds. The replications are new
records, on fresh seeds, with the margins of the first runs unchanged; their numbers of seeds come
from :func:`seeds_for_power` on these pilots, declared here before their data exist.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import optimize

from ...models.vmf.special_functions import mean_resultant_length
from ...theory.stats import t_quantile

__all__ = ["PILOTS", "Pilot", "REPLICATION_SEED", "aligned_concentration", "alignment", "seeds_for_power",
           "replication_design"]

#: Added to the chapter's seed for the replications: fresh training and test sets, fresh starts.
REPLICATION_SEED = 1000


@dataclass(frozen=True)
class Pilot:
    """A pilot estimate: ``mean`` with its 95% Student-t interval ``[low, high]`` over ``seeds``
    seeds (a referee's rerun of the first design at the standard profile)."""

    what: str
    mean: float
    low: float
    high: float
    seeds: int

    @property
    def se(self) -> float:
        """The standard error implied by the interval (t quantile with ``seeds - 1`` dof)."""
        return (self.high - self.low) / (2.0 * t_quantile(0.95, self.seeds - 1))

    @property
    def sd(self) -> float:
        """The standard deviation of one seed's contribution: ``se * sqrt(seeds)``."""
        return self.se * math.sqrt(self.seeds)


#: The pilots (the issue that asked for the replications quotes them).
PILOTS = {
    "tails": Pilot("heavy-tailed gap rise minus Gaussian gap rise (nats)", 0.031, 0.023, 0.040, 32),
    "dim_gap": Pilot("gap at d = 128 minus at d = 2, fixed budget (nats)", 0.0088, 0.0030, 0.0146, 24),
    "hump": Pilot("gap at d = 32 minus at d = 2, fixed budget (nats)", 0.0149, 0.0090, 0.0207, 24),
}


def seeds_for_power(sd: float, distance: float, power: float = 0.9, alpha: float = 0.025, tests: int = 1,
                    min_seeds: int = 3, max_seeds: int = 10_000) -> int:
    """The smallest number of seeds ``S`` at which a one-sided test at level ``alpha / tests``
    (Bonferroni over ``tests`` records) on a mean over seeds, with per-seed standard deviation
    ``sd``, clears its threshold with probability ``power`` when the true value lies ``distance``
    inside it: ``(t_{1-alpha/tests, S-1} + t_{power, S-1}) sd / sqrt(S) <= distance``.

    Raises:
        ValueError: ``sd`` or ``distance`` not > 0, ``power`` or ``alpha`` not in (0, 1), ``tests`` < 1.

    Examples:
        >>> seeds_for_power(1.0, 1.0, power=0.8)  # about 7.8 with normal quantiles; t-corrected
        10
    """
    if not (sd > 0 and distance > 0):
        raise ValueError(f"sd and distance must be > 0, got sd={sd!r}, distance={distance!r}")
    if not (0 < power < 1 and 0 < alpha < 1):
        raise ValueError(f"power and alpha must be in (0, 1), got power={power!r}, alpha={alpha!r}")
    if tests < 1:
        raise ValueError(f"tests must be >= 1, got tests={tests!r}")
    a = alpha / tests
    for s in range(max(min_seeds, 2), max_seeds + 1):
        q = t_quantile(1 - 2 * a, s - 1) + t_quantile(2 * power - 1, s - 1)  # one-sided ends
        if q * sd / math.sqrt(s) <= distance:
            return s
    raise ValueError(f"more than max_seeds={max_seeds} seeds needed (sd={sd}, distance={distance})")


def aligned_concentration(dim: int, alignment: float) -> float:
    """The vMF concentration ``kappa_d`` on ``S^{dim-1}`` whose mean resultant length
    ``A_d(kappa_d) = I_{d/2}(kappa_d) / I_{d/2-1}(kappa_d) = E <x, x+>`` equals ``alignment``
    (Bessel ratios: :func:`~infonce_book.models.vmf.special_functions.mean_resultant_length`).

    Raises:
        ValueError: ``alignment`` not in (0, 1).

    Examples:
        >>> round(aligned_concentration(2, float(mean_resultant_length(2, 4.0))), 9)
        4.0
    """
    if not 0 < alignment < 1:
        raise ValueError(f"alignment must be in (0, 1), got alignment={alignment!r}")
    f = lambda kappa: float(mean_resultant_length(dim, kappa)) - alignment  # noqa: E731
    hi = 1.0
    while f(hi) < 0:
        hi *= 2.0
    return float(optimize.brentq(f, 1e-9, hi, xtol=1e-12, rtol=1e-14))


def alignment(dim: int, kappa: float) -> float:
    """The anchor--positive alignment ``A_d(kappa) = E <x, x+>`` of the vMF model on ``S^{dim-1}``."""
    return float(mean_resultant_length(int(dim), float(kappa)))


def replication_design(margin_gap: float, n_dims: int, power: float = 0.9) -> dict:
    """The seeds of the two replications and what the page says of them.

    * Tails: the test "the heavy-tailed rise exceeds the Gaussian one" (lower end of the 95%
      interval above 0), powered at the pilot's lower end (a conservative effect).
    * Dimension: one test per dimension above the smallest, "the gap exceeds the gap at the
      smallest d by less than ``margin_gap``" (upper end below the margin, Bonferroni over the
      ``n_dims - 1`` tests), powered at a true difference equal to the pilot's end-to-end gap.
    """
    tails, gap, hump = PILOTS["tails"], PILOTS["dim_gap"], PILOTS["hump"]
    tests = max(1, n_dims - 1)
    s_tails = seeds_for_power(tails.sd, tails.low, power=power)
    s_dim = seeds_for_power(gap.sd, margin_gap - gap.mean, power=power, tests=tests)
    return {"power": power, "tails_seeds": s_tails, "tails_pilot": tails.mean, "tails_pilot_low": tails.low,
            "tails_pilot_high": tails.high, "tails_pilot_seeds": tails.seeds, "tails_sd": tails.sd,
            "dim_seeds": s_dim, "dim_tests": tests, "dim_pilot": gap.mean, "dim_pilot_low": gap.low,
            "dim_pilot_high": gap.high, "dim_pilot_seeds": gap.seeds, "dim_sd": gap.sd,
            "hump_pilot": hump.mean, "hump_pilot_low": hump.low, "hump_pilot_high": hump.high,
            "hump_seeds": seeds_for_power(hump.sd, margin_gap - hump.mean, power=power, tests=tests)}
