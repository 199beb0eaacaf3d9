"""Chapter 2, ``book/c2_search.md``: InfoNCE as similarity search over unseen data (claim C2).

Runners take the page's models and sizes and return tidy tables (cached by configuration);
``ledger_*`` turn tables into claims-ledger records (each documents its verdict rule); ``fig_*``
draw the page's figures.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
import torch
from scipy import integrate

from ..experiment.cache import cached
from ..experiment.setup import ChapterContext, setup_chapter
from ..theory.exact import exact_bias
from ..theory.search import positive_rank, search_cross_entropy
from ..theory.stats import Estimate, coverage_interval, richardson_limit
from ..utils.device import resolve_device

STEM = "c2_search"

SIZES = {
    "smoke": {"k_max_log2": 14, "mc_ks": [4, 64, 1024], "mc_queries": 4000, "retrieval_ks": [1, 4, 16, 64, 256],
              "retrieval_queries": 4000},
    "standard": {"k_max_log2": 16, "mc_ks": [4, 64, 1024, 4096], "mc_queries": 20000,
                 "retrieval_ks": [1, 4, 16, 64, 256, 1024], "retrieval_queries": 20000},
    "full": {"k_max_log2": 18, "mc_ks": [4, 64, 1024, 16384], "mc_queries": 100000,
             "retrieval_ks": [1, 4, 16, 64, 256, 1024, 4096], "retrieval_queries": 100000},
}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)


def _require_vmf_s2(model) -> None:
    if not getattr(model, "identity_embedding", False) or getattr(model, "dim", None) != 3:
        raise ValueError(f"model must be the vMF model on S^2 (dim 3; its exact top-1 probability is a 1-D "
                         f"integral), got {model!r}")


@cached
def exact_curve(model, tau: float, ks: list):
    """Both sides of Theorem ``c2-thm-search`` against k, exactly, for ``model`` (vMF or finite).

    Columns: ``k, search_ce`` (``E[H(M_hat_k, Q_hat_k)] - log k``), ``risk`` (``L_k - log k``),
    ``risk_dec`` (decoupled), ``gap = search_ce - risk``, ``k_gap``, ``k_gap_dec``, ``d1``,
    ``d1_dec``, ``limit`` (``L_inf``), ``method``.
    """
    risk = model.limit_risk(tau) + exact_bias(model, ks, tau, "standard")
    risk_dec = model.limit_risk(tau) + exact_bias(model, ks, tau, "decoupled")
    d1, d1d = model.search_gap_constant(tau, "standard"), model.search_gap_constant(tau, "decoupled")
    search = model.search_cross_entropy_curve(ks, tau)
    rows = []
    for k, h, r, rd in zip(ks, search, risk, risk_dec):
        h, r, rd = float(h), float(r), float(rd)
        rows.append({"k": int(k), "search_ce": h, "risk": r, "risk_dec": rd, "gap": h - r,
                     "k_gap": k * (h - r), "k_gap_dec": k * (h - rd), "d1": d1, "d1_dec": d1d,
                     "limit": model.limit_risk(tau), "method": "laplace"})
    return pd.DataFrame(rows)


def _vmf3_top1_ideal(kappa: float, k: int) -> float:
    """P(the positive is ranked first among itself and k uniform items) for the ideal search on
    S^2: ``E[((1 + s+)/2)^k]`` with ``s+`` of density ``kappa e^{kappa s} / (2 sinh kappa)``."""
    log_norm = math.log(kappa) - (kappa + math.log1p(-math.exp(-2 * kappa)) - math.log(2.0)) - math.log(2.0)
    f = lambda s: math.exp(log_norm + kappa * s + k * math.log((1 + s) / 2)) if s > -1 else 0.0  # noqa: E731
    return integrate.quad(f, -1, 1, epsabs=1e-13, epsrel=1e-11, limit=200)[0]


@cached
def retrieval(model, tau: float, ks: list, n_queries: int, distortion: float, device: str, seed: int):
    """Retrieval on the vMF model on S^2 (``model``): for each query, a positive ``x+ ~ vMF(x, kappa)`` and k
    unseen uniform items; the rank of the positive under the ideal search (by ``m``, i.e. by
    ``<x, y>``) and under the softmax search of the embedding ``phi(x) = normalize(D x)``,
    ``D = diag(1, 1, distortion)`` (``distortion = 1``: ``phi`` is the identity).

    Columns: ``k, search, top1, top5, top1_low, top1_high`` (Clopper--Pearson 95%),
    ``top1_exact`` (ideal search only), ``diff_mean, diff_low, diff_high`` (paired top-1
    difference ideal - softmax, 95% normal interval), ``search_ce, ce_low, ce_high``
    (``H(M_hat, Q_hat) - log k`` for the distorted embedding), ``n_queries``.
    """
    _require_vmf_s2(model)
    kappa = model.kappa
    dev = resolve_device(device)
    D = torch.tensor([1.0, 1.0, distortion], dtype=torch.float64, device=dev)
    phi = lambda x: torch.nn.functional.normalize(x * D, dim=-1)  # noqa: E731
    log_zk = float(model.log_partition(kappa))
    rows = []
    for i, k in enumerate(ks):
        gen = torch.Generator(device=dev).manual_seed(seed + i)
        ranks_ideal, ranks_soft, ce = [], [], []
        batch = max(1, min(n_queries, 2**21 // k))
        for lo in range(0, n_queries, batch):
            n = min(batch, n_queries - lo)
            x, xp, db = model.sample_tuples(n, k, generator=gen, device=dev)
            s_ideal_db, s_ideal_pos = torch.einsum("bd,bkd->bk", x, db), (x * xp).sum(-1)
            px, pdb = phi(x), phi(db)
            s_soft_db, s_soft_pos = torch.einsum("bd,bkd->bk", px, pdb), (px * phi(xp)).sum(-1)
            ranks_ideal.append(positive_rank(s_ideal_pos, s_ideal_db).cpu())
            ranks_soft.append(positive_rank(s_soft_pos, s_soft_db).cpu())
            ce.append((search_cross_entropy(s_soft_db, kappa * s_ideal_db - log_zk, tau) - math.log(k)).cpu())
        ri, rs, ce = torch.cat(ranks_ideal).numpy(), torch.cat(ranks_soft).numpy(), torch.cat(ce).numpy()
        diff = (ri == 1).astype(float) - (rs == 1).astype(float)
        diff_est, ce_est = Estimate.from_samples(diff), Estimate.from_samples(ce)
        for name, r in (("ideal", ri), ("softmax", rs)):
            lo_, hi_ = coverage_interval(int((r == 1).sum()), len(r))
            rows.append({"k": int(k), "search": name, "top1": float((r == 1).mean()), "top5": float((r <= 5).mean()),
                         "top1_low": lo_, "top1_high": hi_,
                         "top1_exact": _vmf3_top1_ideal(kappa, k) if name == "ideal" else float("nan"),
                         "diff_mean": diff_est.mean, "diff_low": diff_est.ci_low, "diff_high": diff_est.ci_high,
                         "search_ce": ce_est.mean, "ce_low": ce_est.ci_low, "ce_high": ce_est.ci_high,
                         "n_queries": n_queries})
    return pd.DataFrame(rows)


def retrieval_summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per k: top-1 (ideal: Monte Carlo and exact; softmax), top-5, the paired top-1
    difference with its 95% interval, and the distorted embedding's search cross-entropy
    (Monte Carlo, 95% interval)."""
    ideal = table[table.search == "ideal"].set_index("k")
    soft = table[table.search == "softmax"].set_index("k")
    return pd.DataFrame({
        "top1 ideal (MC)": ideal["top1"], "top1 ideal (exact)": ideal["top1_exact"], "top1 softmax": soft["top1"],
        "top5 ideal": ideal["top5"], "top5 softmax": soft["top5"], "top1 ideal - softmax": ideal["diff_mean"],
        "diff low": ideal["diff_low"], "diff high": ideal["diff_high"],
        "H - log k (distorted, MC)": soft["search_ce"], "H low": soft["ce_low"], "H high": soft["ce_high"],
    }).round(4)


def ledger_exact(ledger, model, tau: float, k_ref: int = 2**12) -> dict:
    """``C2-d1-<model>-<variant>``: the constant ``d1`` of Theorem ``c2-thm-search`` (predicted,
    closed form) against ``k (E[H] - L_k)`` from the exact values extrapolated by
    :func:`richardson_limit` at ``k_ref/2, k_ref, 2 k_ref``; interval = +- (three times the
    change of the extrapolation + 1e-9)."""
    ks = [k_ref // 2, k_ref, 2 * k_ref]
    tab = exact_curve(model=model, tau=tau, ks=ks)
    out = {}
    for variant, col in (("standard", "k_gap"), ("decoupled", "k_gap_dec")):
        est, err = richardson_limit(tab["k"], tab[col])
        half = 3 * err + 1e-9
        pred = model.search_gap_constant(tau, variant)
        ledger.record(claim="C2", id=f"C2-d1-{model.name}-{variant}", quantity="search_gap_constant",
                      predicted=pred, measured=Estimate.exact(est, half, method="Richardson"),
                      params={**model.params, "tau": tau, "variant": variant, "k": 2 * k_ref})
        out[variant] = (pred, est)
    return out


def ledger_enumeration(ledger, model, tau: float, ks=(1, 2, 3)) -> pd.DataFrame:
    """``C2-enum-k<k>``: the exact (Laplace) search cross-entropy of the finite model against an
    independent enumeration of all databases; interval = enumeration +- 1e-10 (the issue's
    tolerance)."""
    rows = []
    for k in ks:
        enum = model.search_cross_entropy(k, tau, method="enumeration").value
        lap = model.search_cross_entropy(k, tau, method="laplace").value
        risk_e, risk_q = model.enumerate_centred_risk(k, tau), model.exact_centred_risk(k, tau)
        ledger.record(claim="C2", id=f"C2-enum-k{k}", quantity="search_cross_entropy", predicted=lap,
                      measured=Estimate.exact(enum, 1e-10, method="enumeration"),
                      params={**model.params, "tau": tau, "k": int(k), "check": "laplace vs enumeration"})
        rows.append({"k": k, "search_ce_enumeration": enum, "search_ce_laplace": lap,
                     "risk_enumeration": risk_e, "risk_laplace": risk_q})
    return pd.DataFrame(rows)


def ledger_monte_carlo(ledger, model, tau: float, ks, n_queries: int, device: str, seed: int) -> pd.DataFrame:
    """``C2-mc-k<k>``: Monte Carlo search cross-entropy on the vMF ``model`` (95% interval,
    Bonferroni over the ks) against the exact value."""
    rows = []
    for i, k in enumerate(ks):
        exact = model.search_cross_entropy(k, tau).value
        mc = model.search_cross_entropy(k, tau, method="monte_carlo", n_queries=n_queries, seed=seed + i, device=device)
        mc = mc.at_level(1 - 0.05 / len(ks))
        ledger.record(claim="C2", id=f"C2-mc-k{k}", quantity="search_cross_entropy", predicted=exact, measured=mc,
                      params={**model.params, "tau": tau, "k": int(k), "n_queries": n_queries,
                              "interval": f"Bonferroni, level 1-0.05/{len(ks)}"})
        rows.append({"k": k, "exact": exact, "monte_carlo": mc.value, "ci_low": mc.ci_low, "ci_high": mc.ci_high})
    return pd.DataFrame(rows)


def ledger_retrieval(ledger, table: pd.DataFrame, model, distortion: float) -> dict:
    """Records for the retrieval experiment (table from :func:`retrieval` with ``model``).

    * ``C2-top1-ideal-k<k>``: predicted = exact top-1 probability of the ideal search, measured
      = Monte Carlo frequency, Clopper--Pearson interval (Bonferroni over the ks).
    * ``C2-bayes-k<k>``: one-sided claim "ideal top-1 >= softmax top-1" (Proposition
      ``c2-prop-bayes``): predicted 0 is the smallest allowed value of the paired difference;
      passed unless the whole 95% interval lies below 0.
    """
    ideal = table[table.search == "ideal"]
    n_k = len(ideal)
    for _, row in ideal.iterrows():
        n = int(row["n_queries"])
        hits = int(round(row["top1"] * n))
        lo, hi = coverage_interval(hits, n, 1 - 0.05 / n_k)
        ledger.record(claim="C2", id=f"C2-top1-ideal-k{int(row['k'])}", quantity="top1_accuracy",
                      predicted=row["top1_exact"],
                      measured=Estimate.interval(row["top1"], lo, hi, level=1 - 0.05 / n_k, n=n,
                                                 method="Clopper-Pearson"),
                      params={**model.params, "k": int(row["k"]), "n_queries": n, "search": "ideal"})
        ledger.record(claim="C2", id=f"C2-bayes-k{int(row['k'])}", quantity="top1_ideal_minus_softmax",
                      predicted=0.0, measured=Estimate.interval(row["diff_mean"], row["diff_low"], row["diff_high"], n=n),
                      passed=row["diff_high"] >= 0.0,
                      params={**model.params, "k": int(row["k"]), "n_queries": n,
                              "distortion": distortion, "rule": "one-sided: passed unless ci_high < 0"})
    return {"max_diff": float(ideal["diff_mean"].max()), "min_diff": float(ideal["diff_mean"].min())}


def fig_search_vs_risk(tables: dict):
    """Both sides of Theorem c2-thm-search against k, one panel per model (``{name: table}``)."""
    fig, axes = plt.subplots(1, len(tables), figsize=(6.4 * len(tables) / 1.4, 4.0), squeeze=False)
    for ax, (name, t) in zip(axes[0], tables.items()):
        ax.plot(t["k"], t["search_ce"], "o-", ms=3, label=r"$\mathbb{E}[H(\hat M_k, \hat Q_k)] - \log k$")
        ax.plot(t["k"], t["risk"], "s--", ms=3, label=r"$L_k - \log k$")
        ax.axhline(t["limit"].iloc[0], color="grey", lw=1, ls=":", label=r"$L_\infty$")
        ax.set_xscale("log")
        ax.set_xlabel("database size / negatives $k$")
        ax.set_ylabel("nats")
        ax.set_title(name)
        ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def fig_k_gap(tables: dict):
    """``k (E[H] - L_k)`` against k with the limits ``d1`` (dashed), one line per model."""
    fig, ax = plt.subplots()
    for name, t in tables.items():
        line, = ax.plot(t["k"], t["k_gap"], "o-", ms=3, label=name)
        ax.axhline(t["d1"].iloc[0], color=line.get_color(), ls="--", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("database size / negatives $k$")
    ax.set_ylabel(r"$k\,(\mathbb{E}[H(\hat M_k,\hat Q_k)] - L_k)$ (nats)")
    ax.legend()
    return fig


def fig_retrieval_accuracy(table):
    """Top-1 and top-5 retrieval of the positive among k unseen items, ideal vs softmax search."""
    fig, ax = plt.subplots()
    for (search, style) in (("ideal", "-"), ("softmax", "--")):
        t = table[table.search == search]
        ax.errorbar(t["k"], t["top1"], yerr=[t["top1"] - t["top1_low"], t["top1_high"] - t["top1"]],
                    fmt="o" + style, ms=3, capsize=2, label=f"top-1, {search} search")
        ax.plot(t["k"], t["top5"], "s" + style, ms=3, alpha=0.7, label=f"top-5, {search} search")
    ideal = table[table.search == "ideal"]
    ax.plot(ideal["k"], ideal["top1_exact"], "k:", lw=1.5, label="top-1, ideal, exact")
    ax.set_xscale("log")
    ax.set_xlabel("number of unseen items $k$")
    ax.set_ylabel("retrieval accuracy")
    ax.legend(fontsize="small")
    return fig
