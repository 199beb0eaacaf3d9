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
from ..experiment.ledger import Rule
from ..experiment.setup import ChapterContext, setup_chapter
from ..models import VonMisesFisher
from ..theory.bounds import bias_bounds, lipschitz_log_bound, uniform_bias_constant
from ..theory.estimators import in_batch_negatives, monte_carlo_bias, monte_carlo_in_batch_bias
from ..theory.exact import exact_bias, exact_bias_with_error
from ..theory.stats import Estimate, coverage_interval, fit_loglog_slope, normal_quantile

STEM = "c1_rate"

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

#: The numbers of negatives at which the third-order coefficient is recorded: large enough for
#: the neglected ``c4/k`` to be small, small enough for ``k^3`` times the quadrature's error
#: (about 1e-14 to 1e-13) to stay below 1e-5 (it exceeds that from k of about 1000 on).
THIRD_ORDER_KS = (64, 128, 256)


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)



def parameters_summary(model, tau: float) -> dict:
    """The page's parameters as glue values: ``kappa``, ``tau``, ``dim``, ``sphere_dim``."""
    return {"kappa": float(model.kappa), "tau": float(tau), "dim": int(model.dim), "sphere_dim": int(model.dim - 1)}


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
    """|bias| and the bounds of Chapter 1 against k, as a long table (``k, curve, value``).

    Curves: the exact |bias|; our bound with the model's moments and ``a = e^-beta/mu``; the
    uniform ``C(tau)/k``; the Lipschitz-of-log bound with the model's moments and uniformly.
    """
    beta = 1.0 / tau
    mom = model.weight_moments(tau)
    a = math.exp(-beta) / mom["mu"]
    exact = np.abs(exact_bias(model, ks, tau, "standard"))
    lower, upper = bias_bounds(ks, u1=mom["u1"], u2=mom["u2"], v2=mom["v2"], a=a)
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
                      rule=Rule.bound("ci_high", "<="),
                      params={**model.params, "tau": tau, "bound": name, "k_max": int(wide.index.max())})
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


def exact_summary(model, tau: float, exact: pd.DataFrame) -> dict:
    """Values the page quotes from :func:`exact_curve` (standard variant): ``k_max``, ``c1_value``,
    ``c2_value``, ``c3_value``, ``kbias_1024`` and the decoupled ``c1_dec_value``."""
    std = exact[exact.variant == "standard"]
    c1, c2, c3 = model.bias_coefficients(tau, "standard", order=3)
    return {"k_max": int(std.k.max()), "c1_value": c1, "c2_value": c2, "c3_value": c3,
            "kbias_1024": float(std.loc[std.k == 1024, "k_bias"].iloc[0]),
            "c1_dec_value": model.bias_coefficients(tau, "decoupled", order=1)[0]}


@cached
def third_order_table(model, tau: float, ks: list):
    """The third-order check of Proposition ``c1-prop-third-order``.

    Columns: ``k``, ``k_bias`` (``K_k = k (L_k - log k - L_inf)``, exact), ``r3``
    (``k^2 (K_k - c1 - c2/k)``), ``r3_err`` (``k^3`` times the measured error of the exact value),
    ``c3``, ``c4``, ``c3_plus_c4_over_k``.
    """
    c1, c2, c3, c4 = model.bias_coefficients(tau, "standard", order=4)
    b, err = exact_bias_with_error(model, ks, tau, "standard")
    rows = []
    for k, v, e in zip(ks, b, err):
        K = k * float(v)
        rows.append({"k": int(k), "k_bias": K, "r3": k**2 * (K - c1 - c2 / k), "r3_err": k**3 * float(e),
                     "c3": c3, "c4": c4, "c3_plus_c4_over_k": c3 + c4 / k})
    return pd.DataFrame(rows)


def ledger_third_order(ledger, model, tau: float, table: pd.DataFrame) -> dict:
    """``C1-c3-k<k>``: the third-order coefficient ``c3`` (predicted, closed form) against
    ``k^2 (K_k - c1 - c2/k)`` from the exact values (measured), with the interval
    measured +- (``2 |c4| / k`` (the next term, declared in advance) + ``3 k^3 err_k``).

    Returns the values the page quotes (``c3``, ``c4``, ``r3`` and its tolerance at each k)."""
    out = {}
    for _, row in table.iterrows():
        k = int(row["k"])
        half = 2.0 * abs(row["c4"]) / k + 3.0 * row["r3_err"]
        ledger.record(claim="C1", id=f"C1-c3-k{k}", quantity="k2_remainder", predicted=row["c3"],
                      measured=Estimate.exact(row["r3"], half, method="exact quadrature"),
                      params={**model.params, "tau": tau, "variant": "standard", "k": k,
                              "tolerance": "2|c4|/k + 3 k^3 err"})
        out[f"r3_k{k}"], out[f"r3_tol_k{k}"] = float(row["r3"]), float(half)
    out.update({"c3": float(table["c3"].iloc[0]), "c4": float(table["c4"].iloc[0])})
    return out


@cached
def in_batch_exact(model, tau: float, batch_sizes: list):
    """Exact ``E log T`` of an anchor row of CLIP and NT-Xent for each batch size (quadrature,
    :meth:`~infonce_book.models.VonMisesFisher.exact_in_batch_bias`), with the predictions.

    Columns: ``form, B, k, bias, error, k_bias, c1, c2, second_order`` (``c1 + c2/k``).
    """
    rows = []
    for form in ("clip", "nt_xent"):
        c1, c2 = model.in_batch_bias_coefficients(tau, form)
        vals, errs = model.exact_in_batch_bias(batch_sizes, tau, form)
        for B, v, e in zip(batch_sizes, vals, errs):
            k = in_batch_negatives(form, B)
            rows.append({"form": form, "B": int(B), "k": k, "bias": float(v), "error": float(e),
                         "k_bias": k * float(v), "c1": c1, "c2": c2, "second_order": c1 + c2 / k})
    return pd.DataFrame(rows)


@cached
def in_batch_monte_carlo(model, tau: float, batch_sizes: list, n_rows: int, device: str, seed: int):
    """Monte Carlo of both in-batch losses (:func:`~infonce_book.theory.estimators.monte_carlo_in_batch_bias`)
    with ``n_rows // B`` batches per batch size (at least 500); seeds ``seed + 2 i`` (CLIP) and
    ``seed + 2 i + 1`` (NT-Xent).

    Columns: ``form, B, k, cv_mean, cv_se, plain_mean, plain_se, n_batches, device``.
    """
    rows = []
    for i, B in enumerate(batch_sizes):
        for j, form in enumerate(("clip", "nt_xent")):
            r = monte_carlo_in_batch_bias(model, B, tau, max(500, n_rows // B), form=form, device=device,
                                          seed=seed + 2 * i + j)
            rows.append({"form": form, "B": int(B), "k": r["k"], "cv_mean": r["cv"].mean, "cv_se": r["cv"].se,
                         "plain_mean": r["plain"].mean, "plain_se": r["plain"].se,
                         "n_batches": r["n_batches"], "device": r["device"]})
    return pd.DataFrame(rows)


def ntxent_richardson(model, tau: float, k: int = 1024) -> tuple[float, float]:
    """``c1^NT`` extrapolated from the exact NT-Xent values at ``k/2, k, 2k`` negatives
    (``B = k/4 + 1, k/2 + 1, k + 1``): ``2K(2k) - K(k)``, with the error ``|change from (k/2, k)|``
    plus twice the propagated numerical error, times 3 (as :func:`richardson_c1`)."""
    ks = np.array([k // 2, k, 2 * k])
    vals, errs = model.exact_in_batch_bias([int(q // 2 + 1) for q in ks], tau, "nt_xent")
    K, dK = ks * vals, ks * errs
    hi, lo = 2 * K[2] - K[1], 2 * K[1] - K[0]
    return float(hi), float(3.0 * (abs(hi - lo) + 2 * dK[2] + dK[1]))


def ledger_in_batch(ledger, model, tau: float, exact: pd.DataFrame, mc: pd.DataFrame) -> dict:
    """Ledger records of the in-batch section.

    * ``C1-inbatch-<form>-B<B>``: predicted = the exact ``E log T`` of a row (CLIP: InfoNCE's with
      ``k = B - 1``, Proposition ``c1-prop-clip``; NT-Xent: the pair-law quadrature), measured =
      Monte Carlo of the in-batch loss itself (control variates, batch means), Bonferroni over
      all records of the section (level ``1 - 0.05/n``).
    * ``C1-ntxent-c1``: predicted ``c1^NT = c1 - gamma/2`` (Proposition ``c1-prop-ntxent``),
      measured by :func:`ntxent_richardson` at ``k = 1024`` (interval: its error).

    Returns the values the page quotes.
    """
    n = len(mc)
    ex = exact.set_index(["form", "B"])
    covered = 0
    for _, row in mc.iterrows():
        form, B = row["form"], int(row["B"])
        pred = float(ex.loc[(form, B), "bias"])
        est = Estimate(row["cv_mean"], row["cv_se"], int(row["n_batches"]), 1.0 - 0.05 / n,
                       method="control variates, batch means")
        rec = ledger.record(claim="C1", id=f"C1-inbatch-{form.replace('_', '')}-B{B}", quantity="in_batch_bias",
                            predicted=pred, measured=est,
                            params={**model.params, "tau": tau, "form": form, "B": B, "k": int(row["k"]),
                                    "n_batches": int(row["n_batches"]), "interval": f"Bonferroni, level 1-0.05/{n}",
                                    "mc_device": str(row["device"])})
        covered += rec.passed
    c1_nt, c2_nt = model.in_batch_bias_coefficients(tau, "nt_xent")
    rich, err = ntxent_richardson(model, tau)
    ledger.record(claim="C1", id="C1-ntxent-c1", quantity="c1_ntxent", predicted=c1_nt,
                  measured=Estimate.exact(rich, err, method="Richardson on the exact NT-Xent values"),
                  params={**model.params, "tau": tau, "form": "nt_xent", "k": 2048})
    c1, c2 = model.in_batch_bias_coefficients(tau, "clip")
    pair = model.pair_weight_moments(tau)
    ratio = (exact[exact.form == "clip"].set_index("B")["bias"] / exact[exact.form == "nt_xent"].set_index("B")["bias"])
    return {"min_ratio_clip_nt": float(ratio.min()), "ratio_clip_nt_Bmax": float(ratio.iloc[-1]),
            "c1_clip": c1, "c1_clip_minus_1": c1 - 1.0, "c2_clip": c2, "c1_nt": c1_nt, "c2_nt": c2_nt, "gamma": pair["gamma"],
            "delta": pair["delta"], "c1_nt_richardson": rich, "c1_nt_richardson_err": err,
            "mc_covered": int(covered), "mc_n": n, "B_max": int(mc["B"].max()),
            "exact_B_max": int(exact["B"].max())}


def fig_in_batch(exact: pd.DataFrame, mc: pd.DataFrame, *, title: str = ""):
    """``k (L_B - log k - L_inf)`` against the batch size for CLIP (``k = B - 1``) and NT-Xent
    (``k = 2B - 2``): exact (lines), Monte Carlo (points, 95% intervals), and the limits ``c1``."""
    fig, ax = plt.subplots()
    for form, name in (("clip", "CLIP, $k = B - 1$"), ("nt_xent", "NT-Xent, $k = 2B - 2$")):
        t = exact[exact.form == form]
        line, = ax.plot(t["B"], t["k_bias"], "-", label=f"{name}: exact")
        ax.axhline(t["c1"].iloc[0], color=line.get_color(), ls="--", lw=1)
        m = mc[mc.form == form]
        half = normal_quantile(0.95) * m["cv_se"] * m["k"]
        ax.errorbar(m["B"], m["k"] * m["cv_mean"], yerr=half, fmt="o", ms=4, capsize=3, color=line.get_color(),
                    label=f"{name}: Monte Carlo")
    ax.set_xscale("log")
    ax.set_xlabel("batch size $B$")
    ax.set_ylabel(r"$k\,(L_B - \log k - L_\infty)$ (nats)")
    if title:
        ax.set_title(title)
    ax.legend(fontsize="small")
    return fig


def exercise_values(model, exercise_model, tau: float, exercise_tau: float, sign_tau: float) -> dict:
    """The numbers the exercises ask for, computed (the solutions glue them).

    * higher dimension: ``c1``, ``u1``, ``v2`` for ``exercise_model`` and ``model`` at ``tau``,
      and ``k (L_k - log k - L_inf)`` of ``exercise_model`` at ``k = 1e4, 1e5``;
    * third order at ``exercise_tau``: ``c3``, ``c4`` and ``k^2 (K_k - c1 - c2/k)`` at k = 128;
    * the sign exercise: ``c1`` and the exact bias at ``k = 1`` at ``sign_tau``.
    """
    out = {}
    for name, m in (("hd", exercise_model), ("p", model)):
        mom = m.normalised_weight_moments(tau)
        out.update({f"{name}_c1": m.bias_coefficients(tau, order=1)[0], f"{name}_u1": mom["u1"],
                    f"{name}_v2": mom["v2"], f"{name}_dim": int(m.dim)})
    for k in (10**4, 10**5):
        out[f"hd_kbias_{k}"] = k * exercise_model.exact_bias(k, tau)
    c1, c2, c3, c4 = model.bias_coefficients(exercise_tau, order=4)
    K = 128 * model.exact_bias(128, exercise_tau)
    out.update({"t3_c3": c3, "t3_c4": c4, "t3_r3": 128**2 * (K - c1 - c2 / 128), "t3_tau": exercise_tau})
    out.update({"sign_c1": model.bias_coefficients(sign_tau, order=1)[0],
                "sign_bias_k1": model.exact_bias(1, sign_tau), "sign_tau": sign_tau})
    return {key: (float(v) if not isinstance(v, int) else v) for key, v in out.items()}


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
