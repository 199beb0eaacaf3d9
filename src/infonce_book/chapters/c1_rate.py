"""Chapter 1, ``book/c1_rate.md``: the limit and its O(1/k) rate (claim C1).

Runners take the page's model and sizes and return tidy tables (cached by configuration);
``ledger_*`` turn tables into claims-ledger records (each documents its verdict rule); ``fig_*``
draw the page's figures.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ..experiment.cache import cached
from ..experiment.setup import ChapterContext, setup_chapter
from ..models import VonMisesFisher
from ..theory.bounds import bias_bounds, lipschitz_log_bound, uniform_bias_constant
from ..theory.estimators import monte_carlo_bias
from ..theory.exact import exact_bias, exact_bias_with_error
from ..theory.stats import Estimate, coverage_interval, fit_loglog_slope

STEM = "c1_rate"

SIZES = {
    "smoke": {"mc_tuples": 2000, "mc_ks": [1, 4, 16, 64, 256, 1024], "exact_k_max_log2": 20,
              "sweep_taus": [0.25, 0.5, 1.0], "sweep_kappas": [1.0, 4.0, 16.0], "mc_batch": 1000},
    "standard": {"mc_tuples": 20000, "mc_ks": [1, 4, 16, 64, 256, 1024, 4096], "exact_k_max_log2": 20,
                 "sweep_taus": [0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0],
                 "sweep_kappas": [0.5, 1.0, 2.0, 4.0, 8.0, 16.0], "mc_batch": 2000},
    "full": {"mc_tuples": 100000, "mc_ks": [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536],
             "exact_k_max_log2": 20, "sweep_taus": [0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0],
             "sweep_kappas": [0.5, 1.0, 2.0, 4.0, 8.0, 16.0], "mc_batch": 4000},
}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)


@cached
def exact_curve(model, tau: float, ks: list, variants=("standard", "decoupled")):
    """Exact bias ``L_k - log k - L_inf`` of ``model`` (vMF or finite) against k, with the
    first/second-order predictions.

    Columns: ``variant, k, bias, first_order, second_order, k_bias, c1, c2, c3``.
    """
    rows = []
    for variant in variants:
        c1, c2, c3 = model.bias_coefficients(tau, variant, order=3)
        b = exact_bias(model, ks, tau, variant)
        for k, v in zip(ks, b):
            rows.append({"variant": variant, "k": int(k), "bias": float(v), "first_order": c1 / k,
                         "second_order": c1 / k + c2 / k**2, "k_bias": k * float(v),
                         "c1": c1, "c2": c2, "c3": c3})
    return pd.DataFrame(rows)


@cached
def monte_carlo(model, tau: float, ks: list, n_tuples: int, device: str, seed: int, batch_size: int = 1024,
                variant: str = "standard"):
    """Monte Carlo estimates (plain and control-variate) of the bias at each k, with 95% CIs,
    next to the exact value. Seeds are ``seed + index of k``.

    Columns: ``k, exact, plain_mean, plain_low, plain_high, cv_mean, cv_se, cv_low, cv_high,
    covered`` (exact value inside the cv interval), ``n_tuples, device``.
    """
    exact = exact_bias(model, ks, tau, variant)
    rows = []
    for i, k in enumerate(ks):
        r = monte_carlo_bias(model, k, tau, n_tuples, variant=variant, device=device, seed=seed + i,
                             batch_size=batch_size, show_progress=True)
        pl, cv = r["plain"], r["cv"]
        rows.append({"k": int(k), "exact": float(exact[i]), "plain_mean": pl.mean, "plain_low": pl.ci[0],
                     "plain_high": pl.ci[1], "cv_mean": cv.mean, "cv_se": cv.se, "cv_low": cv.ci[0],
                     "cv_high": cv.ci[1], "covered": bool(cv.ci[0] <= exact[i] <= cv.ci[1]),
                     "n_tuples": n_tuples, "device": r["device"]})
    return pd.DataFrame(rows)


@cached
def bounds_table(model, tau: float, ks: list):
    """|bias| and the bounds of the C1 chapter against k, as a long table (``k, curve, value``).

    Curves: the exact |bias|; our bound with the model's moments and ``a = e^-beta/mu``; the
    uniform ``C(tau)/k``; the Lipschitz-of-log bound with the model's moments and uniformly.
    """
    beta = 1.0 / tau
    mom = model.weight_moments(tau)
    a = math.exp(-beta) / mom["mu"]
    exact = np.abs(exact_bias(model, ks, tau, "standard"))
    lower, upper = bias_bounds(ks, u1=mom["u1"], u2=mom["u2"], m2=mom["m2"], a=a)
    ours_model = np.maximum(np.abs(lower), np.abs(upper))
    kk = np.asarray(ks, dtype=float)
    curves = {
        "exact |bias|": exact,
        "ours, model moments": ours_model,
        r"ours, uniform $C(\tau)/k$": uniform_bias_constant(tau) / kk,
        "Lipschitz-of-log, model moments": lipschitz_log_bound(ks, tau=tau, sigma=math.sqrt(mom["sigma2"]),
                                                               mean_w_pos=mom["u1"] * mom["mu"]),
        "Lipschitz-of-log, uniform": lipschitz_log_bound(ks, tau=tau, sigma=math.sinh(beta),
                                                         mean_w_pos=math.exp(beta)),
    }
    return pd.DataFrame([{"k": int(k), "curve": name, "value": float(v)}
                         for name, vals in curves.items() for k, v in zip(ks, vals)])


def richardson_c1(model, tau, k: int, variant: str = "standard") -> tuple[float, float]:
    """``c1`` extrapolated from exact values, with a numerical error estimate.

    With ``K(k) = k (L_k - log k - L_inf) = c1 + c2/k + O(k^-2)``, ``2K(2k) - K(k) = c1 + O(k^-2)``.
    Returns ``(estimate at (k, 2k), error)``: the error is the change from the estimate at
    ``(k/2, k)`` (truncation) plus the propagated numerical error of the three exact values
    (:func:`~infonce_book.theory.exact.exact_bias_with_error`), times a safety factor 3.
    """
    ks = np.array([k // 2, k, 2 * k])
    b, err = exact_bias_with_error(model, ks, tau, variant)
    K, dK = ks * b, ks * err
    est_hi, est_lo = 2 * K[2] - K[1], 2 * K[1] - K[0]
    numerical = 2 * dK[2] + dK[1]
    return float(est_hi), float(abs(est_hi - est_lo) + 3.0 * numerical)


@cached
def c1_sweep(dim: int, taus: list, kappas: list, k_ref: int = 2**12):
    """``c1`` over a (tau, kappa) grid: the closed form, and the exact ``k (L_k - log k - L_inf)``
    extrapolated by :func:`richardson_c1` at ``k_ref``.

    Columns: ``tau, kappa, c1, c1_decoupled, c1_richardson, c1_richardson_err``.
    """
    rows = []
    for kappa in kappas:
        model = VonMisesFisher(dim, kappa)
        for tau in taus:
            c1 = model.bias_coefficients(tau, "standard", order=1)[0]
            c1d = model.bias_coefficients(tau, "decoupled", order=1)[0]
            rich, err = richardson_c1(model, tau, k_ref)
            rows.append({"tau": tau, "kappa": kappa, "c1": c1, "c1_decoupled": c1d,
                         "c1_richardson": rich, "c1_richardson_err": err})
    return pd.DataFrame(rows)


def ledger_exact(ledger, model, tau: float, ks, k_extrapolate: int = 2**14) -> pd.DataFrame:
    """Ledger records for the exact (quadrature) checks of Theorem ``c1-thm-rate``.

    * ``C1-c1-<variant>``: predicted ``c1`` (closed form), measured by :func:`richardson_c1`,
      interval = measured +- its numerical error.
    * ``C1-kbias-k<k>``: predicted ``c1 + c2/k``, measured ``k (L_k - log k - L_inf)``, interval =
      measured +- (``2 |c3| / k^2`` (the neglected next term, declared in advance) + numerical error).
    """
    rows = []
    for variant in ("standard", "decoupled"):
        c1 = model.bias_coefficients(tau, variant, order=1)[0]
        rich, err = richardson_c1(model, tau, k_extrapolate, variant)
        rec = ledger.record(claim="C1", id=f"C1-c1-{variant}", quantity="c1", predicted=c1, measured=rich,
                            ci_low=rich - err, ci_high=rich + err,
                            params={**model.params, "tau": tau, "variant": variant, "k": 2 * k_extrapolate})
        rows.append(rec)
    c1, c2, c3 = model.bias_coefficients(tau, "standard", order=3)
    b, err = exact_bias_with_error(model, ks, tau, "standard")
    for k, v, e in zip(ks, b, err):
        half = 2.0 * abs(c3) / k**2 + 3.0 * k * e
        rows.append(ledger.record(claim="C1", id=f"C1-kbias-k{k}", quantity="k_bias", predicted=c1 + c2 / k,
                                  measured=k * v, ci_low=k * v - half, ci_high=k * v + half,
                                  params={**model.params, "tau": tau, "variant": "standard", "k": int(k)}))
    return pd.DataFrame([r.__dict__ for r in rows])[["id", "quantity", "predicted", "measured", "ci_low",
                                                      "ci_high", "passed"]]


def ledger_monte_carlo(ledger, model, tau: float, mc: pd.DataFrame, k_min_slope: int = 64) -> dict:
    """Ledger records for the Monte Carlo checks (table from :func:`monte_carlo`).

    * ``C1-mc-k<k>``: predicted = exact bias, measured = control-variate estimate, with a
      Bonferroni-adjusted interval (level ``1 - 0.05/n_k``, so all n_k records hold together with
      probability 0.95).
    * ``C1-mc-coverage``: predicted 0.95, measured = fraction of k whose 95% interval covers the
      exact value, interval = Clopper--Pearson 95%.
    * ``C1-slope``: measured = weighted least-squares slope of log(estimate) on log k for
      k >= ``k_min_slope``, with its 95% t-interval; predicted = the same fit applied to the
      second-order theory ``c1/k + c2/k^2`` at the same k (the asymptotic slope is -1, but at
      k = 64 the local slope is still about -0.99).
    """
    n_k = len(mc)
    dev = str(mc["device"].iloc[0])
    for _, row in mc.iterrows():
        est = Estimate(row["cv_mean"], row["cv_se"], int(row["n_tuples"]), 1.0 - 0.05 / n_k, method="control variates")
        ledger.record(claim="C1", id=f"C1-mc-k{int(row['k'])}", quantity="bias_mc", predicted=row["exact"],
                      measured=est,
                      params={**model.params, "tau": tau, "variant": "standard", "k": int(row["k"]),
                              "n_tuples": int(row["n_tuples"]), "estimator": "control variates",
                              "interval": f"Bonferroni, level 1-0.05/{n_k}", "mc_device": dev})
    hits = int(mc["covered"].sum())
    lo, hi = coverage_interval(hits, n_k)
    ledger.record(claim="C1", id="C1-mc-coverage", quantity="coverage_95", predicted=0.95,
                  measured=Estimate.interval(hits / n_k, lo, hi, n=n_k, method="Clopper-Pearson"), params={**model.params, "tau": tau, "ks": [int(k) for k in mc["k"]]})
    sel = mc[mc["k"] >= k_min_slope]
    fit = fit_loglog_slope(sel["k"], sel["cv_mean"], sel["cv_se"])
    # The prediction: the same weighted fit applied to the second-order theory c1/k + c2/k^2 at
    # the same k (slightly above -1 at finite k, since c2 < 0 here; -1 in the limit).
    c1, c2 = model.bias_coefficients(tau, "standard", order=2)
    kk = sel["k"].to_numpy(dtype=float)
    predicted = fit_loglog_slope(kk, c1 / kk + c2 / kk**2, sel["cv_se"]).mean
    ledger.record(claim="C1", id="C1-slope", quantity="loglog_slope", predicted=predicted, measured=fit.mean,
                  ci_low=fit.ci_low, ci_high=fit.ci_high,
                  params={**model.params, "tau": tau, "ks": [int(k) for k in sel["k"]],
                          "prediction": "weighted fit to c1/k + c2/k^2"})
    return {"coverage": hits / n_k, "n_k": n_k, "slope": fit.mean, "slope_low": fit.ci_low,
            "slope_high": fit.ci_high, "slope_predicted": predicted, "k_min_slope": int(k_min_slope),
            "n_tuples": int(mc["n_tuples"].iloc[0])}


def ledger_bounds(ledger, model, tau: float, bounds: pd.DataFrame) -> dict:
    """Ledger records that the bounds of Theorem ``c1-thm-rate`` hold (table from :func:`bounds_table`).

    One-sided claims ("exact <= bound"): predicted 1 is the largest allowed value of
    ``max_k |exact| / bound``; ``passed`` is ``measured <= 1``, and the interval is the
    measured ratio +- 1e-6 relative (the quadrature's accuracy is far better).
    """
    wide = bounds.pivot(index="k", columns="curve", values="value")
    exact = wide["exact |bias|"]
    ours, uniform = wide["ours, model moments"], wide[r"ours, uniform $C(\tau)/k$"]
    lip = wide["Lipschitz-of-log, model moments"]
    for name, bound in (("model", ours), ("uniform", uniform)):
        ratio = float((exact / bound).max())
        ledger.record(claim="C1", id=f"C1-bound-{name}-holds", quantity="max_exact_over_bound", predicted=1.0,
                      measured=ratio, ci_low=ratio * (1 - 1e-6), ci_high=ratio * (1 + 1e-6),
                      passed=ratio * (1 + 1e-6) <= 1.0,
                      params={**model.params, "tau": tau, "bound": name, "k_max": int(wide.index.max()),
                              "rule": "one-sided: passed when the ratio is <= 1"})
    kmax = wide.index.max()
    return {"ours_max_ratio": float((ours / exact).max()),
            "ours_ratio_at_kmax": float(ours[kmax] / exact[kmax]),
            "lip_ratio_at_kmax": float(lip[kmax] / exact[kmax]),
            "lip_over_ours_k1": float(lip[1] / ours[1])}


def ledger_sweep(ledger, sweep: pd.DataFrame, dim: int) -> None:
    """``C1-c1-tau<tau>-kappa<kappa>``: closed-form ``c1`` against its Richardson extrapolation
    from the exact quadrature, interval = +- the extrapolation's numerical error."""
    for _, row in sweep.iterrows():
        ledger.record(claim="C1", id=f"C1-c1-tau{row['tau']:g}-kappa{row['kappa']:g}", quantity="c1",
                      predicted=row["c1"], measured=row["c1_richardson"],
                      ci_low=row["c1_richardson"] - row["c1_richardson_err"],
                      ci_high=row["c1_richardson"] + row["c1_richardson_err"],
                      params={**VonMisesFisher(dim, row["kappa"]).params, "tau": row["tau"],
                              "variant": "standard"})


def fig_bias_vs_k(exact, mc=None, *, title: str = ""):
    """Log-log plot of the exact bias against k with its first- and second-order predictions.

    Args:
        exact: table from :func:`exact_curve` (one variant).
        mc: optional table from :func:`monte_carlo` (intervals).
    """
    fig, ax = plt.subplots()
    ax.loglog(exact["k"], exact["bias"], "k-", lw=2, label="exact (quadrature)")
    ax.loglog(exact["k"], exact["first_order"], "--", label=r"$c_1/k$")
    ax.loglog(exact["k"], exact["second_order"], ":", lw=2, label=r"$c_1/k + c_2/k^2$")
    if mc is not None:
        yerr = np.vstack([mc["cv_mean"] - mc["cv_low"], mc["cv_high"] - mc["cv_mean"]])
        ax.errorbar(mc["k"], mc["cv_mean"], yerr=yerr, fmt="o", ms=4, capsize=3,
                    label="Monte Carlo, 95% CI")
    ax.set_xlabel("number of negatives $k$")
    ax.set_ylabel(r"$L_k - \log k - L_\infty$ (nats)")
    if title:
        ax.set_title(title)
    ax.legend()
    return fig


def fig_bounds_vs_k(table, *, title: str = ""):
    """Log-log plot of |bias| and the bounds (long table: k, bound, value)."""
    fig, ax = plt.subplots()
    sns.lineplot(data=table, x="k", y="value", hue="curve", style="curve", ax=ax)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of negatives $k$")
    ax.set_ylabel("nats")
    if title:
        ax.set_title(title)
    ax.legend(title=None, fontsize="small")
    return fig


def fig_k_bias_by_variant(table):
    """``k (L_k - log k - L_inf)`` against k for both variants, with the limits c1."""
    fig, ax = plt.subplots()
    sns.lineplot(data=table, x="k", y="k_bias", hue="variant", ax=ax)
    for _, row in table.drop_duplicates("variant").iterrows():
        ax.axhline(row["c1"], ls="--", lw=1, color="grey")
    ax.set_xscale("log")
    ax.set_xlabel("number of negatives $k$")
    ax.set_ylabel(r"$k\,(L_k - \log k - L_\infty)$ (nats)")
    return fig


def fig_c1_heatmap(table, value: str = "c1", *, title: str = ""):
    """Heatmap of ``c1`` over (tau, kappa)."""
    fig, ax = plt.subplots()
    grid = table.pivot(index="kappa", columns="tau", values=value).sort_index(ascending=False)
    sns.heatmap(grid, annot=True, fmt=".3g", cmap="viridis", ax=ax, cbar_kws={"label": f"{value} (nats)"})
    ax.set_xlabel(r"temperature $\tau$")
    ax.set_ylabel(r"concentration $\kappa$")
    if title:
        ax.set_title(title)
    return fig
