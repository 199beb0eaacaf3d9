"""Chapter 1's claims-ledger records (claim C1): each ``ledger_*`` turns the tables of the
runners into records and documents its verdict rule; most return the values the page quotes."""

from __future__ import annotations

import pandas as pd

from ...experiment.ledger import Rule
from ...models import VonMisesFisher
from ...theory.exact import exact_bias_with_error
from ...theory.stats import Estimate, coverage_interval, fit_loglog_slope
from .config import RateSetup
from .runners import ntxent_richardson, richardson_c1

__all__ = ["ledger_bounds", "ledger_exact", "ledger_in_batch", "ledger_monte_carlo", "ledger_sweep",
           "ledger_third_order"]


def ledger_exact(ledger, setup: RateSetup, model) -> pd.DataFrame:
    """Ledger records for the exact (quadrature) checks of Theorem ``c1-thm-rate``.

    * ``C1-c1-<variant>``: predicted ``c1`` (closed form), measured by
      :func:`~.runners.richardson_c1` at ``setup.k_extrapolate``, interval = measured +- its
      numerical error.
    * ``C1-kbias-k<k>`` (k in ``setup.exact_ks``): predicted ``c1 + c2/k``, measured
      ``k (L_k - log k - L_inf)``, interval = measured +- (``2 |c3| / k^2`` (the neglected next
      term, declared in advance) + numerical error).
    """
    tau, ks, k_extrapolate = setup.tau, list(setup.exact_ks), setup.k_extrapolate
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
                                                      "ci_high", "passed", "kind", "verdict"]]


def ledger_monte_carlo(ledger, setup: RateSetup, model, mc: pd.DataFrame) -> dict:
    """Ledger records for the Monte Carlo checks (table from :func:`~.runners.monte_carlo`).

    * ``C1-mc-k<k>``: predicted = exact bias, measured = control-variate estimate, with a
      Bonferroni-adjusted interval (level ``1 - 0.05/n_k``, so all n_k records hold together with
      probability 0.95).
    * ``C1-mc-coverage``: predicted 0.95, measured = fraction of k whose 95% interval covers the
      exact value, interval = Clopper--Pearson 95%.
    * ``C1-slope``: measured = weighted least-squares slope of log(estimate) on log k for
      k >= ``setup.k_min_slope``, with its 95% t-interval; predicted = the same fit applied to the
      second-order theory ``c1/k + c2/k^2`` at the same k (the asymptotic slope is -1, but at
      k = 64 the local slope is still about -0.99).
    """
    tau, k_min_slope = setup.tau, setup.k_min_slope
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
                  measured=Estimate.interval(hits / n_k, lo, hi, n=n_k, method="Clopper-Pearson"),
                  params={**model.params, "tau": tau, "ks": [int(k) for k in mc["k"]]})
    sel = mc[mc["k"] >= k_min_slope]
    fit = fit_loglog_slope(sel["k"], sel["cv_mean"], sel["cv_se"])
    # The prediction: the same weighted fit applied to the second-order theory c1/k + c2/k^2 at
    # the same k (slightly above -1 at finite k, since c2 < 0 here; -1 in the limit).
    c1, c2 = model.bias_coefficients(tau, "standard", order=2)
    kk = sel["k"].to_numpy(dtype=float)
    predicted = fit_loglog_slope(kk, c1 / kk + c2 / kk**2, sel["cv_se"]).mean
    ledger.record(claim="C1", id="C1-slope", quantity="loglog_slope", predicted=predicted, measured=fit.mean,
                  ci_low=fit.ci_low, ci_high=fit.ci_high, sampled=True,
                  params={**model.params, "tau": tau, "ks": [int(k) for k in sel["k"]],
                          "prediction": "weighted fit to c1/k + c2/k^2"})
    return {"coverage": hits / n_k, "n_k": n_k, "slope": fit.mean, "slope_low": fit.ci_low,
            "slope_high": fit.ci_high, "slope_predicted": predicted, "k_min_slope": int(k_min_slope),
            "n_tuples": int(mc["n_tuples"].iloc[0])}


def ledger_bounds(ledger, setup: RateSetup, model, bounds: pd.DataFrame) -> dict:
    """Ledger records that the bounds of Theorem ``c1-thm-rate`` hold (table from
    :func:`~.runners.bounds_table`).

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
                      params={**model.params, "tau": setup.tau, "bound": name, "k_max": int(wide.index.max())})
    kmax = wide.index.max()
    return {"ours_max_ratio": float((ours / exact).max()),
            "ours_ratio_at_kmax": float(ours[kmax] / exact[kmax]),
            "lip_ratio_at_kmax": float(lip[kmax] / exact[kmax]),
            "lip_over_ours_k1": float(lip[1] / ours[1])}


def ledger_sweep(ledger, sweep: pd.DataFrame, dim: int) -> None:
    """``C1-c1-tau<tau>-kappa<kappa>``: closed-form ``c1`` against its Richardson extrapolation
    from the exact quadrature (table from :func:`~.runners.c1_sweep`), interval = +- the
    extrapolation's numerical error."""
    for _, row in sweep.iterrows():
        ledger.record(claim="C1", id=f"C1-c1-tau{row['tau']:g}-kappa{row['kappa']:g}", quantity="c1",
                      predicted=row["c1"], measured=row["c1_richardson"],
                      ci_low=row["c1_richardson"] - row["c1_richardson_err"],
                      ci_high=row["c1_richardson"] + row["c1_richardson_err"],
                      params={**VonMisesFisher(dim, row["kappa"]).params, "tau": row["tau"],
                              "variant": "standard"})


def ledger_third_order(ledger, setup: RateSetup, model, table: pd.DataFrame) -> dict:
    """``C1-c3-k<k>``: the third-order coefficient ``c3`` (predicted, closed form) against
    ``k^2 (K_k - c1 - c2/k)`` from the exact values (measured; table from
    :func:`~.runners.third_order_table`), with the interval measured +- (``2 |c4| / k`` (the next
    term, declared in advance) + ``3 k^3 err_k``).

    Returns the values the page quotes (``c3``, ``c4``, ``r3`` and its tolerance at each k)."""
    out = {}
    for _, row in table.iterrows():
        k = int(row["k"])
        half = 2.0 * abs(row["c4"]) / k + 3.0 * row["r3_err"]
        ledger.record(claim="C1", id=f"C1-c3-k{k}", quantity="k2_remainder", predicted=row["c3"],
                      measured=Estimate.exact(row["r3"], half, method="exact quadrature"),
                      params={**model.params, "tau": setup.tau, "variant": "standard", "k": k,
                              "tolerance": "2|c4|/k + 3 k^3 err"})
        out[f"r3_k{k}"], out[f"r3_tol_k{k}"] = float(row["r3"]), float(half)
    out.update({"c3": float(table["c3"].iloc[0]), "c4": float(table["c4"].iloc[0])})
    return out


def ledger_in_batch(ledger, setup: RateSetup, model, exact: pd.DataFrame, mc: pd.DataFrame) -> dict:
    """Ledger records of the in-batch section (tables from :func:`~.runners.in_batch_exact` and
    :func:`~.runners.in_batch_monte_carlo`).

    * ``C1-inbatch-<form>-B<B>``: predicted = the exact ``E log T`` of a row (CLIP: InfoNCE's with
      ``k = B - 1``, Proposition ``c1-prop-clip``; NT-Xent: the pair-law quadrature), measured =
      Monte Carlo of the in-batch loss itself (control variates, batch means), Bonferroni over
      all records of the section (level ``1 - 0.05/n``).
    * ``C1-ntxent-c1``: predicted ``c1^NT = c1 - gamma/2`` (Proposition ``c1-prop-ntxent``),
      measured by :func:`~.runners.ntxent_richardson` at ``k = setup.ntxent_k`` (interval: its error).

    Returns the values the page quotes.
    """
    tau = setup.tau
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
    rich, err = ntxent_richardson(model, tau, setup.ntxent_k)
    ledger.record(claim="C1", id="C1-ntxent-c1", quantity="c1_ntxent", predicted=c1_nt,
                  measured=Estimate.exact(rich, err, method="Richardson on the exact NT-Xent values"),
                  params={**model.params, "tau": tau, "form": "nt_xent", "k": 2 * setup.ntxent_k})
    c1, c2 = model.in_batch_bias_coefficients(tau, "clip")
    pair = model.pair_weight_moments(tau)
    ratio = (exact[exact.form == "clip"].set_index("B")["bias"] / exact[exact.form == "nt_xent"].set_index("B")["bias"])
    return {"min_ratio_clip_nt": float(ratio.min()), "ratio_clip_nt_Bmax": float(ratio.iloc[-1]),
            "c1_clip": c1, "c1_clip_minus_1": c1 - 1.0, "c2_clip": c2, "c1_nt": c1_nt, "c2_nt": c2_nt, "gamma": pair["gamma"],
            "delta": pair["delta"], "c1_nt_richardson": rich, "c1_nt_richardson_err": err,
            "mc_covered": int(covered), "mc_n": n, "B_max": int(mc["B"].max()),
            "exact_B_max": int(exact["B"].max())}
