"""Chapter 3, ``book/c3_temperature.md``: temperature as a regulariser of the similarity search
(claim C3).

Runners take the page's model and sizes and return tidy tables (cached by configuration);
``ledger`` turns tables into claims-ledger records (it documents its verdict rules); ``fig_*``
draw the page's figures.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from scipy import optimize

from ..experiment.cache import cached
from ..experiment.setup import ChapterContext, setup_chapter
from ..learning.training import fit_linear_embeddings, fit_temperature
from ..models import VonMisesFisher
from ..theory.bounds import antipodal_kl, kl_softmax_bound, loss_range
from ..theory.search import empirical_kl_softmax_interval
from ..theory.stats import Estimate, linear_slope, normal_quantile
from ..utils.device import one_thread, resolve_device

STEM = "c3_temperature"

SIZES = {
    "smoke": {"taus": [0.1, 0.2, 0.5, 1.0, 2.0, 5.0], "kl_queries": 256, "kl_sample": 1024, "learn_k": 64,
              "learn_seeds": 3, "learn_steps": 200, "learn_batch": 128, "gap_taus": [0.05, 0.1, 0.25, 1.0],
              "gap_n_train": 32, "gap_steps": 150, "gap_test": 5000, "gap_sets": 4},
    "standard": {"taus": [0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0], "kl_queries": 512, "kl_sample": 4096,
                 "learn_k": 64, "learn_seeds": 5, "learn_steps": 400, "learn_batch": 256,
                 "gap_taus": [0.05, 0.1, 0.2, 0.5, 1.0, 2.0], "gap_n_train": 32, "gap_steps": 300,
                 "gap_test": 20000, "gap_sets": 10},
    "full": {"taus": [0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0, 10.0], "kl_queries": 2048, "kl_sample": 16384,
             "learn_k": 256, "learn_seeds": 8, "learn_steps": 800, "learn_batch": 1024,
             "gap_taus": [0.05, 0.1, 0.2, 0.5, 1.0, 2.0], "gap_n_train": 32, "gap_steps": 500,
             "gap_test": 100000, "gap_sets": 40},
}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)


def _two_cluster_sample(n: int, dim: int, gen, dev):
    """Two antipodal clusters: half the points at +e_1, half at -e_1 (the adversarial case)."""
    e = torch.zeros(dim, dtype=torch.float64, device=dev)
    e[0] = 1.0
    sign = torch.where(torch.rand(n, generator=gen, device=dev, dtype=torch.float64) < 0.5, 1.0, -1.0)
    return sign.unsqueeze(-1) * e


@cached
def kl_sweep(taus: list, n_queries: int, n_sample: int, device: str, seed: int, trained_A: list | None = None,
             dims: tuple = (3, 16)):
    """``E_x KL(Q_tau(x, .) || pi)`` against tau for several embeddings, with 95% intervals.

    Embeddings: ``vmf identity`` (data uniform on S^2: ``dims[0] = 3``; closed form, and empirical),
    ``random 16-d`` (data uniform on S^15: ``dims[1] = 16``), ``two antipodal clusters`` (closed form ``beta tanh beta - log cosh beta``), and
    ``trained linear`` (``phi(x) = A x/|A x|`` on S^2 with the given matrix A) when given.
    Columns: ``tau, embedding, kl, kl_se, kl_low, kl_high, closed_form, bound``.
    """
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    # Uniform data on the sphere: the vMF model's pi (its kappa plays no role here).
    vmf3, unif16 = VonMisesFisher(dims[0], 0.0), VonMisesFisher(dims[1], 0.0)
    A = torch.tensor(trained_A, dtype=torch.float64, device=dev) if trained_A is not None else None
    rows = []
    for tau in taus:
        emb = {"vmf identity": (vmf3.sample_data, lambda v: v, 3),
               "random 16-d": (unif16.sample_data, lambda v: v, 16),
               "two antipodal clusters": (lambda n, **kw: _two_cluster_sample(n, 3, gen, dev), lambda v: v, 3)}
        if A is not None:
            emb["trained linear"] = (vmf3.sample_data, lambda v: torch.nn.functional.normalize(v @ A.T, dim=-1), 3)
        for name, (sampler, phi, dim) in emb.items():
            q = phi(sampler(n_queries, generator=gen, device=dev))
            smp = phi(sampler(n_queries * n_sample, generator=gen, device=dev)).reshape(n_queries, n_sample, dim)
            est = empirical_kl_softmax_interval(q, smp, tau)
            closed = {"vmf identity": vmf3.kl_softmax_vs_data(tau), "random 16-d": unif16.kl_softmax_vs_data(tau),
                      "two antipodal clusters": antipodal_kl(tau)}.get(name, float("nan"))
            rows.append({"tau": tau, "embedding": name, "kl": est.mean, "kl_se": est.se, "kl_low": est.ci_low,
                         "kl_high": est.ci_high,
                         "closed_form": closed, "bound": kl_softmax_bound(tau)})
    return pd.DataFrame(rows)


@cached
def learned_tau(model, k: int, n_seeds: int, steps: int, batch_size: int, device: str, seed: int):
    """Learn tau on the vMF ``model`` (phi = identity) from several seeds
    (:func:`~infonce_book.learning.training.fit_temperature`).

    Columns: ``seed, tau`` (average of the last half of the iterates), ``k``.
    """
    rows = [{"seed": seed + i, "k": k,
             "tau": fit_temperature(model, k, batch_size=batch_size, steps=steps, tail=steps // 2,
                                    seed=seed + i, device=device)["tau"]} for i in range(n_seeds)]
    return pd.DataFrame(rows)


@cached
def gap_across_taus(model, taus: list, n_train: int, k: int, steps: int, device: str, seed: int,
                    n_test: int = 20000, n_sets: int = 1):
    """Train ``phi(x) = A x/|A x|`` by ERM at each tau on each of ``n_sets`` independent training
    sets (set ``j``: the tuples, initial matrix and test tuples of seed ``seed + j``, the same for
    every tau; :func:`~infonce_book.learning.training.fit_linear_embeddings`). Report the empirical
    risk, the risk on fresh tuples and the gap (with a 95% interval from the test sample), in nats;
    the loss's range ``B_k`` (:func:`~infonce_book.theory.bounds.loss_range`, the scale of the
    McDiarmid term of the combined bound) and ``gap_over_range = gap / B_k``; and two sensitivity
    constants: ``2 beta`` (the loss is 2 beta-Lipschitz in the similarity vector, sup norm) and
    ``beta e^{2 beta}/(k+1)`` (the per-negative factor of the averaging bound of the C4 chapter,
    which grows exponentially as tau -> 0). ``model``: the vMF model of the page.

    Rows are ordered by set, then tau (set 0 is the single run of earlier versions).
    """
    z = normal_quantile(0.95)
    with one_thread():
        fits = fit_linear_embeddings(model, taus, n_sets=n_sets, n_train=n_train, k=k, steps=steps, seed=seed,
                                     device=device, n_test=n_test)
    rows = []
    for j, per_tau in enumerate(fits):
        for tau, r in zip(taus, per_tau):
            beta = 1.0 / tau
            gap = r["test_risk"] - r["train_risk"]
            b_k = loss_range(k, tau)
            rows.append({"set": j, "tau": tau, "train_risk": r["train_risk"], "test_risk": r["test_risk"],
                         "gap": gap, "gap_low": gap - z * r["test_se"], "gap_high": gap + z * r["test_se"],
                         "range_bk": b_k, "gap_over_range": gap / b_k,
                         "linf_lipschitz": 2 * beta, "averaging_factor": beta * math.exp(2 * beta) / (k + 1),
                         "A": r["A"].cpu().numpy().tolist()})
    return pd.DataFrame(rows)


def gap_summary(gap: pd.DataFrame) -> pd.DataFrame:
    """Per tau, over the training sets: the gap (nats) and the normalised gap ``gap / B_k`` with
    95% Student-t intervals, and the mean empirical risk."""
    rows = []
    for tau, sub in gap.groupby("tau"):
        g = Estimate.from_samples(sub.gap.to_numpy(), t=True, method="training sets")
        r = Estimate.from_samples(sub.gap_over_range.to_numpy(), t=True, method="training sets")
        rows.append({"tau": tau, "train_risk": sub.train_risk.mean(), "gap": g.mean, "gap_low": g.ci_low,
                     "gap_high": g.ci_high, "range_bk": sub.range_bk.iloc[0], "gap_over_range": r.mean,
                     "ratio_low": r.ci_low, "ratio_high": r.ci_high, "n_sets": g.n})
    return pd.DataFrame(rows)


def ledger_gap(ledger, gap: pd.DataFrame, model) -> dict:
    """Ledger record of the gap-versus-temperature experiment, and the page's numbers.

    ``C3-gap-range-below-tau-star``: the claim of earlier versions of the page, "embeddings
    trained at lower temperatures generalised worse", in the units of the loss's range: the
    least-squares slope of ``gap / B_k`` against ``log tau`` over the temperatures ``tau <= 1/kappa``
    (below the model's optimal temperature, Proposition ``c3-prop-tau``), all sets pooled; one-sided,
    passed when the 95% interval of the slope lies below 0. Above ``1/kappa`` the page reports the
    same slope without a record (no prediction is made there).
    """
    tau_star = 1.0 / model.kappa
    out = {}
    for side, sub in (("below", gap[gap.tau <= tau_star + 1e-12]), ("above", gap[gap.tau > tau_star])):
        if sub.tau.nunique() < 2:
            out.update({f"slope_{side}": float("nan"), f"slope_{side}_low": float("nan"),
                        f"slope_{side}_high": float("nan")})
            continue
        slope = linear_slope(np.log(sub.tau.to_numpy(float)), sub.gap_over_range.to_numpy())
        out.update({f"slope_{side}": slope.mean, f"slope_{side}_low": slope.ci_low,
                    f"slope_{side}_high": slope.ci_high})
        if side == "below":
            ledger.record(claim="C3", id="C3-gap-range-below-tau-star", quantity="slope of gap/B_k against log tau",
                          predicted=0.0, measured=slope, passed=slope.ci_high < 0.0,
                          params={**model.params, "taus": sorted(float(t) for t in sub.tau.unique()),
                                  "n_sets": int(gap.set.nunique()), "k": 16,
                                  "rule": "one-sided: passed when ci_high < predicted (worse at lower tau)"})
    summary = gap_summary(gap)
    lo, hi = summary.iloc[0], summary.iloc[-1]
    best = summary.loc[summary.gap_over_range.idxmin()]
    out.update({"gap_sets": int(gap.set.nunique()), "gap_tau_min": float(lo.tau), "gap_tau_max": float(hi.tau),
                "ratio_small": float(lo.gap_over_range), "ratio_small_low": float(lo.ratio_low),
                "ratio_small_high": float(lo.ratio_high), "ratio_large": float(hi.gap_over_range),
                "ratio_large_low": float(hi.ratio_low), "ratio_large_high": float(hi.ratio_high),
                "ratio_best": float(best.gap_over_range), "ratio_best_tau": float(best.tau),
                "ratio_best_low": float(best.ratio_low), "ratio_best_high": float(best.ratio_high),
                "gap_small": float(lo.gap), "gap_large": float(hi.gap), "optimal_tau": tau_star})
    out = {key: float(v) for key, v in out.items()}
    interior = summary.tau.iloc[0] < best.tau < summary.tau.iloc[-1]
    out["shape"] = ("smallest inside the range of temperatures (U-shaped)" if interior
                    else "smallest at an end of the range of temperatures")
    lo_above, hi_above = out["slope_above_low"], out["slope_above_high"]
    out["above_trend"] = ("grows again" if lo_above > 0 else "keeps falling" if hi_above < 0
                          else "shows no clear trend")
    return out


def ledger(ledger, kl: pd.DataFrame, learned: pd.DataFrame, model) -> dict:
    """Ledger records of the C3 chapter.

    * ``C3-bound-<embedding>``: one-sided, ``max_tau KL / bound <= 1`` using the upper end of each
      95% interval (passed when that maximum is at most 1).
    * ``C3-kl-vmf-tau<tau>``: the closed form ``beta A_3(beta) - log Z_3(beta)`` against the
      empirical KL (95% interval, Bonferroni over the taus; the log-of-a-mean bias is O(1/n)).
    * ``C3-tau-star``: ``argmin_tau L_inf(tau)`` by numerical minimisation of the closed form
      against ``1/kappa`` (interval: the optimiser's tolerance).
    * ``C3-learned-tau``: the learned temperature (mean over seeds, 95% t-interval) against
      ``1/kappa``, which Proposition ``c3-prop-tau`` shows minimises ``L_k`` for every k.
    """
    out = {}
    for name, t in kl.groupby("embedding"):
        ratio = float((t["kl_high"] / t["bound"]).max())
        lo = float((t["kl_low"] / t["bound"]).max())
        ledger.record(claim="C3", id=f"C3-bound-{name.replace(' ', '-')}", quantity="max_kl_over_bound",
                      predicted=1.0, measured=float((t["kl"] / t["bound"]).max()), ci_low=min(lo, ratio),
                      ci_high=ratio, passed=ratio <= 1.0,
                      params={"embedding": name, "taus": [float(v) for v in t["tau"]],
                              "rule": "one-sided: passed when the interval's upper end is <= 1"})
        out[f"ratio_{name}"] = float((t["kl"] / t["bound"]).max())
    vm = kl[kl.embedding == "vmf identity"]
    for _, r in vm.iterrows():
        est = Estimate(r["kl"], r["kl_se"], None, 1 - 0.05 / len(vm), method="monte carlo")
        ledger.record(claim="C3", id=f"C3-kl-vmf-tau{r['tau']:g}", quantity="kl_softmax_vs_data",
                      predicted=r["closed_form"], measured=est,
                      params={"model": "vmf", "dim": 3, "tau": float(r["tau"]), "embedding": "identity"})
    kappa = model.kappa
    res = optimize.minimize_scalar(model.limit_risk, bounds=(0.01, 10.0), method="bounded", options={"xatol": 1e-9})
    ledger.record(claim="C3", id="C3-tau-star", quantity="argmin_limit_risk", predicted=1.0 / kappa,
                  measured=Estimate.exact(float(res.x), 1e-7, method="bounded Brent"),
                  params={**model.params, "optimiser": "bounded Brent, xatol 1e-9"})
    est = Estimate.from_samples(learned["tau"].to_numpy(), t=True, method="seeds")
    ledger.record(claim="C3", id="C3-learned-tau", quantity="learned_tau", predicted=1.0 / kappa, measured=est,
                  params={**model.params, "k": int(learned["k"].iloc[0]), "n_seeds": est.n})
    out.update({"tau_star": float(res.x), "learned_tau": est.mean, "learned_low": est.ci_low,
                "learned_high": est.ci_high})
    return {key: float(v) for key, v in out.items()}  # plain floats: glue cannot format NumPy scalars


def fig_gap_vs_tau(table):
    """Gap of the embeddings trained at each tau over several training sets: in nats (left) and
    divided by the loss's range ``B_k`` (right); means over sets with 95% t-intervals, the single
    sets as dots."""
    summary = gap_summary(table)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, col, lo, hi, lab in ((axes[0], "gap", "gap_low", "gap_high", "gap (nats)"),
                                 (axes[1], "gap_over_range", "ratio_low", "ratio_high", r"gap / $B_k$")):
        ax.plot(table["tau"], table[col], ".", color="0.6", ms=4, label="one training set")
        ax.errorbar(summary["tau"], summary[col], yerr=[summary[col] - summary[lo], summary[hi] - summary[col]],
                    fmt="o-", capsize=3, color="C0", label="mean, 95% interval")
        ax.set_xscale("log")
        ax.set_xlabel(r"temperature $\tau$")
        ax.set_ylabel(lab)
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    return fig


def fig_kl_vs_tau(table):
    """``E_x KL(Q_tau(x, .) || pi)`` against tau per embedding, with the uniform bound."""
    fig, ax = plt.subplots()
    for name, t in table.groupby("embedding", sort=False):
        eb = ax.errorbar(t["tau"], t["kl"], yerr=[t["kl"] - t["kl_low"], t["kl_high"] - t["kl"]], fmt="o",
                         ms=4, capsize=2, label=name)
        if t["closed_form"].notna().all():
            ax.plot(t["tau"], t["closed_form"], "-", color=eb[0].get_color(), lw=1)
    b = table.drop_duplicates("tau").sort_values("tau")
    ax.plot(b["tau"], b["bound"], "k-", lw=2, label=r"bound $\min(1/(2\tau^2), 2/\tau)$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"temperature $\tau$")
    ax.set_ylabel(r"$\mathrm{KL}(Q_\tau \,\|\, \pi)$ (nats)")
    ax.legend(fontsize="small")
    return fig
