"""Chapter 1's runners: a :class:`~.config.RateSetup`, the page's model and sizes in, a tidy
table out, cached by configuration; and the values the page quotes from those tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...experiment.cache import cached
from ...models import VonMisesFisher
from ...theory.bounds import bias_bounds, lipschitz_log_bound, uniform_bias_constant
from ...theory.estimators import in_batch_negatives, monte_carlo_bias, monte_carlo_in_batch_bias
from ...theory.exact import exact_bias, exact_bias_with_error
from .config import RateSetup

__all__ = ["bounds_table", "c1_sweep", "exact_curve", "exact_summary", "exercise_values", "in_batch_exact",
           "in_batch_monte_carlo", "monte_carlo", "ntxent_richardson", "parameters_summary", "richardson_c1",
           "third_order_table"]


def parameters_summary(setup: RateSetup, model) -> dict:
    """The page's parameters as glue values: ``kappa``, ``tau``, ``dim``, ``sphere_dim``."""
    return {"kappa": float(model.kappa), "tau": float(setup.tau), "dim": int(model.dim),
            "sphere_dim": int(model.dim - 1)}


@cached
def exact_curve(setup: RateSetup, model, ks: list, variants=("standard", "decoupled")):
    """Exact bias ``L_k - log k - L_inf`` of ``model`` (vMF or finite) against k at ``setup.tau``,
    with the first/second-order predictions.

    Columns: ``variant, k, bias, first_order, second_order, k_bias, c1, c2, c3``.
    """
    tau = setup.tau
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
def monte_carlo(setup: RateSetup, model, ks: list, n_tuples: int, device: str, seed: int, batch_size: int = 1024,
                variant: str = "standard"):
    """Monte Carlo estimates (plain and control-variate) of the bias at each k, with 95% CIs,
    next to the exact value. Seeds are ``seed + index of k``.

    Columns: ``k, exact, plain_mean, plain_low, plain_high, cv_mean, cv_se, cv_low, cv_high,
    covered`` (exact value inside the cv interval), ``n_tuples, device``.
    """
    tau = setup.tau
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
def bounds_table(setup: RateSetup, model, ks: list):
    """|bias| and the bounds of Chapter 1 against k, as a long table (``k, curve, value``).

    Curves: the exact |bias|; our bound with the model's moments and ``a = e^-beta/mu``; the
    uniform ``C(tau)/k``; the Lipschitz-of-log bound with the model's moments and uniformly.
    """
    tau = setup.tau
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
def c1_sweep(setup: RateSetup, dim: int, taus: list, kappas: list):
    """``c1`` over a (tau, kappa) grid of vMF models on ``S^{dim - 1}``: the closed form, and the
    exact ``k (L_k - log k - L_inf)`` extrapolated by :func:`richardson_c1` at ``setup.sweep_k_ref``.

    Columns: ``tau, kappa, c1, c1_decoupled, c1_richardson, c1_richardson_err``.
    """
    rows = []
    for kappa in kappas:
        model = VonMisesFisher(dim, kappa)
        for tau in taus:
            c1 = model.bias_coefficients(tau, "standard", order=1)[0]
            c1d = model.bias_coefficients(tau, "decoupled", order=1)[0]
            rich, err = richardson_c1(model, tau, setup.sweep_k_ref)
            rows.append({"tau": tau, "kappa": kappa, "c1": c1, "c1_decoupled": c1d,
                         "c1_richardson": rich, "c1_richardson_err": err})
    return pd.DataFrame(rows)


@cached
def third_order_table(setup: RateSetup, model, ks: list):
    """The third-order check of Proposition ``c1-prop-third-order`` at ``setup.tau``.

    Columns: ``k``, ``k_bias`` (``K_k = k (L_k - log k - L_inf)``, exact), ``r3``
    (``k^2 (K_k - c1 - c2/k)``), ``r3_err`` (``k^3`` times the measured error of the exact value),
    ``c3``, ``c4``, ``c3_plus_c4_over_k``.
    """
    c1, c2, c3, c4 = model.bias_coefficients(setup.tau, "standard", order=4)
    b, err = exact_bias_with_error(model, ks, setup.tau, "standard")
    rows = []
    for k, v, e in zip(ks, b, err):
        K = k * float(v)
        rows.append({"k": int(k), "k_bias": K, "r3": k**2 * (K - c1 - c2 / k), "r3_err": k**3 * float(e),
                     "c3": c3, "c4": c4, "c3_plus_c4_over_k": c3 + c4 / k})
    return pd.DataFrame(rows)


@cached
def in_batch_exact(setup: RateSetup, model, batch_sizes: list):
    """Exact ``E log T`` of an anchor row of CLIP and NT-Xent for each batch size (quadrature,
    :meth:`~infonce_book.models.VonMisesFisher.exact_in_batch_bias`), with the predictions.

    Columns: ``form, B, k, bias, error, k_bias, c1, c2, second_order`` (``c1 + c2/k``).
    """
    rows = []
    for form in ("clip", "nt_xent"):
        c1, c2 = model.in_batch_bias_coefficients(setup.tau, form)
        vals, errs = model.exact_in_batch_bias(batch_sizes, setup.tau, form)
        for B, v, e in zip(batch_sizes, vals, errs):
            k = in_batch_negatives(form, B)
            rows.append({"form": form, "B": int(B), "k": k, "bias": float(v), "error": float(e),
                         "k_bias": k * float(v), "c1": c1, "c2": c2, "second_order": c1 + c2 / k})
    return pd.DataFrame(rows)


@cached
def in_batch_monte_carlo(setup: RateSetup, model, batch_sizes: list, n_rows: int, device: str, seed: int):
    """Monte Carlo of both in-batch losses (:func:`~infonce_book.theory.estimators.monte_carlo_in_batch_bias`)
    with ``n_rows // B`` batches per batch size (at least ``setup.min_batches``); seeds ``seed + 2 i``
    (CLIP) and ``seed + 2 i + 1`` (NT-Xent).

    Columns: ``form, B, k, cv_mean, cv_se, plain_mean, plain_se, n_batches, device``.
    """
    rows = []
    for i, B in enumerate(batch_sizes):
        for j, form in enumerate(("clip", "nt_xent")):
            r = monte_carlo_in_batch_bias(model, B, setup.tau, max(setup.min_batches, n_rows // B), form=form,
                                          device=device, seed=seed + 2 * i + j)
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


def exact_summary(setup: RateSetup, model, exact: pd.DataFrame) -> dict:
    """Values the page quotes from :func:`exact_curve` (standard variant): ``k_max``, ``c1_value``,
    ``c2_value``, ``c3_value``, ``kbias_1024`` and the decoupled ``c1_dec_value``."""
    std = exact[exact.variant == "standard"]
    c1, c2, c3 = model.bias_coefficients(setup.tau, "standard", order=3)
    return {"k_max": int(std.k.max()), "c1_value": c1, "c2_value": c2, "c3_value": c3,
            "kbias_1024": float(std.loc[std.k == 1024, "k_bias"].iloc[0]),
            "c1_dec_value": model.bias_coefficients(setup.tau, "decoupled", order=1)[0]}


def exercise_values(setup: RateSetup, model, exercise_model) -> dict:
    """The numbers the exercises ask for, computed (the solutions glue them).

    * higher dimension: ``c1``, ``u1``, ``v2`` for ``exercise_model`` and ``model`` at
      ``setup.tau``, and ``k (L_k - log k - L_inf)`` of ``exercise_model`` at ``k = 1e4, 1e5``;
    * third order at ``setup.exercise_tau``: ``c3``, ``c4`` and ``k^2 (K_k - c1 - c2/k)`` at k = 128;
    * the sign exercise: ``c1`` and the exact bias at ``k = 1`` at ``setup.sign_tau``.
    """
    tau, exercise_tau, sign_tau = setup.tau, setup.exercise_tau, setup.sign_tau
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
