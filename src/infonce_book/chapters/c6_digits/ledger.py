"""Chapter 6, the claims-ledger records: each ``ledger_*`` function turns a runner's table into
records of claims C1, C2, C3 (measured on a learned embedding) and C7 (the gap and the search on
real data), with its verdict rule given as a structured :class:`~infonce_book.experiment.ledger.Rule`
(decided by the ledger, never by hand) and documented in its docstring; it returns the numbers the
page quotes, keyed by the roles of :mod:`.roles`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...experiment.ledger import Rule
from ...experiment.tables import verdict_sentence
from ...theory.stats import Estimate, equivalence_test, fit_loglog_slope, linear_slope
from . import prose
from .config import DigitsSetup
from .roles import by_tau_role, k_roles, tau_roles

__all__ = ["ledger_gap", "ledger_rate", "ledger_rates", "ledger_kl", "ledger_kls", "ledger_counts", "k_needed",
           "ledger_certificates"]


def ledger_gap(ledger, table: pd.DataFrame, setup: DigitsSetup) -> dict:
    """Claim C7: ledger records of the gap and the search (real data; one split and initialisation
    per seed).

    * ``C7-digits-gap-levels-tau<tau>``: "the gap levels off in k" as an *equivalence test*:
      ``gap(k2) - gap(k1)`` for the two largest training k, paired by seed (same split, same
      initialisation), predicted 0; passed only when its ``1 - 2 alpha`` (90%) Student-t interval
      lies inside ``[-delta, delta]`` (two one-sided tests), with ``delta = setup.margin``
      declared before the run. The record's params carry ``n_seeds``, ``delta`` and the training
      risk reached (means over seeds, per k).
    * ``C7-digits-top1-slope-tau<tau>``: the slope of the top-1 retrieval accuracy against log k,
      one-sided (passes when its 95% interval lies above 0: the search improves with k).

    Returns the page's numbers, keyed by the roles of :func:`~.roles.tau_roles` and
    :func:`~.roles.k_roles` (e.g. ``gap_hi_k2``: the gap at the largest tau and the largest k).
    """
    per_tau = {}
    for tau, sub in table.groupby("tau"):
        ks = sorted(int(v) for v in sub.k.unique())
        k1, k2 = k_roles(ks).values()
        a, b = (sub[sub.k == kk].set_index("seed").gap for kk in (k1, k2))
        diffs = (b - a).dropna().to_numpy()
        est = Estimate.from_samples(diffs, 1 - 2 * setup.alpha, t=True, method="seeds, paired")
        verdict = equivalence_test(est, setup.margin, alpha=setup.alpha)
        reached = {str(kk): float(sub[sub.k == kk].train_risk.mean()) for kk in ks}
        steps = {str(kk): float(sub[sub.k == kk].steps_run.mean()) for kk in ks}
        ledger.record(claim="C7", id=f"C7-digits-gap-levels-tau{tau:g}",
                      quantity=f"gap(k={k2}) - gap(k={k1}) (digits, paired by seed)", predicted=0.0, measured=est,
                      rule=Rule.equivalence(setup.margin, note=f"two one-sided tests at alpha = {setup.alpha:g}"),
                      params={"model": "digits, SphereMLP", "tau": tau, "k_pair": [k1, k2], "n_seeds": int(est.n),
                              "delta": setup.margin, "alpha": setup.alpha, "p_value": verdict.p_value,
                              "training_risk_reached": reached, "steps_run": steps,
                              "converged_fraction": float(sub.converged.mean())})
        logk = np.log(sub.k.to_numpy(float))
        t = linear_slope(logk, sub.top1)
        ledger.record(claim="C7", id=f"C7-digits-top1-slope-tau{tau:g}",
                      quantity="slope of top-1 retrieval accuracy against log k (digits)", predicted=0.0,
                      measured=t, rule=Rule.one_sided("ci_low", ">", note="the search improves with k"),
                      params={"model": "digits, SphereMLP", "tau": tau, "ks": ks, "n_seeds": int(sub.seed.nunique())})
        vals = {}
        for role, kk in (("k1", k1), ("k2", k2)):
            g = Estimate.from_samples(sub[sub.k == kk].gap.to_numpy(), t=True, method="seeds")
            vals.update({f"gap_{{}}_{role}": g.mean, f"gap_low_{{}}_{role}": g.ci_low,
                         f"gap_high_{{}}_{role}": g.ci_high})
        change = prose.gap_change_text(verdict.low, verdict.high)
        vals.update({"diff_{}": est.mean, "diff_low_{}": verdict.low, "diff_high_{}": verdict.high,
                     "verdict_{}": verdict.verdict, "change_{}": change, "top1_slope_{}": t.mean,
                     "top1_slope_low_{}": t.ci_low, "top1_slope_high_{}": t.ci_high})
        per_tau[tau] = vals
    out = {}
    for role, tau in tau_roles(per_tau).items():
        out.update({name.format(role): value for name, value in per_tau[tau].items()})
    out["verdict_summary"] = prose.verdict_summary({tau: vals["verdict_{}"] for tau, vals in per_tau.items()})
    out.update({"n_seeds": int(table.seed.nunique()), "nn_min": float(table.nn_class.min()),
                "nn_max": float(table.nn_class.max())})
    return out


def ledger_certificates(ledger, certs: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """Claim C6 on real data: the hold-out certificates of :func:`~.runners.heldout_certificates`.

    * ``C6-digits-holdout-holds``: the smallest (certificate - held-out risk of the same embedding
      measured on the evaluation bank, :func:`~.runners.evaluate_embeddings`'s ``test_risk``) over
      every embedding, predicted >= 0 (a certificate is an upper bound on the risk).
    * ``C6-digits-holdout-informative-k<k>-tau<tau>``: the certificate minus the uniform search's
      risk ``log(k + 1)``, mean over seeds with its 95% Student-t interval, predicted below 0
      (upper end of the interval): the certificate says that the learned search beats the uniform
      one on unseen digits. Declared before the first run, at the level ``delta`` of the certificates
      (0.05 each).

    Returns one row per (k, tau): ``k, tau, groups, heldout`` (held-out risk minus ``log(k+1)``),
    ``cert, cert_low, cert_high`` (certificate minus ``log(k+1)``), ``needed`` (held-out images at
    which the certificate would fall below the uniform search, median over seeds), ``passed``.
    """
    merged = certs.merge(table[["k", "tau", "seed", "test_risk"]], on=["k", "tau", "seed"])
    slack = float((merged.bound - merged.test_risk).min())
    ledger.record(claim="C6", id="C6-digits-holdout-holds",
                  quantity="smallest (hold-out certificate - measured held-out risk), digits",
                  predicted=0.0, measured=Estimate.exact(slack), rule=Rule.bound("measured", ">="),
                  params={"model": "digits, SphereMLP", "embeddings": len(merged)})
    rows = []
    for (k, tau), sub in certs.groupby(["k", "tau"]):
        est = Estimate.from_samples((sub.bound - sub.uniform).to_numpy(), t=True, method="seeds")
        rec = ledger.record(claim="C6", id=f"C6-digits-holdout-informative-k{k}-tau{tau:g}",
                            quantity=f"hold-out certificate on L_k - log(k+1) (digits, k = {k})", predicted=0.0,
                            measured=est, rule=Rule.bound("ci_high", "<", note="the uniform search"),
                            params={"model": "digits, SphereMLP", "k": int(k), "tau": float(tau),
                                    "groups": int(sub.groups.iloc[0]), "n_seeds": int(len(sub)),
                                    "delta": float(sub.delta.iloc[0])})
        rows.append({"k": int(k), "tau": float(tau), "groups": int(sub.groups.iloc[0]),
                     "heldout": float((sub.heldout_mean - sub.uniform).mean()), "cert": est.mean,
                     "cert_low": est.ci_low, "cert_high": est.ci_high,
                     "needed": float(np.median(sub.images_needed)), "passed": bool(rec.passed)})
    return pd.DataFrame(rows)


def k_needed(rate: pd.DataFrame, threshold: float) -> float:
    """Smallest k of the grid from which on the bias's interval stays inside +-threshold (nan if
    none)."""
    inside = ((rate.bias_low > -threshold) & (rate.bias_high < threshold)).to_numpy()
    for i in range(len(inside)):
        if inside[i:].all():
            return float(rate.k.iloc[i])
    return float("nan")


def _member_params(trained: pd.DataFrame | None, k: int, tau: float) -> dict:
    """What the records of one analysed embedding carry about its training (split 0)."""
    if trained is None:
        return {}
    row = trained[(trained.k == k) & np.isclose(trained.tau, tau) & (trained.seed == 0)].iloc[0]
    return {"training_k": int(k), "training_risk_reached": float(row.train_monitor), "steps_run": int(row.steps_run),
            "stopped_by_rule": bool(row.converged), "n_seeds": 1}


def ledger_rate(ledger, rate: pd.DataFrame, second_order: float = 0.1, *, training: dict | None = None) -> dict:
    """Claims C1 and C2: ledger records on a learned embedding (one tau; table from
    :func:`~.runners.learned_rate`).

    * ``C1-digits-kbias-tau<tau>``: ``k (L_k - log k - L_inf)`` at the largest k against the
      plug-in ``c1``. Interval: ``c1`` plus the paired bootstrap interval of ``k bias - c1``,
      widened on each side by the declared truncation ``|c2|/k`` (the next term of the
      expansion); passed when it contains ``c1``.
    * ``C1-digits-slope-tau<tau>``: weighted least-squares slope of ``log |bias|`` on ``log k``
      (bootstrap standard errors, Student-t interval) over the ks where the plug-in second term
      is at most ``second_order`` times the first (``|c2|/(|c1| k) <= second_order``), against -1;
      the interval is widened by the declared truncation ``|s2 + 1|``, ``s2`` the log-log slope of
      the two-term prediction ``c1/k + c2/k^2`` over the same ks. Needs three such ks and a bias
      of the sign of ``c1`` there (else no record).
    * ``C2-digits-positive-term-tau<tau>``: ``k (L_k - L_k^dec)`` at the largest k -- the part of
      the constant ``d1`` of Chapter 2 that this data allow to check -- against its limit
      ``E u1`` (plug-in), interval as for the first record with the truncation
      ``|E[u1 v2 - u2/2]|/k`` (the next term).

    Returns the page's numbers for this tau (plain names; see :func:`ledger_rates`).
    """
    tau = float(rate.tau.iloc[0])
    last = rate.iloc[-1]
    k = int(last.k)
    c1, c2 = float(last.c1), float(last.c2)
    base = {"model": "digits, SphereMLP (learned)", "tau": tau, "k": k, "n_images": int(last.n_images),
            "law": "held-out bank", **(training or {})}
    trunc = abs(c2) / k
    ledger.record(claim="C1", id=f"C1-digits-kbias-tau{tau:g}", quantity="k_bias_learned", predicted=c1,
                  measured=float(last.kbias), ci_low=float(c1 + last.diff_low - trunc),
                  ci_high=float(c1 + last.diff_high + trunc),
                  sampled=True, params={**base, "c2": c2, "truncation": trunc, "estimator": str(last.estimator)},
                  rule=Rule.two_sided(note="c1 inside c1 + paired bootstrap interval of (k bias - c1) -+ |c2|/k"))
    out = {"slope": float("nan"), "slope_low": float("nan"), "slope_high": float("nan"),
           "slope_k_min": float("nan")}
    sign = np.sign(c1)
    sub = rate[abs(c2) / (abs(c1) * rate.k) <= second_order] if c1 != 0 else rate.iloc[:0]
    if len(sub) >= 3 and (np.sign(sub.bias) == sign).all():
        slope = fit_loglog_slope(sub.k, sign * sub.bias, sub.bias_se)
        kk = sub.k.to_numpy(float)
        pred = sign * (c1 / kk + c2 / kk**2)  # weighted as the measurement (same relative errors)
        s2 = fit_loglog_slope(kk, pred, pred * (sub.bias_se / (sign * sub.bias)).to_numpy()).mean
        t_trunc = abs(s2 + 1.0)
        ledger.record(claim="C1", id=f"C1-digits-slope-tau{tau:g}", quantity="loglog_slope_learned", predicted=-1.0,
                      measured=slope, ci_low=slope.ci_low - t_trunc, ci_high=slope.ci_high + t_trunc,
                      params={**base, "k_min": int(sub.k.min()), "two_term_slope": s2, "truncation": t_trunc},
                      rule=Rule.two_sided(note="-1 inside the t-interval of the slope -+ |two-term slope + 1|"))
        out.update({"slope": slope.mean, "slope_low": slope.ci_low, "slope_high": slope.ci_high,
                    "slope_k_min": float(sub.k.min())})
    trunc_pos = abs(float(last.pos_c2)) / k
    ledger.record(claim="C2", id=f"C2-digits-positive-term-tau{tau:g}", quantity="k_positive_term_learned",
                  predicted=float(last.u1), measured=float(last.pos_k),
                  ci_low=float(last.u1 + last.pos_diff_low - trunc_pos),
                  ci_high=float(last.u1 + last.pos_diff_high + trunc_pos),
                  sampled=True, params={**base, "truncation": trunc_pos},
                  rule=Rule.two_sided(note="E u1 inside E u1 + paired bootstrap interval of (k pos - u1) -+ next term"))
    out.update({"c1": c1, "c1_low": float(last.c1_low), "c1_high": float(last.c1_high), "c2": c2,
                "kbias": float(last.kbias), "kbias_low": float(c1 + last.diff_low),
                "kbias_high": float(c1 + last.diff_high), "u1": float(last.u1), "pos_k": float(last.pos_k),
                "pos_low": float(last.u1 + last.pos_diff_low), "pos_high": float(last.u1 + last.pos_diff_high),
                "linf": float(last.linf), "k_01": k_needed(rate, 0.1), "k_001": k_needed(rate, 0.01),
                "k_01_pred": abs(c1) / 0.1, "k_001_pred": abs(c1) / 0.01,
                "top1_k1": float(rate.top1.iloc[0]), "top1_kmax": float(last.top1)})
    return out


def ledger_rates(ledger, rates: dict, trained: pd.DataFrame | None = None) -> dict:
    """:func:`ledger_rate` for each training tau of ``rates`` (``{tau: table}``); the page's
    numbers keyed by tau role (``c1_lo``, ``c1_hi``, ...). With ``trained`` (the table of
    :func:`~.runners.train_embeddings`), the records carry the analysed embedding's training risk
    reached."""
    k_max = None if trained is None else int(trained.k.max())
    out = by_tau_role({tau: ledger_rate(ledger, rate, training=_member_params(trained, k_max, tau))
                       for tau, rate in rates.items()})
    lo, hi = tau_roles(rates).values()
    out["temperature_note"] = prose.temperature_note(out["c1_lo"], out["c1_hi"], lo != hi)
    out["c2_over_c1_lo"] = abs(out["c2_lo"] / out["c1_lo"]) if out["c1_lo"] else float("nan")
    return out


def ledger_kl(ledger, kl: pd.DataFrame, tau_train: float, *, training: dict | None = None) -> dict:
    """Claim C3, ``C3-digits-bound-tau<tau_train>``: one-sided, ``max_tau`` (upper end of the 95%
    interval of the KL) / bound ``<= 1`` for the embedding trained at ``tau_train``, its softmax
    search evaluated at every tau of the table. Returns the page's numbers for this embedding."""
    worst = kl.loc[kl.ratio_high.idxmax()]
    ledger.record(claim="C3", id=f"C3-digits-bound-tau{tau_train:g}", quantity="max_kl_over_bound_learned",
                  predicted=1.0, measured=float((kl.kl / kl.bound).max()),
                  ci_low=float((kl.kl_low / kl.bound).max()), ci_high=float(kl.ratio_high.max()),
                  rule=Rule.bound("ci_high", "<="),
                  params={"model": "digits, SphereMLP (learned)", "tau_train": tau_train, **(training or {}),
                          "taus": [float(t) for t in kl.tau], "worst_tau": float(worst.tau)})
    own = kl.loc[(kl.tau - tau_train).abs().idxmin()]
    return {"kl_ratio_max": float(kl.ratio_high.max()), "kl_worst_tau": float(worst.tau), "kl_own": float(own.kl),
            "kl_own_bound": float(own.bound)}


def ledger_kls(ledger, kls: dict, trained: pd.DataFrame | None = None) -> dict:
    """:func:`ledger_kl` for each training tau of ``kls`` (``{tau: table}``), keyed by tau role
    (with ``trained``, the records carry the embedding's training risk reached)."""
    k_max = None if trained is None else int(trained.k.max())
    per_tau = {tau: ledger_kl(ledger, kl, tau, training=_member_params(trained, k_max, tau))
               for tau, kl in kls.items()}
    out = by_tau_role(per_tau)
    out["kl_ratio_text"] = prose.kl_ratio_text({tau: v["kl_ratio_max"] for tau, v in per_tau.items()})
    worst = max(out["kl_ratio_max_lo"], out["kl_ratio_max_hi"])
    out["kl_verdict"] = prose.kl_verdict_text(worst)
    return out


def ledger_counts(ledger_table: pd.DataFrame) -> dict:
    """How many of the chapter's records passed, in all and per claim (``C1``, ``C2``, ``C3``,
    ``C7``): ``n_records``, ``n_passed``, ``verdicts`` (passed, inconclusive and failed, in words),
    ``pass_<claim>`` as "passed of total"."""
    out = {"n_records": int(len(ledger_table)), "n_passed": int(ledger_table.passed.sum()),
           "verdicts": verdict_sentence(ledger_table.to_dict("records"))}
    out["failed_note"] = prose.failed_note(out["n_passed"], out["n_records"])
    for claim in ("C1", "C2", "C3", "C7"):
        sub = ledger_table[ledger_table.claim == claim]
        out[f"pass_{claim.lower()}"] = f"{int(sub.passed.sum())} of {len(sub)}"
    return out
