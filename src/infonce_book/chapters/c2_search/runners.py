"""Chapter 2's runners: a :class:`~.config.SearchSetup`, the page's models and sizes in, a tidy
table out, cached by configuration; and the values the page quotes from those tables."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import torch
from scipy import integrate

from ...experiment.cache import cached
from ...theory.exact import exact_bias
from ...theory.search import positive_rank, search_cross_entropy
from ...theory.stats import Estimate, coverage_interval
from ...utils.device import resolve_device
from .config import SearchSetup

__all__ = ["bayes_enumeration", "constants_table", "exact_curve", "exact_summary", "exercise_values",
           "gaussian_gap", "gaussian_gap_monte_carlo", "retrieval", "retrieval_summary", "retrieval_values"]


def _require_vmf_s2(model) -> None:
    if not getattr(model, "identity_embedding", False) or getattr(model, "dim", None) != 3:
        raise ValueError(f"model must be the vMF model on S^2 (dim 3; its exact top-1 probability is a 1-D "
                         f"integral), got {model!r}")


@cached
def exact_curve(setup: SearchSetup, model, ks: list):
    """Both sides of Theorem ``c2-thm-search`` against k, exactly, for ``model`` (vMF or finite)
    at ``setup.tau``.

    Columns: ``k, search_ce`` (``E[H(M_hat_k, Q_hat_k)] - log k``), ``risk`` (``L_k - log k``),
    ``risk_dec`` (decoupled), ``gap = search_ce - risk``, ``k_gap``, ``k_gap_dec``, ``d1``,
    ``d1_dec``, ``limit`` (``L_inf``), ``method``.
    """
    tau = setup.tau
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
def retrieval(setup: SearchSetup, model, ks: list, n_queries: int, device: str, seed: int):
    """Retrieval on the vMF model on S^2 (``model``): for each query, a positive ``x+ ~ vMF(x, kappa)`` and k
    unseen uniform items; the rank of the positive under the ideal search (by ``m``, i.e. by
    ``<x, y>``) and under the softmax search of the embedding ``phi(x) = normalize(A x)``,
    ``A = diag(1, 1, setup.distortion)`` (``distortion = 1``: ``phi`` is the identity); the
    search cross-entropy at ``setup.tau``.

    Columns: ``k, search, top1, top5, top1_low, top1_high`` (Clopper--Pearson 95%),
    ``top1_exact`` (ideal search only), ``diff_mean, diff_low, diff_high`` (paired top-1
    difference ideal - softmax, 95% normal interval), ``search_ce, ce_low, ce_high``
    (``H(M_hat, Q_hat) - log k`` for the distorted embedding), ``n_queries``.
    """
    _require_vmf_s2(model)
    tau, distortion = setup.tau, setup.distortion
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


@cached
def gaussian_gap(setup: SearchSetup, model, ks: list, nodes: list, check_nodes: list):
    """The exact search gap of the Gaussian ``model`` with ``phi(x) = x/|x|``
    (:meth:`~infonce_book.models.GaussianModel.exact_search_gap_of_direction`) at ``setup.tau`` and
    two quadrature sizes; the error of each value is the difference between them.

    Columns: ``k, gap, error, k_gap, k_error, d1, model_constant, uniform_constant, r_bar`` and
    the worst quadrature diagnostics ``em2_rel_err, k1_identity``.
    """
    n_r, n_t, n_p = nodes
    a = model.exact_search_gap_of_direction(ks, setup.tau, n_r=n_r, n_theta=n_t, per_panel=n_p)
    n_r, n_t, n_p = check_nodes
    b = model.exact_search_gap_of_direction(ks, setup.tau, n_r=n_r, n_theta=n_t, per_panel=n_p)
    err = np.abs(a["gap"] - b["gap"])
    return pd.DataFrame({"k": a["k"], "gap": a["gap"], "error": err, "k_gap": np.array(a["k"]) * a["gap"],
                         "k_error": np.array(a["k"]) * err, "d1": a["d1"], "d1_check": b["d1"],
                         "model_constant": a["model_constant"], "uniform_constant": a["uniform_constant"],
                         "r_bar": a["r_bar"], "em2_rel_err": a["em2_rel_err"], "k1_identity": a["k1_identity"]})


@cached
def gaussian_gap_monte_carlo(setup: SearchSetup, model, ks: list, n_queries: int, device: str, seed: int,
                             batch_size: int = 10000):
    """Monte Carlo of ``E H(M_hat_k, Q_hat_k) - L_k`` for ``phi(x) = x/|x|`` on a Euclidean model
    (any model with ``sample_tuples``, ``sample_positive`` and ``log_density_ratio``): per query,
    with the tuple's negatives as the unseen database and ``setup.n_positives`` positives ``x+_r``,
    ``mean_r [-beta (I_hat_k - s(x, x+_r)) - log(1 + W+_r / sum_j W_j)]``, whose mean is the gap
    (``E[s(x, x+) | x] = I_s(x)``; several positives only reduce the variance), at ``setup.tau``.
    95% intervals; seeds ``seed + i``.

    Columns: ``k, mean, se, n_queries``.
    """
    beta, n_positives = 1.0 / setup.tau, setup.n_positives
    dev = resolve_device(device)
    unit = lambda z: torch.nn.functional.normalize(z, dim=-1)  # noqa: E731
    rows = []
    for i, k in enumerate(ks):
        gen = torch.Generator(device=dev).manual_seed(seed + i)
        vals = []
        for lo in range(0, n_queries, batch_size):
            n = min(batch_size, n_queries - lo)
            x, _, db = model.sample_tuples(n, k, generator=gen, device=dev)
            xp = model.sample_positive(x.repeat_interleave(n_positives, 0), generator=gen).reshape(n, n_positives, -1)
            ex = unit(x)
            s_db = torch.einsum("bd,bkd->bk", ex, unit(db))
            s_pos = torch.einsum("bd,brd->br", ex, unit(xp))
            i_hat = (torch.softmax(model.log_density_ratio(x, db), dim=1) * s_db).sum(1, keepdim=True)
            lse = torch.logsumexp(beta * s_db, dim=1, keepdim=True)
            g = -beta * (i_hat - s_pos) - torch.log1p(torch.exp(beta * s_pos - lse))
            vals.append(g.mean(1).cpu().numpy())
        est = Estimate.from_samples(np.concatenate(vals))
        rows.append({"k": int(k), "mean": est.mean, "se": est.se, "n_queries": int(n_queries)})
    return pd.DataFrame(rows)


def bayes_enumeration(model, k: int, softmax_embeddings=None) -> dict:
    """Proposition ``c2-prop-bayes`` on a finite ``model``, by enumerating every query ``x``, every
    position ``J`` of the positive and every candidate list ``c`` of ``k + 1`` points.

    * ``posterior_max_diff``: the largest difference between Bayes' formula from the joint law,
      ``P(J = j | x, c) = M(x, c_j) prod_{i != j} pi(c_i) / sum_l (...)``, and ``m(x, c_j) / sum_i m(x, c_i)``;
    * ``bayes_accuracy``: ``E max_j P(J = j | x, c)``, the best top-1 accuracy of any rule;
    * ``ideal_accuracy``: the top-1 accuracy of ranking by ``m`` (ties broken uniformly), summed
      over (x, J, c) with the indicator of a hit -- computed without the posterior;
    * ``softmax_accuracy``: the same for the softmax search of an embedding (``softmax_embeddings``,
      (N, d) unit rows; the model's own when None); the temperature does not change a ranking.
    """
    k = int(k)
    N = model.N
    emb = model.embeddings if softmax_embeddings is None else np.asarray(softmax_embeddings, dtype=float)
    S = emb @ emb.T
    cands = np.array(list(itertools.product(range(N), repeat=k + 1)))
    log_pi, log_M = np.log(model.pi), np.log(model.kernel)
    max_diff = bayes = ideal = soft = 0.0
    for x in range(N):
        # joint[c, j] = P(c, J = j | x) = (1/(k+1)) M(x, c_j) prod_{i != j} pi(c_i)
        lp = log_pi[cands]
        joint = np.exp(lp.sum(axis=1, keepdims=True) - lp + log_M[x][cands]) / (k + 1)
        post = joint / joint.sum(axis=1, keepdims=True)
        m = model.m[x][cands]
        max_diff = max(max_diff, float(np.abs(post - m / m.sum(axis=1, keepdims=True)).max()))
        bayes += model.pi[x] * float(joint.sum(axis=1) @ post.max(axis=1))
        hits = []
        for score in (m, S[x][cands]):
            top = np.isclose(score, score.max(axis=1, keepdims=True), rtol=0, atol=1e-12)
            hits.append(float((joint * top / top.sum(axis=1, keepdims=True)).sum()))
        ideal += model.pi[x] * hits[0]
        soft += model.pi[x] * hits[1]
    return {"posterior_max_diff": max_diff, "bayes_accuracy": bayes, "ideal_accuracy": ideal,
            "softmax_accuracy": soft, "k": k, "n_lists": int(len(cands))}


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


def retrieval_values(table: pd.DataFrame, exact_table: pd.DataFrame, k: int = 16) -> dict:
    """The values the page quotes at ``k`` from :func:`retrieval` and the vMF :func:`exact_curve`:
    top-1 of both searches (Monte Carlo) and the exact ideal top-1, the distorted embedding's
    search cross-entropy (Monte Carlo) and the identity's (exact)."""
    row = table[table.k == k].set_index("search")
    return {f"top1_ideal_{k}": float(row.loc["ideal", "top1"]), f"top1_softmax_{k}": float(row.loc["softmax", "top1"]),
            f"top1_exact_{k}": float(row.loc["ideal", "top1_exact"]),
            f"ce_distorted_{k}": float(row.loc["softmax", "search_ce"]),
            f"ce_identity_{k}": float(exact_table.loc[exact_table.k == k, "search_ce"].iloc[0])}


def exact_summary(vmf_table: pd.DataFrame, finite_table: pd.DataFrame) -> dict:
    """The values the page quotes from the two exact tables of :func:`exact_curve`."""
    return {"k_max": int(vmf_table.k.max()), "d1_vmf": float(vmf_table.d1.iloc[0]),
            "d1_vmf_dec": float(vmf_table.d1_dec.iloc[0]), "d1_fin": float(finite_table.d1.iloc[0]),
            "kgap_vmf_kmax": float(vmf_table.k_gap.iloc[-1]), "kgap_fin_kmax": float(finite_table.k_gap.iloc[-1])}


def constants_table(setup: SearchSetup, model, exact_table: pd.DataFrame) -> pd.DataFrame:
    """The constants of Theorem ``c2-thm-search`` for the vMF ``model`` at ``setup.tau``
    (model-specific and uniform, floor-free and with the bounded-ratio ``m_min`` form) and the
    largest measured ``|k (E H - L_k)|`` of ``exact_table`` (from :func:`exact_curve`)."""
    c = model.search_bias_constants(setup.tau)
    worst = float(exact_table.k_gap.abs().max())
    rows = [("model moments, no floor (this chapter)", c["model"]),
            ("uniform $C_H(\\tau)$, no floor (this chapter)", c["uniform"]),
            (r"model moments, with $m_{\min}$", c["model_m_min"]), (r"uniform, with $m_{\min}$", c["uniform_m_min"])]
    return pd.DataFrame([{"constant": name, "value": v, "max_k |k (E H - L_k)| / constant": worst / v}
                         for name, v in rows])


def exercise_values(setup: SearchSetup, exercise_models: list, exercise_vmfs: list) -> dict:
    """The numbers the exercises ask for, computed (the solutions glue them).

    * enumeration exercise (finite models): the largest difference between enumeration and the
      Laplace integrals at k = 1, 2, 3, and per model ``d1``, ``k (E H - L_k)`` at ``setup.k_large``,
      the SNIS term ``beta E Cov_M(m, s)`` and ``E u1``;
    * floor exercise (vMF models, kappa 1 and 8 in this order): the SNIS parts ``beta B_S`` and
      ``beta sd(m) sd(m (s - I)) / m_min`` (``model_m_min`` minus ``u1/a``).
    """
    tau, k_large = setup.tau, setup.k_large
    out = {"enum_max_diff": 0.0}
    margins = []
    for i, fm in enumerate(exercise_models):
        diff = max(abs(fm.search_cross_entropy(k, tau, method="enumeration").value
                       - fm.search_cross_entropy(k, tau, method="laplace").value) for k in (1, 2, 3))
        d1, d1_dec = fm.search_gap_constant(tau), fm.search_gap_constant(tau, "decoupled")
        kgap = k_large * (fm.search_cross_entropy(k_large, tau).value - fm.exact_centred_risk(k_large, tau))
        out["enum_max_diff"] = max(out["enum_max_diff"], float(diff))
        out.update({f"d1_{i}": d1, f"kgap_{i}": kgap, f"snis_{i}": d1_dec, f"u1_{i}": d1_dec - d1})
        margins.append(-d1)
    out["min_margin"] = float(min(margins))
    beta = 1.0 / tau
    for vm in exercise_vmfs:
        c = vm.search_bias_constants(tau)
        u1_over_a = math.exp(beta + float(vm.log_partition(vm.kappa + beta)) - float(vm.log_partition(vm.kappa)))
        out[f"snis_new_k{vm.kappa:g}"] = beta * c["B_S"]
        out[f"snis_old_k{vm.kappa:g}"] = c["model_m_min"] - u1_over_a
    return {key: float(v) for key, v in out.items()}
