"""Uncertainty and small statistics: the one :class:`Estimate` type, intervals and slopes.

Every estimator of the package returns an :class:`Estimate` (mean, standard error, interval at
a stated level, number of samples, how it was obtained), and the claims ledger records one. The
normal quantile lives here (:func:`normal_quantile`), and so do the fits the chapters use to
compare a measured rate with a predicted one (:func:`fit_loglog_slope`, :func:`linear_slope`,
:func:`weighted_linear_fit`), Clopper--Pearson intervals (:func:`coverage_interval`),
Richardson extrapolation (:func:`richardson_limit`), a bootstrap over groups
(:func:`bootstrap_mean`), the equivalence test that shows "X does not change" with a margin
declared in advance (:func:`equivalence_test`, two one-sided tests) and its planning figure, the
number of seeds such a test would need (:func:`seeds_needed`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import stats

from ..utils.validation import CONFIDENCE_LEVEL, check_k, check_scalar

__all__ = ["Estimate", "normal_quantile", "t_quantile", "fit_loglog_line", "fit_loglog_slope", "linear_slope",
           "weighted_linear_fit", "coverage_interval", "richardson_limit", "bootstrap_mean",
           "EquivalenceVerdict", "equivalence_test", "seeds_needed"]


def normal_quantile(level: float = 0.95) -> float:
    """The two-sided normal quantile ``z`` with ``P(|N(0,1)| <= z) = level`` (1.95996... at 0.95)."""
    return float(stats.norm.ppf(0.5 + check_scalar(level, "level", **CONFIDENCE_LEVEL) / 2.0))


def t_quantile(level: float, dof: int) -> float:
    """The two-sided Student-t quantile at ``level`` with ``dof`` degrees of freedom (``inf`` if
    ``dof < 1``: no interval can be formed)."""
    level = check_scalar(level, "level", **CONFIDENCE_LEVEL)
    return float(stats.t.ppf(0.5 + level / 2.0, dof)) if dof >= 1 else float("inf")


@dataclass(frozen=True)
class Estimate:
    """A measured value with its uncertainty.

    Attributes:
        mean: the estimate (units of the quantity).
        se: its standard error (0 for an exact value).
        n: the number of independent samples it averages (``None`` for a deterministic value).
        level: the level of the interval, in (0, 1).
        dof: degrees of freedom of a Student-t interval (``None``: normal interval).
        low, high: an interval given explicitly (Clopper--Pearson, a numerical error bound, ...);
            when ``None``, the interval is ``mean -+ q se`` with the normal (or t) quantile ``q``.
        method: how the value was obtained (``"monte carlo"``, ``"laplace"``, ``"enumeration"``, ...).
        samples: the samples themselves, when the estimator keeps them (e.g. one value per
            Rademacher sign draw); empty otherwise.

    Examples:
        >>> e = Estimate.from_samples([1.0, 2.0, 3.0, 4.0])
        >>> round(e.mean, 3), round(e.se, 4), e.n
        (2.5, 0.6455, 4)
        >>> Estimate.exact(0.25).ci
        (0.25, 0.25)
    """

    mean: float
    se: float = 0.0
    n: int | None = None
    level: float = 0.95
    dof: int | None = None
    low: float | None = None
    high: float | None = None
    method: str = ""
    samples: tuple = field(default=(), repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "mean", float(self.mean))
        object.__setattr__(self, "se", float(self.se))
        if not self.se >= 0.0:
            raise ValueError(f"se must be >= 0, got se={self.se!r}")
        check_scalar(self.level, "level", **CONFIDENCE_LEVEL)

    # The interval -------------------------------------------------------------------------
    @property
    def quantile(self) -> float:
        """The quantile that multiplies ``se`` in the interval (normal, or t with ``dof``)."""
        return normal_quantile(self.level) if self.dof is None else t_quantile(self.level, self.dof)

    @property
    def half_width(self) -> float:
        if self.low is not None and self.high is not None:
            return (self.high - self.low) / 2.0
        return self.quantile * self.se if self.se > 0 else 0.0

    @property
    def ci(self) -> tuple[float, float]:
        """The interval ``(low, high)`` at :attr:`level`."""
        if self.low is not None and self.high is not None:
            return float(self.low), float(self.high)
        h = self.half_width
        return self.mean - h, self.mean + h

    @property
    def ci_low(self) -> float:
        return self.ci[0]

    @property
    def ci_high(self) -> float:
        return self.ci[1]

    @property
    def value(self) -> float:
        """Alias of :attr:`mean` (for exact values, where "mean" reads oddly)."""
        return self.mean

    def contains(self, x: float) -> bool:
        lo, hi = self.ci
        return lo <= x <= hi

    def at_level(self, level: float) -> "Estimate":
        """The same estimate with its interval at another level (e.g. Bonferroni ``1 - 0.05/m``).
        Only for intervals formed from ``se`` (an explicit interval cannot be rescaled)."""
        if self.low is not None or self.high is not None:
            raise ValueError("at_level: this estimate has an explicit interval (low, high), which "
                             "cannot be moved to another level; form it again at that level")
        return replace(self, level=check_scalar(level, "level", **CONFIDENCE_LEVEL))

    # Constructors -------------------------------------------------------------------------
    @classmethod
    def from_samples(cls, x, level: float = 0.95, *, t: bool = False, method: str = "monte carlo",
                     keep: bool = False) -> "Estimate":
        """Mean, standard error and ``level`` interval of at least two finite samples (1-D); a
        Student-t interval with ``n - 1`` degrees of freedom when ``t`` (few samples, e.g. seeds).
        ``keep`` stores the samples in :attr:`samples`.

        Raises:
            ValueError: fewer than two samples, a NaN or infinite sample, a level outside (0, 1).
        """
        level = check_scalar(level, "level", **CONFIDENCE_LEVEL)
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 1 or x.size < 2:
            raise ValueError(f"x must be a 1-D array of at least 2 samples (a standard error needs two), "
                             f"got shape {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"x contains {int((~np.isfinite(x)).sum())} NaN or infinite samples")
        return cls(float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x))), len(x), level,
                   dof=len(x) - 1 if t else None, method=method,
                   samples=tuple(float(v) for v in x) if keep else ())

    @classmethod
    def exact(cls, value: float, error: float = 0.0, *, method: str = "exact") -> "Estimate":
        """A deterministic value with a numerical error bound: the interval is ``value -+ error``."""
        error = float(error)
        if not error >= 0.0:
            raise ValueError(f"error must be >= 0, got error={error!r}")
        return cls(float(value), 0.0, None, 0.95, low=float(value) - error, high=float(value) + error,
                   method=method)

    @classmethod
    def interval(cls, mean: float, low: float, high: float, *, level: float = 0.95, n: int | None = None,
                 method: str = "") -> "Estimate":
        """An estimate with an interval given explicitly (not of the form ``mean -+ q se``)."""
        if not float(low) <= float(high):
            raise ValueError(f"low must be <= high, got low={low!r}, high={high!r}")
        return cls(float(mean), 0.0, n, level, low=float(low), high=float(high), method=method)


def fit_loglog_line(k, value, se, level: float = 0.95) -> tuple[Estimate, float]:
    """Weighted least-squares line of ``log value`` on ``log k``: the slope as an
    :class:`Estimate` (Student-t interval with ``n - 2`` degrees of freedom) and the intercept.

    Weights ``1/var(log value)`` by the delta method (``se/value``). Values must be > 0. When the
    residuals scatter more than the stated errors allow, the slope's standard error is scaled up
    by the residual standard deviation (never down).
    """
    level = check_scalar(level, "level", **CONFIDENCE_LEVEL)
    k, value, se = (np.asarray(v, dtype=float) for v in (k, value, se))
    if k.ndim != 1 or k.shape != value.shape or k.shape != se.shape or k.size < 2:
        raise ValueError(f"k, value and se must be 1-D arrays of the same length >= 2; got k {k.shape}, "
                         f"value {value.shape}, se {se.shape}")
    for name, v in (("k", k), ("value", value), ("se", se)):
        if not np.all(np.isfinite(v)) or np.any(v <= 0):
            raise ValueError(f"fit_loglog_slope needs finite positive {name} (log scale; se weights the fit), "
                             f"got min {name}={np.min(v)!r}")
    x, y = np.log(k), np.log(value)
    w = (value / se) ** 2
    X = np.column_stack([np.ones_like(x), x])
    XtW = X.T * w
    cov_unscaled = np.linalg.inv(XtW @ X)
    beta_hat = cov_unscaled @ (XtW @ y)
    resid = y - X @ beta_hat
    dof = len(x) - 2
    # Scale by the residual variance when the fit is worse than the stated errors (never shrink).
    s2 = max(1.0, float((w * resid**2).sum() / dof)) if dof > 0 else 1.0
    se_slope = math.sqrt(cov_unscaled[1, 1] * s2)
    slope = Estimate(float(beta_hat[1]), se_slope, len(x), level, dof=dof, method="weighted least squares")
    return slope, float(beta_hat[0])


def fit_loglog_slope(k, value, se, level: float = 0.95) -> Estimate:
    """The slope of :func:`fit_loglog_line` (a rate: -1 for ``O(1/k)``, -1/2 for ``O(n^{-1/2})``)."""
    return fit_loglog_line(k, value, se, level)[0]


def linear_slope(x, y, level: float = 0.95) -> Estimate:
    """Ordinary least-squares slope of y on x, with a Student-t interval (``n - 2`` dof)."""
    res = stats.linregress(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    level = check_scalar(level, "level", **CONFIDENCE_LEVEL)
    return Estimate(float(res.slope), float(res.stderr), len(x), level, dof=len(x) - 2,
                    method="least squares")


def weighted_linear_fit(x, y, se, level: float = 0.95) -> Estimate:
    """Slope of ``y`` on ``x`` by weighted least squares (weights ``1/se^2``, the errors taken as
    known), as an :class:`Estimate` with a normal interval at ``level``."""
    x, y, se = (np.asarray(v, dtype=float) for v in (x, y, se))
    if x.ndim != 1 or x.shape != y.shape or x.shape != se.shape or x.size < 2:
        raise ValueError(f"x, y and se must be 1-D arrays of the same length >= 2; got {x.shape}, {y.shape}, "
                         f"{se.shape}")
    w = 1.0 / se**2
    X = np.column_stack([np.ones_like(x), x])
    cov = np.linalg.inv((X.T * w) @ X)
    beta_hat = cov @ ((X.T * w) @ y)
    return Estimate(float(beta_hat[1]), math.sqrt(cov[1, 1]), len(x), level, method="weighted least squares")


def coverage_interval(hits: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper--Pearson interval for a coverage fraction ``hits/n`` (scipy's binomtest)."""
    n, hits = check_k(n, "n"), check_scalar(hits, "hits", ge=0, integer=True)
    level = check_scalar(level, "level", **CONFIDENCE_LEVEL)
    if hits > n:
        raise ValueError(f"hits must be <= n, got hits={hits}, n={n}")
    ci = stats.binomtest(int(hits), int(n)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def richardson_limit(ks, values) -> tuple[float, float]:
    """``2 V(2k) - V(k)`` at the last two entries (``ks`` doubling), with the change from the
    previous pair as an error estimate. Removes a ``c/k`` term from ``V(k) = d + c/k + ...``."""
    v = np.asarray(values, dtype=float)
    hi, lo = 2 * v[-1] - v[-2], 2 * v[-2] - v[-3]
    return float(hi), float(abs(hi - lo))


def bootstrap_mean(values, groups=None, *, n_boot: int = 2000, level: float = 0.95, seed: int = 0,
                   method: str = "bootstrap") -> Estimate:
    """Mean of ``values`` with a percentile bootstrap interval that resamples whole groups.

    Args:
        values: 1-D array of n finite numbers (e.g. one Monte Carlo value per anchor).
        groups: 1-D array of n group labels (e.g. the source image of each anchor): a bootstrap
            replicate draws as many groups as there are, with replacement, and takes the mean
            over all values of the drawn groups (values of one group stay together, so that
            dependence within a group is kept). ``None``: every value is its own group.
        n_boot: number of replicates >= 100. level: interval level in (0, 1). seed: seeds NumPy.
    Returns:
        :class:`Estimate` with the plain mean, the bootstrap standard deviation as ``se``, the
        percentile interval as ``(low, high)``, ``n`` the number of groups.
    Raises:
        ValueError: fewer than two groups, shapes that disagree, NaN or infinite values.
    Source: Efron and Tibshirani (1993), *An Introduction to the Bootstrap*, ch. 13 (percentile
        interval); resampling clusters: Davison and Hinkley (1997), section 3.8.

    Examples:
        >>> e = bootstrap_mean([1.0, 2.0, 3.0, 4.0], n_boot=200)
        >>> e.mean, e.n, e.ci_low <= 2.5 <= e.ci_high
        (2.5, 4, True)
    """
    level = check_scalar(level, "level", **CONFIDENCE_LEVEL)
    n_boot = check_scalar(n_boot, "n_boot", ge=100, integer=True, why="a percentile interval needs replicates")
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"values must be a 1-D array, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"values contain {int((~np.isfinite(x)).sum())} NaN or infinite entries")
    g = np.arange(x.size) if groups is None else np.asarray(groups)
    if g.shape != x.shape:
        raise ValueError(f"groups must have the shape of values {x.shape}, got {g.shape}")
    labels, inverse = np.unique(g, return_inverse=True)
    m = labels.size
    if m < 2:
        raise ValueError(f"the bootstrap needs at least 2 groups, got {m}")
    sums = np.bincount(inverse, weights=x, minlength=m)
    counts = np.bincount(inverse, minlength=m).astype(np.float64)
    rng = np.random.default_rng(check_scalar(seed, "seed", ge=0, integer=True))
    draws = rng.integers(0, m, size=(n_boot, m))
    reps = sums[draws].sum(1) / counts[draws].sum(1)
    lo, hi = np.quantile(reps, [(1 - level) / 2, (1 + level) / 2])
    return Estimate(float(x.mean()), float(reps.std(ddof=1)), m, level, low=float(lo), high=float(hi),
                    method=method)


@dataclass(frozen=True)
class EquivalenceVerdict:
    """The outcome of :func:`equivalence_test`.

    Attributes:
        equivalent: True when both one-sided tests reject, i.e. the ``1 - 2 alpha`` interval
            lies inside ``(-margin, margin)``.
        margin: the equivalence margin (units of the estimate), declared before the data.
        alpha: the level of each one-sided test.
        low, high: the ``1 - 2 alpha`` interval of the estimate.
        p_value: the larger of the two one-sided p-values (``None`` for an estimate given by an
            explicit interval, whose verdict rests on the interval alone).
    """

    equivalent: bool
    margin: float
    alpha: float
    low: float
    high: float
    p_value: float | None

    @property
    def verdict(self) -> str:
        """``"equivalent"`` or ``"not shown equivalent"`` (absence of evidence is not evidence)."""
        return "equivalent" if self.equivalent else "not shown equivalent"


def equivalence_test(estimate: Estimate, margin: float, *, alpha: float = 0.05) -> EquivalenceVerdict:
    """Two one-sided tests (TOST) of ``|theta| < margin`` for the quantity ``estimate`` measures.

    The null hypotheses ``theta <= -margin`` and ``theta >= margin`` are each tested at level
    ``alpha``; both are rejected exactly when the ``1 - 2 alpha`` interval (90% for the default
    ``alpha = 0.05``) lies inside ``(-margin, margin)``. The margin must be declared before the
    data are seen. An interval that merely contains 0 shows nothing.

    Args:
        estimate: an :class:`Estimate` with a standard error (normal interval, or Student-t when
            ``dof`` is set), or with an explicit interval at level ``1 - 2 alpha`` (e.g. from
            :func:`bootstrap_mean` with ``level=0.9``).
        margin: > 0, in the units of the estimate. alpha: in (0, 0.5).
    Returns:
        :class:`EquivalenceVerdict`.
    Raises:
        ValueError: margin <= 0; alpha outside (0, 0.5); an explicit interval at another level;
            an estimate without uncertainty (``se`` 0 and no interval).
    Source: Schuirmann (1987), *J. Pharmacokinet. Biopharm.* 15, 657--680; Lakens (2017),
        *Soc. Psychol. Personal. Sci.* 8, 355--362.

    Examples:
        >>> e = Estimate(0.01, 0.004, 8, dof=7)
        >>> v = equivalence_test(e, 0.02)
        >>> v.equivalent, round(v.high, 4)
        (True, 0.0176)
    """
    if not isinstance(estimate, Estimate):
        raise TypeError(f"estimate must be an Estimate, got {type(estimate).__name__}")
    margin = float(margin)
    if not (math.isfinite(margin) and margin > 0.0):
        raise ValueError(f"margin must be finite and > 0, got margin={margin!r}")
    alpha = float(alpha)
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got alpha={alpha!r}")
    level = 1.0 - 2.0 * alpha
    if estimate.low is not None or estimate.high is not None:
        if not math.isclose(estimate.level, level, rel_tol=0.0, abs_tol=1e-12):
            raise ValueError(f"estimate has an explicit interval at level {estimate.level:g}; the test at "
                             f"alpha={alpha:g} needs it at level {level:g}")
        low, high, p_value = estimate.ci_low, estimate.ci_high, None
    else:
        if not estimate.se > 0.0:
            raise ValueError("estimate has no uncertainty (se = 0 and no interval): nothing to test")
        low, high = estimate.at_level(level).ci
        dist = stats.norm if estimate.dof is None else stats.t(estimate.dof)
        z_low = (estimate.mean + margin) / estimate.se   # H0: theta <= -margin
        z_high = (estimate.mean - margin) / estimate.se  # H0: theta >= margin
        p_value = float(max(dist.sf(z_low), dist.cdf(z_high)))
    return EquivalenceVerdict(equivalent=bool(-margin < low and high < margin), margin=margin, alpha=alpha,
                              low=float(low), high=float(high), p_value=p_value)


def seeds_needed(diffs, margin: float, alpha: float = 0.05, n_max: int = 10_000) -> float:
    """The number of seeds a future equivalence test would need, if it saw the mean and standard
    deviation of ``diffs`` again: the smallest ``n >= 2`` with

        ``|mean| + t_{1 - alpha, n - 1} sd / sqrt(n) < margin``,

    i.e. whose ``1 - 2 alpha`` Student-t interval (that of :func:`equivalence_test`) lies inside
    ``(-margin, margin)``. A planning figure, not a test: it treats the observed mean and
    standard deviation as the truth (no power calculation over their sampling error).

    Args:
        diffs: 1-D array of at least two paired differences (e.g. one per seed), units of ``margin``.
        margin: the equivalence margin, > 0. alpha: the level of each one-sided test, in (0, 0.5).
        n_max: the largest n tried.
    Returns:
        ``n`` as a float; ``inf`` when ``|mean| >= margin`` (no number of seeds suffices) or when
        no ``n <= n_max`` does.
    Raises:
        ValueError: fewer than two differences, a NaN or infinite one, margin <= 0, alpha outside
        (0, 0.5).
    Source: the two one-sided tests of Schuirmann (1987), *J. Pharmacokinet. Biopharm.* 15,
        657--680, solved for the sample size with the observed mean and standard deviation
        plugged in.

    Examples:
        >>> seeds_needed([0.0, 0.01, 0.02], 0.02)  # 0.01 + t_{0.95,4} 0.01/sqrt(5) = 0.0195 < 0.02
        5.0
    """
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 1 or d.size < 2 or not np.all(np.isfinite(d)):
        raise ValueError(f"diffs must be a 1-D array of at least 2 finite values (a standard deviation needs "
                         f"two), got shape {d.shape}")
    margin = check_scalar(margin, "margin", gt=0)
    alpha = check_scalar(alpha, "alpha", gt=0, lt=0.5)
    mean, sd = abs(float(d.mean())), float(d.std(ddof=1))
    if mean >= margin:
        return float("inf")
    for n in range(2, n_max + 1):
        half = Estimate(0.0, sd / math.sqrt(n), n, 1 - 2 * alpha, dof=n - 1).half_width
        if mean + half < margin:
            return float(n)
    return float("inf")
