"""Chapter 5, ``book/c5_generalisation.md``: Theorem 1 term by term (claim C6) and generalisation
in practice on synthetic models (claim C7).

Runners take the page's models and sizes and return tidy tables (cached by configuration);
``ledger_*`` turn tables into claims-ledger records (each documents its verdict rule); ``fig_*``
draw the page's figures.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ..experiment.cache import cached
from ..experiment.setup import ChapterContext, setup_chapter
from ..learning.embeddings import loss_per_tuple, reference_embedding
from ..learning.training import fit
from ..theory.bounds import loss_lipschitz_constant, rademacher_covering_bound, search_bias_constant, theorem1_terms
from ..theory.search import search_cross_entropy
from ..theory.stats import Estimate, fit_loglog_slope, normal_quantile, weighted_linear_fit
from ..utils.device import resolve_device
from ..utils.progress import progress

STEM = "c5_generalisation"

SIZES = {
    "smoke": {"ns": [128, 256, 512], "ks": [4], "seeds": 3, "extra_taus": [], "gaussian_ns": [128],
              "gaussian_ks": [4], "gaussian_seeds": 1, "steps": 200, "n_test": 5000},
    "standard": {"ns": [128, 512, 2048], "ks": [4, 16], "seeds": 6, "extra_taus": [1.0],
                 "gaussian_ns": [128, 1024], "gaussian_ks": [4, 16], "gaussian_seeds": 2, "steps": 300,
                 "n_test": 20000},
    "full": {"ns": [128, 512, 2048, 8192], "ks": [4, 16, 64], "seeds": 16, "extra_taus": [1.0, 0.25],
             "gaussian_ns": [128, 1024, 8192], "gaussian_ks": [4, 16, 64], "gaussian_seeds": 4, "steps": 400,
             "n_test": 100000},
}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)


def vmf_search_constant(model, tau: float) -> float:
    """``C_H(tau)`` of Corollary ``c6-cor-search-constant`` for the vMF ``model``:
    ``m = e^{kappa s}/Z(kappa)`` has ``m_min = e^{-kappa}/Z(kappa)``, ``E_pi m^2 = Z(2 kappa)/Z(kappa)^2``
    under every x."""
    kappa = model.kappa
    log_z1, log_z2 = model.log_partition(kappa), model.log_partition(2 * kappa)
    second = math.exp(log_z2 - 2 * log_z1)
    return search_bias_constant(tau, sd_m=math.sqrt(max(second - 1.0, 0.0)), second_moment_m=second,
                                m_min=math.exp(-kappa - log_z1))


def cells(ns: list, ks: list, n_seeds: int, tau_star: float = 0.5, extra_taus=(1.0,), gaussian_ns=None,
          gaussian_ks=None, gaussian_seeds: int = 2) -> list:
    """The training cells of the chapter: the vMF grid over (n, k) at ``tau = 1/kappa``, the same n
    at ``extra_taus`` with the smallest k, and a smaller Gaussian grid. Each cell is a dict
    ``{"model", "n", "k", "tau", "seed"}`` whose ``model`` names an entry of the page's models
    (``"vmf"``, ``"gaussian"``)."""
    cells = [{"model": "vmf", "n": int(n), "k": int(k), "tau": tau_star, "seed": s}
             for k in ks for n in ns for s in range(n_seeds)]
    cells += [{"model": "vmf", "n": int(n), "k": int(min(ks)), "tau": float(t), "seed": s}
              for t in extra_taus for n in ns for s in range(n_seeds)]
    cells += [{"model": "gaussian", "n": int(n), "k": int(k), "tau": 1.0, "seed": s}
              for k in (gaussian_ks or []) for n in (gaussian_ns or []) for s in range(gaussian_seeds)]
    return cells


@cached
def grid(models: dict, cells: list, steps: int, n_test: int, delta: float, device: str, seed: int):
    """Train by ERM (:func:`~infonce_book.learning.training.fit`, Adam, projected onto Theta) on each cell
    and measure, in nats:

    * ``train_risk`` (the empirical risk at the trained embedding), ``test_risk`` (on ``n_test``
      fresh tuples, with ``test_se``), ``search_ce`` (``E H(M_k, Q_k) - log k`` on fresh databases of
      size k, with ``search_se``), ``gap = test_risk - train_risk``;
    * ``excess`` (``L(phi_hat) - L(phi_ref)``, paired on the test tuples) and ``improvement``
      (``L_hat(phi_ref) - L_hat(phi_hat)`` on the training tuples), with ``phi_ref`` the centre of
      Theta (the identity for the vMF model). ``gap_cv = excess + improvement`` equals ``gap`` minus
      ``L(phi_ref) - L_hat(phi_ref)``, whose mean is 0: the same expectation, a much smaller variance;
    * every term of Theorem ``c6-thm-main`` (:func:`~infonce_book.theory.bounds.theorem1_terms`), with
      ``R_n`` bounded by the covering bound of Theorem ``c5-thm-rademacher`` (``E Lambda_avg^2`` by
      Monte Carlo on the test tuples).

    ``models`` maps the cells' model names to reference models; each is trained with its
    :func:`~infonce_book.learning.embeddings.reference_embedding` (the vMF model on S^2:
    NormalisedLinear(3, 0.5), P = 9; the Gaussian model on R^8: BallLinear(8 -> 4), P = 32). The
    C2 term is evaluated for models on the sphere (their m is bounded below); for the others it is
    absent (NaN).
    """
    dev = resolve_device(device)
    rows = []
    for i, cell in enumerate(progress(cells, desc="c6 grid")):
        model_name, n, k, tau = cell["model"], cell["n"], cell["k"], cell["tau"]
        gen = torch.Generator(device=dev).manual_seed(int(seed) * 1_000_003 + i)
        model = models[model_name]
        phi = reference_embedding(model).to(dev)
        with torch.no_grad():
            phi.set_theta_(phi.random_parameters(gen))
        train = model.sample_tuples(n, k, generator=gen, device=dev)
        fit(phi, train, tau, steps=steps, lr=phi.radius / 25, seed=int(seed) + i)
        test = model.sample_tuples(n_test, k, generator=gen, device=dev)
        with torch.no_grad():
            train_loss = loss_per_tuple(phi, *train, tau)
            test_loss = loss_per_tuple(phi, *test, tau)
            x, _, db = test
            a, e_db = phi(x), phi(db)
            h = search_cross_entropy(torch.einsum("bd,bkd->bk", a, e_db), model.log_density_ratio(x, db), tau) - math.log(k)
            L = [phi.lipschitz(t).cpu().numpy() for t in test]
            theta_hat = phi.theta.detach().clone()
            phi.set_theta_(phi.center)
            excess = test_loss - loss_per_tuple(phi, *test, tau)
            improvement = float((loss_per_tuple(phi, *train, tau) - train_loss).mean())
            phi.set_theta_(theta_hat)
        lam = loss_lipschitz_constant(*L, tau, kind="average")
        r_bound = rademacher_covering_bound(float(np.sqrt(np.mean(lam**2))), phi.radius, phi.n_params, n)
        c_search = vmf_search_constant(model, tau) if model.identity_embedding else None
        train_risk = float(train_loss.mean())
        terms = theorem1_terms(train_risk=train_risk, k=k, n=n, tau=tau, delta=delta, rademacher=r_bound,
                               search_constant=c_search)
        rows.append({**cell, "train_risk": train_risk, "test_risk": float(test_loss.mean()),
                     "test_se": float(test_loss.std() / math.sqrt(n_test)), "search_ce": float(h.mean()),
                     "search_se": float(h.std() / math.sqrt(n_test)), "gap": float(test_loss.mean()) - train_risk,
                     "excess": float(excess.mean()), "excess_se": float(excess.std() / math.sqrt(n_test)),
                     "improvement": improvement, "gap_cv": float(excess.mean()) + improvement, **terms})
    return pd.DataFrame(rows)


def ledger_bound(ledger, grid: pd.DataFrame, delta: float) -> dict:
    """Ledger: the bound holds on every cell (one-sided; the observed side is the upper end of a
    95% interval for the search cross-entropy, or the test risk where the C2 term is absent)."""
    out = {}
    q = normal_quantile(0.95)
    for model_name, sub in grid.groupby("model"):
        if sub.search_bias.notna().all():
            observed = sub.search_ce + q * sub.search_se
            what = "E H(M_k, Q_k) - log k"
        else:
            observed = sub.test_risk + q * sub.test_se - np.log(sub.k)
            what = "L_k - log k"
        slack = sub.bound - observed
        worst = float(slack.min())
        ledger.record(claim="C6", id=f"C6-bound-holds-{model_name}",
                      quantity=f"smallest (bound - upper 95% end of {what}) over the grid",
                      predicted=0.0, measured=Estimate.exact(worst), passed=worst >= 0.0,
                      params={"model": model_name, "cells": len(sub), "delta": delta, "rule": "measured >= predicted"})
        out[f"{model_name}_worst_slack"] = worst
        out[f"{model_name}_cells"] = len(sub)
        out[f"{model_name}_median_bound"] = float(sub.bound.median())
        out[f"{model_name}_median_observed"] = float(observed.median())
    return out


def gap_summary(grid: pd.DataFrame) -> pd.DataFrame:
    """Per (model, n, k, tau): the mean over seeds of ``gap`` and ``gap_cv`` with standard errors,
    and ``n * gap_cv`` (the constant of the 1/n law) with its standard error."""
    g = grid.groupby(["model", "n", "k", "tau"])
    out = g.agg(seeds=("seed", "count"), gap=("gap", "mean"), gap_sd=("gap", "std"), gap_cv=("gap_cv", "mean"),
                gap_cv_sd=("gap_cv", "std"), train_risk=("train_risk", "mean"), test_risk=("test_risk", "mean"),
                bound=("bound", "mean")).reset_index()
    out["gap_se"] = out.gap_sd / np.sqrt(out.seeds)
    out["gap_cv_se"] = out.gap_cv_sd / np.sqrt(out.seeds)
    out["n_gap_cv"] = out.n * out.gap_cv
    out["n_gap_cv_se"] = out.n * out.gap_cv_se
    return out.drop(columns=["gap_sd", "gap_cv_sd"])


def ledger_gap(ledger, summary: pd.DataFrame, tau_star: float, p_eff: int = 5, sphere: str = "vmf") -> dict:
    """Ledger (synthetic models): at ``tau = 1/kappa`` the standard InfoNCE is the conditional
    log-likelihood of the positive's position and the vMF class contains the truth, so the expected
    gap of ERM is ``p_eff / n + o(1/n)`` (Proposition ``c7-prop-aic``; ``p_eff = 5`` for
    NormalisedLinear(3)). Records: ``n * E gap`` per (n, k) against ``p_eff`` (t-interval over
    seeds); the log-log slope of ``E gap`` in n (predicted -1); its slope in k (predicted 0).
    ``sphere`` names the vMF model's rows in the table."""
    out = {}
    star = summary[(summary.model == sphere) & np.isclose(summary.tau, tau_star)]
    for _, r in star.iterrows():
        est = Estimate(r.n_gap_cv, r.n_gap_cv_se, int(r.seeds), dof=max(int(r.seeds) - 1, 1), method="seeds")
        ledger.record(claim="C7", id=f"C7-aic-n{int(r.n)}-k{int(r.k)}", quantity="n * E[generalisation gap] (vMF)",
                      predicted=float(p_eff), measured=est,
                      params={"n": int(r.n), "k": int(r.k), "tau": tau_star, "seeds": int(r.seeds)})
    # slope in n (all k pooled by weighted fit on the per-(n, k) means)
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


def fig_theorem1_terms(grid):
    """Stacked terms of Theorem 1 against n (one panel per model and k) with the observed side.

    Args: table from :func:`grid`.
    """
    terms = ["empirical_risk", "complexity", "confidence", "search_bias"]
    keys = grid[["model", "k"]].drop_duplicates().sort_values(["model", "k"]).values.tolist()
    fig, axes = plt.subplots(1, len(keys), figsize=(3.6 * len(keys), 3.4), squeeze=False)
    for ax, (model, k) in zip(axes[0], keys):
        sub = grid[(grid.model == model) & (grid.k == k)]
        tau = sub.tau.min()
        sub = sub[sub.tau == tau].groupby("n").mean(numeric_only=True).reset_index()
        bottom = np.zeros(len(sub))
        for i, term in enumerate(terms):
            vals = sub[term].fillna(0.0).to_numpy()
            ax.bar(np.arange(len(sub)), vals, bottom=bottom, color=f"C{i}", label=term.replace("_", " "))
            bottom = bottom + vals
        observed = sub.search_ce if sub.search_bias.notna().all() else sub.test_risk - np.log(sub.k)
        ax.plot(np.arange(len(sub)), observed, "ko-", ms=4, label="observed")
        ax.set_xticks(np.arange(len(sub)), [str(int(v)) for v in sub.n])
        ax.set_xlabel("training tuples $n$")
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_title(f"{model}, k = {k}, tau = {tau:g}")
    axes[0, 0].set_ylabel("nats")
    axes[0, 0].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def fig_gap_vs_n(summary, tau_star: float, p_eff: float = 5.0, sphere: str = "vmf"):
    """The generalisation gap of ERM against n (vMF model, rows named ``sphere``), with the
    p_eff/n prediction.

    Args: table from :func:`gap_summary`.
    """
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    vmf = summary[summary.model == sphere]
    for i, ((tau, k), sub) in enumerate(vmf.groupby(["tau", "k"])):
        sub = sub.sort_values("n")
        label = f"tau = {tau:g}, k = {k}"
        ax1.errorbar(sub.n, sub.gap_cv, yerr=normal_quantile(0.95) * sub.gap_cv_se, fmt="o-", color=f"C{i}", ms=4, capsize=3,
                     label=label)
        ax2.errorbar(sub.n, sub.n_gap_cv, yerr=normal_quantile(0.95) * sub.n_gap_cv_se, fmt="o-", color=f"C{i}", ms=4, capsize=3,
                     label=label)
    ns = np.array([vmf.n.min(), vmf.n.max()], dtype=float)
    ax1.plot(ns, p_eff / ns, "k--", label=f"{p_eff:g}/n (prediction at tau = {tau_star:g})")
    ax1.plot(ns, p_eff / ns[0] * np.sqrt(ns[0] / ns), "k:", label=r"slope $-1/2$ (reference)")
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel("training tuples $n$")
    ax1.set_ylabel("E[gap] (nats)")
    ax1.legend(fontsize="x-small")
    ax2.axhline(p_eff, color="k", ls="--")
    ax2.set_xscale("log")
    ax2.set_xlabel("training tuples $n$")
    ax2.set_ylabel(r"$n \times$ E[gap]")
    fig.tight_layout()
    return fig
