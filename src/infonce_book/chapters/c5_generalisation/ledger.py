"""Chapter 5's claims-ledger records: claim C6 (the bounds hold, the sharp bound is non-vacuous,
the PAC-Bayes certificate is tight and uniform in k) and claim C7 (the gap of ERM is p_eff / n).
Each function documents its records; the verdicts are structured rules
(:class:`~infonce_book.experiment.ledger.Rule`) that the ledger decides."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...experiment.ledger import Rule
from ...theory.stats import Estimate, fit_loglog_slope, normal_quantile, weighted_linear_fit

__all__ = ["ledger_bound", "ledger_gap"]


def _t_estimate(values) -> Estimate:
    values = np.asarray(values, dtype=float)
    return Estimate.from_samples(values, 0.95, t=True, method="seeds")


def ledger_bound(ledger, grid: pd.DataFrame, delta: float, headline: dict, sphere: str = "vmf") -> dict:
    """Ledger records of claim C6 (each one-sided; the rule is in ``params``):

    * ``C6-bound-holds-<model>`` and ``C6-sharp-holds-<model>``: the smallest (bound - upper end
      of a 95% interval for the observed side) over every cell is >= 0, for the old and the sharp
      bound (observed side: the search cross-entropy, or ``L_k - log k`` where no search term);
    * ``C6-pac-bayes-holds-vmf``: the same for the certificate and the measured value of the
      randomised embedding;
    * ``C6-sharp-nonvacuous-n<n>-k<k>`` at the ``headline`` cell (``{"n", "k", "tau"}``): the upper
      end of a t-interval over seeds for the sharp bound is below ``2 beta``;
    * ``C6-pac-bayes-slack-n<n>-k<k>``: the upper end of a t-interval over seeds for the slack of
      the certificate (bound - measured value of the randomised embedding) is at most 1 nat;
    * ``C6-pac-bayes-k-uniform-tau<tau>-n<n>``: at every (tau, n) with k = 16 and a larger k, the
      difference slack(largest k) - slack(k = 16) is not above 0 beyond its 95% interval
      (Welch-type, seeds of both cells).

    ``grid`` is the table of :func:`~.runners.grid`; ``sphere`` names the rows of the vMF model
    (the headline cell's model). Returns numbers for the page (worst slacks, headline values).
    """
    out = {}
    for model_name, sub in grid.groupby("model"):
        out.update(_record_bounds_hold(ledger, model_name, sub, delta))
        out.update(_record_certificate_holds(ledger, model_name, sub, "pb", "pac-bayes", "PAC-Bayes certificate"))
    n, k, tau = headline["n"], headline["k"], headline["tau"]
    head = grid[(grid.model == sphere) & (grid.n == n) & (grid.k == k) & np.isclose(grid.tau, tau)]
    if len(head) >= 2:
        out.update(_record_headline(ledger, head, n, k, tau))
    out.update(_record_k_uniform(ledger, grid))
    return out


def _record_bounds_hold(ledger, model_name: str, sub: pd.DataFrame, delta: float) -> dict:
    """``C6-bound-holds-<model>`` and ``C6-sharp-holds-<model>`` for the rows ``sub`` of one model,
    and the model's numbers for the page."""
    out = {}
    q = normal_quantile(0.95)
    for name, col, rid in (("old", "old_bound", "bound"), ("sharp", "sharp_bound", "sharp")):
        has_search = sub[f"{name}_search_bias"].notna().all()
        observed = (sub.search_ce + q * sub.search_se if has_search
                    else sub.test_risk + q * sub.test_se - np.log(sub.k))
        what = "E H(M_k, Q_k) - log k" if has_search else "L_k - log k"
        worst = float((sub[col] - observed).min())
        ledger.record(claim="C6", id=f"C6-{rid}-holds-{model_name}",
                      quantity=f"smallest ({name} bound - upper 95% end of {what}) over the grid",
                      predicted=0.0, measured=Estimate.exact(worst), rule=Rule.bound("measured", ">="),
                      params={"model": model_name, "cells": len(sub), "delta": delta})
        out[f"{model_name}_{name}_worst_slack"] = worst
    out[f"{model_name}_sharp_min"] = float(sub.sharp_bound.min())
    out[f"{model_name}_sharp_min_trivial"] = float(sub.trivial[sub.sharp_bound.idxmin()])
    out[f"{model_name}_cells"] = len(sub)
    out[f"{model_name}_old_median_bound"] = float(sub.old_bound.median())
    out[f"{model_name}_median_observed"] = float(sub.search_ce.median())
    return out


def _record_certificate_holds(ledger, model_name: str, sub: pd.DataFrame, prefix: str, rid: str,
                              label: str) -> dict:
    """``C6-<rid>-holds-<model>``: the smallest (certificate - upper 95% end of the measured
    value of the embedding it certifies) over the cells of one model that have the certificate
    (columns ``<prefix>_bound``, ``<prefix>_measured``, ``<prefix>_measured_se``); nothing where
    none has it. Returns ``{"<model>_<prefix>_worst_slack": ...}``."""
    bound, measured = f"{prefix}_bound", f"{prefix}_measured"
    if bound not in sub or not sub[bound].notna().any():
        return {}
    q = normal_quantile(0.95)
    rows = sub[sub[bound].notna()]
    worst = float((rows[bound] - (rows[measured] + q * rows[f"{measured}_se"])).min())
    ledger.record(claim="C6", id=f"C6-{rid}-holds-{model_name}",
                  quantity=f"smallest ({label} - upper 95% end of E_Q E H - log k)",
                  predicted=0.0, measured=Estimate.exact(worst), rule=Rule.bound("measured", ">="),
                  params={"model": model_name, "cells": len(rows)})
    return {f"{model_name}_{prefix}_worst_slack": worst}


def _record_headline(ledger, head: pd.DataFrame, n: int, k: int, tau: float) -> dict:
    """``C6-sharp-nonvacuous-n<n>-k<k>`` and ``C6-pac-bayes-slack-n<n>-k<k>`` from the seeds
    ``head`` of the headline cell, and the headline numbers of the page."""
    est = _t_estimate(head.sharp_bound)
    ledger.record(claim="C6", id=f"C6-sharp-nonvacuous-n{n}-k{k}",
                  quantity=f"sharp bound on E H - log k (vMF, tau = {tau:g}), mean over seeds",
                  predicted=2.0 / tau, measured=est,
                  rule=Rule.bound("ci_high", "<", note="the trivial bound 2 beta"),
                  params={"n": n, "k": k, "tau": tau, "seeds": len(head)})
    slack = _t_estimate(head.pb_bound - head.pb_measured)
    ledger.record(claim="C6", id=f"C6-pac-bayes-slack-n{n}-k{k}",
                  quantity=f"PAC-Bayes slack: certificate - measured E_Q E H - log k (tau = {tau:g})",
                  predicted=1.0, measured=slack, rule=Rule.one_sided("ci_high", "<=", note="target: at most 1 nat"),
                  params={"n": n, "k": k, "tau": tau, "seeds": len(head)})
    old = _t_estimate(head.old_bound)
    sharp_slack = _t_estimate(head.sharp_bound - head.search_ce)
    return dict(head_old=old.mean, head_sharp=est.mean, head_sharp_low=est.ci_low, head_sharp_high=est.ci_high,
                head_pb=float(head.pb_bound.mean()), head_measured=float(head.search_ce.mean()),
                head_pb_measured=float(head.pb_measured.mean()), head_pb_slack=slack.mean,
                head_pb_slack_low=slack.ci_low, head_pb_slack_high=slack.ci_high, head_sharp_slack=sharp_slack.mean,
                head_seeds=len(head), head_trivial=2.0 / tau,
                head_complexity_ratio=float(head.old_complexity.mean() / head.sharp_complexity.mean()),
                head_pb_bias_share=float(head.sharp_search_bias.mean() / slack.mean),
                head_pb_bias=float(head.sharp_search_bias.mean()),
                head_pb_kl_step=float((head.pb_risk_upper - head.pb_emp_upper).mean()),
                head_pb_mc_step=float((head.pb_emp_upper - head.pb_emp_risk).mean()),
                head_pb_rest=float((head.pb_emp_risk - np.log(k) - head.pb_measured).mean()))


def _record_k_uniform(ledger, grid: pd.DataFrame) -> dict:
    """``C6-pac-bayes-k-uniform-tau<tau>-n<n>`` at every (tau, n) with two or more seeds at k = 16
    and at the largest k (when that exceeds 16); ``k_uniform_records`` counts them."""
    vmf = grid[grid.pb_bound.notna()] if "pb_bound" in grid else grid.iloc[:0]
    ks = sorted(vmf.k.unique())
    out = {"k_uniform_records": 0}
    if not (16 in ks and ks[-1] > 16):
        return out
    for (t, nn), sub in vmf.groupby(["tau", "n"]):
        a = sub[sub.k == 16]
        b = sub[sub.k == ks[-1]]
        if len(a) < 2 or len(b) < 2:
            continue
        sa, sb = a.pb_bound - a.pb_measured, b.pb_bound - b.pb_measured
        diff = float(sb.mean() - sa.mean())
        se = math.sqrt(sa.var(ddof=1) / len(sa) + sb.var(ddof=1) / len(sb))
        est = Estimate(diff, se, len(sa) + len(sb), dof=min(len(sa), len(sb)) - 1, method="seeds (Welch)")
        ledger.record(claim="C6", id=f"C6-pac-bayes-k-uniform-tau{t:g}-n{int(nn)}",
                      quantity=f"PAC-Bayes slack at k = {ks[-1]} minus at k = 16 (vMF, tau = {t:g}, n = {int(nn)})",
                      predicted=0.0, measured=est,
                      rule=Rule.one_sided("ci_low", "<=", note="not larger beyond the interval"),
                      params={"tau": float(t), "n": int(nn), "ks": [16, int(ks[-1])]})
        out[f"k_uniform_diff_tau{t:g}_n{int(nn)}".replace(".", "p")] = diff
        out["k_uniform_records"] += 1
    return out


def ledger_gap(ledger, summary: pd.DataFrame, tau_star: float, p_eff: int = 5, sphere: str = "vmf",
               runs: pd.DataFrame | None = None) -> dict:
    """Ledger records of claim C7 (synthetic models), from the table of
    :func:`~.tables.gap_summary`: at ``tau = 1/kappa`` the standard InfoNCE is the conditional
    log-likelihood of the positive's position and the vMF class contains the truth, so the
    expected gap of ERM is ``p_eff / n + o(1/n)`` (Proposition ``c5-prop-aic``; ``p_eff = 5`` for
    NormalisedLinear(3)). Records:

    * ``C7-aic-pooled``: the mean of ``n * gap_cv`` over every seed of every cell at ``tau_star``
      (a t-interval over those training runs, 95%) against ``p_eff``;
    * ``C7-aic-n<n>-k<k>``: the same per (n, k), t-interval over its seeds at the Bonferroni level
      ``1 - 0.05/m`` for the m per-cell records (with a handful of seeds per cell and ``n * gap``
      close to a chi-square variable with ``p_eff`` degrees of freedom, m intervals at 95% each
      would fail somewhere by chance in a sizeable fraction of runs);
    * the log-log slope of ``E gap`` in n (predicted -1); its slope in k (predicted 0).

    ``sphere`` names the vMF model's rows in the table; ``runs`` (optional) is the per-seed grid
    for the pooled record (without it the pooled record uses the per-cell means).
    """
    out = {}
    star = summary[(summary.model == sphere) & np.isclose(summary.tau, tau_star)]
    level = 1.0 - 0.05 / max(len(star), 1)
    for _, r in star.iterrows():
        est = Estimate(r.n_gap_cv, r.n_gap_cv_se, int(r.seeds), level=level, dof=max(int(r.seeds) - 1, 1),
                       method="seeds")
        ledger.record(claim="C7", id=f"C7-aic-n{int(r.n)}-k{int(r.k)}", quantity="n * E[generalisation gap] (vMF)",
                      predicted=float(p_eff), measured=est,
                      params={"n": int(r.n), "k": int(r.k), "tau": tau_star, "seeds": int(r.seeds),
                              "level": level},
                      rule=Rule.two_sided(note=f"Bonferroni over the {len(star)} per-cell records"))
    if runs is not None:
        pooled_values = [v for v in runs[(runs.model == sphere) & np.isclose(runs.tau, tau_star) & runs.gap_cell]
                         .eval("n * gap_cv")]
    else:
        pooled_values = list(star.n_gap_cv)
    if len(pooled_values) >= 2:
        pooled = Estimate.from_samples(pooled_values, 0.95, t=True, method="training runs")
        ledger.record(claim="C7", id="C7-aic-pooled", quantity="n * E[generalisation gap], pooled over n, k (vMF)",
                      predicted=float(p_eff), measured=pooled,
                      params={"tau": tau_star, "runs": len(pooled_values), "ns": sorted(int(v) for v in star.n.unique()),
                              "ks": sorted(int(v) for v in star.k.unique())})
        out.update(pooled=pooled.mean, pooled_low=pooled.ci_low, pooled_high=pooled.ci_high,
                   pooled_runs=len(pooled_values), bonferroni_level=level)
    pos = star[star.gap_cv > 0]
    fit = fit_loglog_slope(pos.n, pos.gap_cv, pos.gap_cv_se)
    ledger.record(claim="C7", id="C7-gap-slope-n", quantity="log-log slope of E[gap] against n (vMF, tau = 1/kappa)",
                  predicted=-1.0, measured=fit,
                  params={"ns": sorted(int(v) for v in pos.n.unique()), "ks": sorted(int(v) for v in pos.k.unique())})
    out.update(n_slope=fit.mean, n_slope_low=fit.ci_low, n_slope_high=fit.ci_high)
    if star.k.nunique() >= 2:
        slope = weighted_linear_fit(np.log(star.k.to_numpy(float)), star.n_gap_cv.to_numpy(float),
                                    star.n_gap_cv_se.to_numpy(float))
        ledger.record(claim="C7", id="C7-gap-flat-in-k", quantity="slope of n * E[gap] against log k (vMF, tau = 1/kappa)",
                      predicted=0.0, measured=slope, params={"ks": sorted(int(v) for v in star.k.unique())})
        out.update(k_slope=slope.mean, k_slope_low=slope.ci_low, k_slope_high=slope.ci_high)
    return out

