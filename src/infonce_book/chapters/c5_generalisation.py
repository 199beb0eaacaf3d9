"""Chapter 5, ``book/c5_generalisation.md``: the generalisation bound for similarity search with
sharp constants and a PAC-Bayes certificate (claim C6), and the generalisation gap of trained
embeddings on synthetic models (claim C7).

Runners take the page's models and sizes and return tidy tables (cached by configuration, one
training cell at a time); ``ledger_*`` turn tables into claims-ledger records (each documents its
verdict rule); ``fig_*`` draw the page's figures; :func:`glue_all` glues a runner's numbers.
"""

from __future__ import annotations

import math
import zlib

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ..experiment.cache import cached
from ..experiment.ledger import Rule
from ..experiment.prose import join_words
from ..experiment.setup import ChapterContext, setup_chapter
from ..learning.embeddings import loss_per_tuple, reference_embedding
from ..learning.training import fit
from ..theory.bounds import (
    embedding_lipschitz_constant,
    loss_lipschitz_constant,
    loss_range,
    max_negative_weight,
    rademacher_covering_bound,
    search_bias_bounds,
    search_bias_constant,
    theorem1_terms,
    vector_contraction_bound,
)
from ..theory.pacbayes import gaussian_kl_isotropic, kl_inverse_upper, log_xi, pac_bayes_kl_certificate
from ..theory.search import search_cross_entropy
from ..theory.stats import Estimate, fit_loglog_slope, normal_quantile, weighted_linear_fit
from ..utils.device import one_thread, resolve_device
from ..utils.progress import progress

STEM = "c5_generalisation"

# Training cells. Each block trains every (tau, k, n, seed) of its lists; "tau" names the page's
# temperatures ("star" = 1/kappa, "other" = the second one). "gap": the block's cells enter the
# generalisation-gap experiment (exact full-batch ERM needed); "batch": minibatch size (None: full
# batch) -- the bounds hold for every theta, so ERM need not be exact for them.
SIZES = {
    "smoke": {"blocks": [
        {"model": "vmf", "taus": ["star"], "ks": [16], "ns": [256, 512, 2048], "seeds": 2, "gap": True},
        {"model": "gaussian", "taus": ["other"], "ks": [4], "ns": [256], "seeds": 1, "gap": False}],
        "steps": 200, "test_elements": 360_000, "n_test": 5000, "pb_pilot_elements": 18_432,
        "pb_final_elements": 900_000},
    "standard": {"blocks": [
        {"model": "vmf", "taus": ["star"], "ks": [4, 16], "ns": [256, 512, 1024, 2048, 4096], "seeds": 3,
         "gap": True},
        {"model": "vmf", "taus": ["other"], "ks": [4, 16], "ns": [256, 1024, 4096], "seeds": 2, "gap": True},
        {"model": "vmf", "taus": ["star", "other"], "ks": [256], "ns": [256, 1024], "seeds": 2, "gap": False,
         "batch": 256},
        {"model": "gaussian", "taus": ["other"], "ks": [4, 16], "ns": [256, 1024], "seeds": 2, "gap": False}],
        "steps": 300, "test_elements": 360_000, "n_test": 20000, "pb_pilot_elements": 36_864,
        "pb_final_elements": 1_800_000},
    "full": {"blocks": [
        {"model": "vmf", "taus": ["star", "other"], "ks": [4, 16], "ns": [256, 512, 1024, 2048, 4096, 8192, 16384],
         "seeds": 5, "gap": True},
        {"model": "vmf", "taus": ["star", "other"], "ks": [256], "ns": [256, 1024, 4096, 16384, 65536], "seeds": 3,
         "gap": False, "batch": 1024},
        {"model": "gaussian", "taus": ["other"], "ks": [4, 16, 64], "ns": [256, 1024, 8192], "seeds": 4,
         "gap": False}],
        "steps": 400, "test_elements": 4_000_000, "n_test": 100000, "pb_pilot_elements": 147_456,
        "pb_final_elements": 7_200_000},
}

#: PAC-Bayes design, fixed before any data: prior scales (a grid paid for by a union bound) and
#: posterior-to-prior scale ratios (free: the bound holds for every posterior at once).
PRIOR_SCALES = tuple(0.5 * 2.0 ** (-j / 2) for j in range(16))
POSTERIOR_RATIOS = (1.0, 0.5, 0.25, 0.125)


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)



# ---------------------------------------------------------------------------------------------
# Constants of the models


def vmf_search_constant(model, tau: float) -> float:
    """``C_H(tau)`` of Corollary ``c5-cor-search-constant`` for the vMF ``model``:
    ``m = e^{kappa s}/Z(kappa)`` has ``m_min = e^{-kappa}/Z(kappa)``, ``E_pi m^2 = Z(2 kappa)/Z(kappa)^2``
    under every x."""
    kappa = model.kappa
    log_z1, log_z2 = model.log_partition(kappa), model.log_partition(2 * kappa)
    second = math.exp(log_z2 - 2 * log_z1)
    return search_bias_constant(tau, sd_m=math.sqrt(max(second - 1.0, 0.0)), second_moment_m=second,
                                m_min=math.exp(-kappa - log_z1))


def vmf_ratio_moments(model) -> dict:
    """Moments of ``m = e^{kappa s}/Z(kappa)`` under ``pi`` for the vMF ``model`` (the same for
    every anchor): ``E_pi m^j = Z(j kappa)/Z(kappa)^j``. Returns the keyword arguments of
    :func:`~infonce_book.theory.bounds.search_bias_bounds` (``e_m2, var_m, sd_M_m, e_m_mminus1_sq,
    mu4``). Source: book, Proposition ``c5-prop-search-bias``."""
    lz = lambda b: float(model.log_partition(b))  # noqa: E731
    e = {j: math.exp(lz(j * model.kappa) - j * lz(model.kappa)) for j in (2, 3, 4)}
    return {"e_m2": e[2], "var_m": e[2] - 1.0, "sd_M_m": math.sqrt(max(e[3] - e[2] ** 2, 0.0)),
            "e_m_mminus1_sq": e[3] - 2.0 * e[2] + 1.0, "mu4": e[4] - 4.0 * e[3] + 6.0 * e[2] - 3.0}


def gaussian_ratio_moments(model) -> dict:
    """``E_x E_pi m(x, .)^2 = (1 - rho^2)^(-dim)`` for the Gaussian ``model`` (sympy:
    :func:`~infonce_book.theory.symbolic.gaussian_ratio_second_moment`); the keyword arguments of
    :func:`~infonce_book.theory.bounds.search_bias_bounds` (second-moment form only)."""
    return {"e_m2": (1.0 - model.rho**2) ** (-model.dim)}


def smallest_n_below(lipschitz: float, radius: float, n_params: int, target: float) -> int:
    """Smallest n with ``2 * rademacher_covering_bound(lipschitz, radius, n_params, n) < target``
    (the bound decreases in n; bisection over integers)."""
    def term(n):
        return 2.0 * rademacher_covering_bound(lipschitz, radius, n_params, int(n))

    hi = 1
    while term(hi) >= target:
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if term(mid) >= target else (lo, mid)
    return int(hi)


# ---------------------------------------------------------------------------------------------
# Cells


def cells(size: dict, tau_star: float, tau_other: float) -> list:
    """The training cells of a profile: one dict ``{"model", "n", "k", "tau", "seed", "gap",
    "batch"}`` per (block, tau, k, n, seed) of ``size["blocks"]``; ``model`` names an entry of the
    page's models (``"vmf"``, ``"gaussian"``), ``tau`` is ``tau_star`` or ``tau_other``."""
    names = {"star": float(tau_star), "other": float(tau_other)}
    out = []
    for block in size["blocks"]:
        for t in block["taus"]:
            for k in block["ks"]:
                for n in block["ns"]:
                    out += [{"model": block["model"], "n": int(n), "k": int(k), "tau": names[t], "seed": s,
                             "gap": bool(block["gap"]), "batch": block.get("batch")} for s in range(block["seeds"])]
    return out


def _cell_seed(seed: int, cell: dict) -> int:
    key = f"{cell['model']}-{cell['n']}-{cell['k']}-{cell['tau']:.6g}-{cell['seed']}-{cell['batch']}"
    return int(seed) * 1_000_003 + zlib.crc32(key.encode())


def _loss_of_pairs(thetas, x, xp, xn, tau, dim):
    """Per-pair loss of ``NormalisedLinear`` with per-pair parameters: thetas (b, dim^2), x (b, dim),
    xp (b, dim), xn (b, k, dim) -> (b,)."""
    A = thetas.reshape(-1, dim, dim)
    a = torch.nn.functional.normalize(torch.einsum("bij,bj->bi", A, x), dim=-1)
    p = torch.nn.functional.normalize(torch.einsum("bij,bj->bi", A, xp), dim=-1)
    ng = torch.nn.functional.normalize(torch.einsum("bij,bkj->bki", A, xn), dim=-1)
    s0 = (a * p).sum(-1)
    sn = torch.einsum("bd,bkd->bk", a, ng)
    beta = 1.0 / tau
    return -beta * s0 + torch.logsumexp(beta * torch.cat([s0[:, None], sn], 1), 1)


def _mc_empirical_risk(mean, s, train, tau, n_pairs, gen, chunk=20000):
    """Mean of ``n_pairs`` i.i.d. losses ``l(theta_l; z_{i_l})``, ``theta_l ~ N(mean, s^2 I)``,
    ``i_l`` uniform on the training tuples (an unbiased estimate of the empirical risk of Q)."""
    x, xp, xn = train
    n, dim = x.shape
    total, done = 0.0, 0
    while done < n_pairs:
        b = min(chunk, n_pairs - done)
        idx = torch.randint(0, n, (b,), generator=gen, device=x.device)
        th = mean[None, :] + s * torch.randn(b, mean.numel(), generator=gen, dtype=mean.dtype, device=mean.device)
        total += float(_loss_of_pairs(th, x[idx], xp[idx], xn[idx], tau, dim).sum())
        done += b
    return total / n_pairs


def canonical_mean(theta_hat: torch.Tensor, centre: torch.Tensor, dim: int) -> torch.Tensor:
    """The point ``c R A`` (``R`` orthogonal, ``c > 0``) of the orbit of ``A = theta_hat`` closest to
    ``centre`` (orthogonal Procrustes, then the best scale). ``NormalisedLinear``'s similarities
    are invariant under ``A -> c R A``, so it has exactly the losses of ``theta_hat``."""
    A, C = theta_hat.reshape(dim, dim), centre.reshape(dim, dim)
    U, _, Vt = torch.linalg.svd(C @ A.T)
    B = (U @ Vt) @ A
    c = float((B * C).sum() / (B * B).sum())
    return (c * B).reshape(-1)


def _pac_bayes(phi, train, test, model, tau, k, delta, delta_mc, b_k, pilot_pairs, final_pairs, gen, train_loss):
    """The certificate of Theorem ``c5-thm-pac-bayes`` for ``NormalisedLinear`` (prior centred at the
    centre of Theta, posterior around the canonical representative of the trained parameters),
    and the measured ``E_Q E H - log k`` of the randomised embedding (one draw per test query)."""
    dim = phi.input_dim
    beta = 1.0 / tau
    B, lmin = loss_range(k, tau), math.log1p(k * math.exp(-2.0 * beta))
    n = train[0].shape[0]
    centre = phi.center.detach()
    mean = canonical_mean(phi.theta.detach(), centre, dim)
    with torch.no_grad():
        same = _loss_of_pairs(mean.expand(n, -1), *train, tau, dim)
    if not torch.allclose(same, train_loss, atol=1e-9):
        raise RuntimeError("the canonical representative changed the training losses; Procrustes failed")
    log_extra = log_xi(n) + math.log(len(PRIOR_SCALES) / delta)
    best = None
    with torch.no_grad():
        for sigma in PRIOR_SCALES:  # pilot: choose the prior scale and the posterior scale
            for ratio in POSTERIOR_RATIOS:
                s = ratio * sigma
                S = (_mc_empirical_risk(mean, s, train, tau, pilot_pairs, gen) - lmin) / B
                kl = gaussian_kl_isotropic(mean.cpu().numpy(), centre.cpu().numpy(), s, sigma)
                guess = kl_inverse_upper(min(max(S, 0.0), 1.0), (kl + log_extra) / n)
                if best is None or guess < best[0]:
                    best = (guess, sigma, s, kl)
        _, sigma, s, kl = best
        emp = _mc_empirical_risk(mean, s, train, tau, final_pairs, gen)  # fresh draws
        cert = pac_bayes_kl_certificate(min(max((emp - lmin) / B, 0.0), 1.0), final_pairs, kl, n, delta=delta,
                                        delta_mc=delta_mc, n_priors=len(PRIOR_SCALES))
        x, _, db = test
        th = mean[None, :] + s * torch.randn(x.shape[0], mean.numel(), generator=gen, dtype=mean.dtype,
                                             device=mean.device)
        A = th.reshape(-1, dim, dim)
        a = torch.nn.functional.normalize(torch.einsum("bij,bj->bi", A, x), dim=-1)
        e = torch.nn.functional.normalize(torch.einsum("bij,bkj->bki", A, db), dim=-1)
        h = search_cross_entropy(torch.einsum("bd,bkd->bk", a, e), model.log_density_ratio(x, db), tau) - math.log(k)
    risk_upper = lmin + B * cert["risk_upper"]
    return {"pb_bound": risk_upper - math.log(k) + b_k, "pb_risk_upper": risk_upper, "pb_emp_risk": emp,
            "pb_emp_upper": lmin + B * cert["empirical_upper"], "pb_kl": kl, "pb_prior_scale": sigma,
            "pb_post_scale": s, "pb_dist": float(torch.linalg.vector_norm(mean - centre)),
            "pb_pairs": final_pairs, "pb_measured": float(h.mean()), "pb_measured_se": float(h.std() / math.sqrt(len(h)))}


@cached
def train_cell(model, model_name: str, n: int, k: int, tau: float, seed: int, cell_seed: int, gap: bool,
               batch, steps: int, n_test: int, delta: float, delta_pb: float, delta_mc: float, moments: dict,
               input_m2: float, pb_pilot_pairs: int, pb_final_pairs: int, device: str):
    """One training cell: ERM and every measured and certified quantity (a one-row table, nats).

    Trains ``reference_embedding(model)`` (vMF: NormalisedLinear(3, 0.5), P = 9; Gaussian:
    BallLinear(8 -> 4), P = 32) by :func:`~infonce_book.learning.training.fit` (Adam, projected onto
    Theta, ``steps`` steps, full batch unless ``batch``) from a random point of Theta, and measures:

    * ``train_risk``, ``test_risk`` (``n_test`` fresh tuples), ``search_ce`` (``E H(M_k, Q_k) - log
      k`` on fresh databases, with ``search_se``), ``gap``, ``excess``, ``improvement``, ``gap_cv``
      (the control-variate gap: ``phi_ref`` = centre of Theta);
    * the old bound (``old_*``: covering bound with ``Lambda_avg``, ``E Lambda_avg^2`` by Monte Carlo
      on the test tuples, and ``C_H(tau)/k`` where m is bounded below);
    * the sharp bound (``sharp_*``: ``2 R_n <= 2 min(covering with Lambda_star, vector contraction)``
      with population constants -- ``L`` constant for NormalisedLinear; ``L(x) = |x|`` with
      ``E|x|^2 = input_m2`` for BallLinear, Minkowski for ``(E Lambda_star^2)^(1/2)`` -- and the
      search bias ``b_k`` of Proposition ``c5-prop-search-bias`` from ``moments``);
    * for the vMF model (``model.identity_embedding``), the PAC-Bayes certificate of the randomised
      embedding (``pb_*``) and its measured value (``pb_measured``).
    """
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(int(cell_seed))
    beta = 1.0 / tau
    phi = reference_embedding(model).to(dev)
    with torch.no_grad():
        phi.set_theta_(phi.random_parameters(gen))
    train = model.sample_tuples(n, k, generator=gen, device=dev)
    fit(phi, train, tau, steps=steps, lr=phi.radius / 25, seed=int(cell_seed) % 2**31, batch_size=batch)
    test = model.sample_tuples(n_test, k, generator=gen, device=dev)
    with torch.no_grad():
        train_loss = loss_per_tuple(phi, *train, tau)
        test_loss = loss_per_tuple(phi, *test, tau)
        x, _, db = test
        h = search_cross_entropy(torch.einsum("bd,bkd->bk", phi(x), phi(db)), model.log_density_ratio(x, db),
                                 tau) - math.log(k)
        L = [phi.lipschitz(t).cpu().numpy() for t in test]
        theta_hat = phi.theta.detach().clone()
        phi.set_theta_(phi.center)
        excess = test_loss - loss_per_tuple(phi, *test, tau)
        improvement = float((loss_per_tuple(phi, *train, tau) - train_loss).mean())
        phi.set_theta_(theta_hat)
    train_risk = float(train_loss.mean())
    row = {"model": model_name, "n": n, "k": k, "tau": tau, "seed": seed, "gap_cell": gap,
           "batch": 0 if batch is None else int(batch), "train_risk": train_risk,
           "test_risk": float(test_loss.mean()), "test_se": float(test_loss.std() / math.sqrt(n_test)),
           "search_ce": float(h.mean()), "search_se": float(h.std() / math.sqrt(n_test)),
           "gap": float(test_loss.mean()) - train_risk, "excess": float(excess.mean()),
           "excess_se": float(excess.std() / math.sqrt(n_test)), "improvement": improvement,
           "gap_cv": float(excess.mean()) + improvement, "trivial": 2.0 * beta}
    # The old bound: the covering bound with the average form, C_H(tau)/k (m bounded below).
    lam_avg = loss_lipschitz_constant(*L, tau, kind="average")
    r_old = rademacher_covering_bound(float(np.sqrt(np.mean(lam_avg**2))), phi.radius, phi.n_params, n)
    old = theorem1_terms(train_risk=train_risk, k=k, n=n, tau=tau, delta=delta, rademacher=r_old,
                         search_constant=vmf_search_constant(model, tau) if model.identity_embedding else None)
    row.update({f"old_{key}": value for key, value in old.items() if key != "bound_on"})
    # The sharp bound: population constants only.
    omega = min(1.0, k * max_negative_weight(k, tau))
    if model.identity_embedding:  # NormalisedLinear on the sphere: L constant, unit inputs
        lip = 1.0 / (1.0 - phi.radius)
        ones = np.ones(1)
        lam_rms = float(embedding_lipschitz_constant(lip * ones, lip * ones, lip * np.ones((1, k)), tau)[0])
        post, m2 = lip, 1.0
    else:  # BallLinear: L(x) = |x|; Minkowski: |Lambda_star|_2 <= beta |L|_2 (3 omega + k p_max)
        lam_rms = beta * math.sqrt(input_m2) * (3.0 * omega + k * max_negative_weight(k, tau))
        post, m2 = 1.0, float(input_m2)
    r_cover = rademacher_covering_bound(lam_rms, phi.radius, phi.n_params, n)
    r_vec = vector_contraction_bound(n, k, tau, radius=phi.radius, dim_out=phi.output_dim, m2_anchor=m2,
                                     m2_positive=m2, m2_negatives=m2, post_lipschitz=post)
    bias = search_bias_bounds(k, tau, **moments)
    sharp = theorem1_terms(train_risk=train_risk, k=k, n=n, tau=tau, delta=delta, rademacher=min(r_cover, r_vec),
                           search_bias=bias["best"])
    row.update({f"sharp_{key}": value for key, value in sharp.items() if key != "bound_on"})
    row.update(sharp_cover=2.0 * r_cover, sharp_vector=2.0 * r_vec, lambda_star_rms=lam_rms,
               bias_second=bias["second_moment"], bias_third=bias["third_moment"], bias_two_term=bias["two_term"])
    if model.identity_embedding:
        pilot = max(64, pb_pilot_pairs)
        row.update(_pac_bayes(phi, train, test, model, tau, k, delta_pb, delta_mc, bias["best"], pilot,
                              pb_final_pairs, gen, train_loss))
    return pd.DataFrame([row])


def grid(models: dict, cells: list, size: dict, delta: float, delta_pb: float, delta_mc: float,
         moments: dict, input_m2: dict, device: str, seed: int) -> pd.DataFrame:
    """Run :func:`train_cell` on every cell (each cached on its own) and stack the rows.

    ``models``, ``moments`` (the density-ratio moments for ``search_bias_bounds``) and ``input_m2``
    (``E|x|^2`` of the inputs) are keyed by the cells' model names; ``size`` is the profile's sizes
    (``steps``, ``test_elements``, ``n_test``, ``pb_pilot_elements``, ``pb_final_elements``: the
    test set and the Monte Carlo draws shrink with ``k + 2`` so that their cost stays flat).
    """
    rows = []
    with one_thread(device):
        for cell in progress(cells, desc="c5 cells"):
            rows.append(_run_cell(cell, models, size, delta, delta_pb, delta_mc, moments, input_m2, device, seed))
    return pd.concat(rows, ignore_index=True)


def _run_cell(cell, models, size, delta, delta_pb, delta_mc, moments, input_m2, device, seed):
    """One cell of :func:`grid` through the cached :func:`train_cell`."""
    k = cell["k"]
    return train_cell(model=models[cell["model"]], model_name=cell["model"], n=cell["n"], k=k, tau=cell["tau"],
                      seed=cell["seed"], cell_seed=_cell_seed(seed, cell), gap=cell["gap"], batch=cell["batch"],
                      steps=size["steps"], n_test=min(size["n_test"], size["test_elements"] // (k + 2)),
                      delta=delta, delta_pb=delta_pb, delta_mc=delta_mc, moments=moments[cell["model"]],
                      input_m2=float(input_m2[cell["model"]]), pb_pilot_pairs=size["pb_pilot_elements"] // (k + 2),
                      pb_final_pairs=size["pb_final_elements"] // (k + 2), device=device)


# ---------------------------------------------------------------------------------------------
# Summaries and ledger


BOUNDS = {"old": "old_bound", "sharp": "sharp_bound", "PAC-Bayes": "pb_bound"}


def bound_summary(grid: pd.DataFrame) -> pd.DataFrame:
    """Per (model, tau, k, n): seed means of the measured values, every term of the old and the
    sharp bound, the PAC-Bayes certificate and the slacks (bound minus the measured value of the
    same predictor), with standard errors over seeds where there are two or more."""
    cols = ["search_ce", "test_risk", "train_risk", "old_empirical_risk", "old_complexity", "old_confidence",
            "old_search_bias", "old_bound", "sharp_empirical_risk", "sharp_complexity", "sharp_cover",
            "sharp_vector", "sharp_confidence", "sharp_search_bias", "sharp_bound", "pb_bound", "pb_measured",
            "pb_kl", "trivial"]
    g = grid.assign(sharp_slack=grid.sharp_bound - grid.search_ce,
                    pb_slack=grid.get("pb_bound", np.nan) - grid.get("pb_measured", np.nan))
    cols = [c for c in cols if c in g] + ["sharp_slack", "pb_slack"]
    keys = ["model", "tau", "k", "n"]
    out = g.groupby(keys)[cols].mean()
    out["seeds"] = g.groupby(keys).size()
    for c in ("sharp_bound", "pb_bound", "sharp_slack", "pb_slack", "search_ce"):
        if c in g:
            out[f"{c}_se"] = g.groupby(keys)[c].std() / np.sqrt(out.seeds)
    return out.reset_index()


def nonvacuous_n(summary: pd.DataFrame, model: str = "vmf") -> pd.DataFrame:
    """Smallest n of the grid at which the seed mean of each bound lies below the trivial bound
    ``2 beta`` on ``E H(M_k, Q_k) - log k``, per (tau, k); ``None`` where no n does."""
    rows = []
    for (tau, k), sub in summary[summary.model == model].groupby(["tau", "k"]):
        row = {"tau": tau, "k": int(k), "ns": ", ".join(str(int(v)) for v in sorted(sub.n))}
        for name, col in BOUNDS.items():
            ok = sub[sub[col] < sub.trivial].n if col in sub else []
            row[name] = int(min(ok)) if len(ok) else None
        rows.append(row)
    return pd.DataFrame(rows)


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

    ``sphere`` names the rows of the vMF model (the headline cell's model). Returns numbers for
    the page (worst slacks, headline values).
    """
    out = {}
    q = normal_quantile(0.95)
    for model_name, sub in grid.groupby("model"):
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
        if "pb_bound" in sub and sub.pb_bound.notna().any():
            pb = sub[sub.pb_bound.notna()]
            worst = float((pb.pb_bound - (pb.pb_measured + q * pb.pb_measured_se)).min())
            ledger.record(claim="C6", id=f"C6-pac-bayes-holds-{model_name}",
                          quantity="smallest (PAC-Bayes certificate - upper 95% end of E_Q E H - log k)",
                          predicted=0.0, measured=Estimate.exact(worst), rule=Rule.bound("measured", ">="),
                          params={"model": model_name, "cells": len(pb)})
            out[f"{model_name}_pb_worst_slack"] = worst
    n, k, tau = headline["n"], headline["k"], headline["tau"]
    head = grid[(grid.model == sphere) & (grid.n == n) & (grid.k == k) & np.isclose(grid.tau, tau)]
    if len(head) >= 2:
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
        out.update(head_old=old.mean, head_sharp=est.mean, head_sharp_low=est.ci_low, head_sharp_high=est.ci_high,
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
    vmf = grid[grid.pb_bound.notna()] if "pb_bound" in grid else grid.iloc[:0]
    ks = sorted(vmf.k.unique())
    out["k_uniform_records"] = 0
    if 16 in ks and ks[-1] > 16:
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


def nonvacuous_glue(table: pd.DataFrame, tau: float) -> dict:
    """``{"<bound>_k<k>": smallest n or "none on the grid"}`` at temperature ``tau`` from
    :func:`nonvacuous_n` (bound names ``old``, ``sharp``, ``pac``), only for the k the profile
    trained, and ``"sentence"``: the page's sentence (:func:`nonvacuous_sentence`)."""
    out = {}
    for _, r in table[np.isclose(table.tau, tau)].iterrows():
        for name, key in (("old", "old"), ("sharp", "sharp"), ("PAC-Bayes", "pac")):
            v = r[name]
            out[f"{key}_k{int(r.k)}"] = "none on the grid" if v is None or pd.isna(v) else f"{int(v):,}"
    out["sentence"] = nonvacuous_sentence(table, tau)
    return out


def nonvacuous_sentence(table: pd.DataFrame, tau: float, k_first: int = 16) -> str:
    """One sentence for the page: from which n of the grid each bound (``sharp``, ``old``,
    ``PAC-Bayes``) is non-vacuous at temperature ``tau``, for the k the profile actually trained
    (``k_first`` first when present, then the others in increasing order), from
    :func:`nonvacuous_n`. Says "vacuous on the whole grid" where no n is non-vacuous.

    Raises:
        ValueError: no row of ``table`` at ``tau``.
    """
    rows = table[np.isclose(table.tau, tau)]
    if rows.empty:
        raise ValueError(f"tau={tau:g} is not in the table (temperatures: {sorted(set(table.tau))})")
    ks = sorted(int(v) for v in rows.k)
    ks = [k for k in ks if k == k_first] + [k for k in ks if k != k_first]
    by_k = {int(r.k): r for _, r in rows.iterrows()}

    def clause(name, label):
        groups = {}  # smallest n (None: vacuous everywhere) -> the ks that share it, k_first's group first
        for k in ks:
            v = by_k[k][name]
            groups.setdefault(None if v is None or pd.isna(v) else int(v), []).append(k)
        parts = [("vacuous on the whole grid" if v is None else f"non-vacuous from n = {v:,}")
                 + f" at k = {join_words([str(k) for k in sorted(group)])}" for v, group in groups.items()]
        head = f"the {label} is {parts[0]}"
        return head if len(parts) == 1 else head + " (" + "; ".join(parts[1:]) + ")"

    text = "; ".join(clause(name, label) for name, label in
                     (("sharp", "sharp bound"), ("old", "old bound"), ("PAC-Bayes", "certificate")))
    return f"At τ = {tau:g}, {text}."


def gap_summary(grid: pd.DataFrame) -> pd.DataFrame:
    """Per (model, n, k, tau) of the gap cells (exact full-batch ERM): the mean over seeds of
    ``gap`` and ``gap_cv`` with standard errors, and ``n * gap_cv`` (the constant of the 1/n law)
    with its standard error."""
    g = grid[grid.gap_cell].groupby(["model", "n", "k", "tau"])
    out = g.agg(seeds=("seed", "count"), gap=("gap", "mean"), gap_sd=("gap", "std"), gap_cv=("gap_cv", "mean"),
                gap_cv_sd=("gap_cv", "std"), train_risk=("train_risk", "mean"), test_risk=("test_risk", "mean"),
                bound=("sharp_bound", "mean")).reset_index()
    out["gap_se"] = out.gap_sd / np.sqrt(out.seeds)
    out["gap_cv_se"] = out.gap_cv_sd / np.sqrt(out.seeds)
    out["n_gap_cv"] = out.n * out.gap_cv
    out["n_gap_cv_se"] = out.n * out.gap_cv_se
    return out.drop(columns=["gap_sd", "gap_cv_sd"])


def ledger_gap(ledger, summary: pd.DataFrame, tau_star: float, p_eff: int = 5, sphere: str = "vmf",
               runs: pd.DataFrame | None = None) -> dict:
    """Ledger (synthetic models): at ``tau = 1/kappa`` the standard InfoNCE is the conditional
    log-likelihood of the positive's position and the vMF class contains the truth, so the expected
    gap of ERM is ``p_eff / n + o(1/n)`` (Proposition ``c5-prop-aic``; ``p_eff = 5`` for
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


def gap_glue(summary: pd.DataFrame, tau_star: float, sphere: str = "vmf") -> dict:
    """Numbers of the gap section: the mean of ``n * gap_cv`` over the cells at ``tau_star``, and
    at the other temperatures (a sentence when the profile trains none)."""
    vmf = summary[summary.model == sphere]
    star = vmf[np.isclose(vmf.tau, tau_star)]
    other = vmf[~np.isclose(vmf.tau, tau_star)]
    return {"n_gap_mean": float(star.n_gap_cv.mean()),
            "n_gap_tau1": f"{other.n_gap_cv.mean():.2f}" if len(other) else
            "not measured at this profile, which trains at tau = 1/kappa only"}


def gap_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The gap summary as displayed (n/a where a standard error needs two seeds)."""
    shown = summary[["model", "tau", "k", "n", "seeds", "gap", "gap_se", "gap_cv", "gap_cv_se", "n_gap_cv",
                     "n_gap_cv_se"]]
    return shown.round(4).astype(object).where(shown.notna(), "n/a")


def exercise_numbers(model, tau_star: float, tau_other: float, k: int = 16, radius: float = 0.5,
                     n_params: int = 9) -> dict:
    """The numbers the exercises ask for (vMF class ``NormalisedLinear(dim, radius)``, L = 1/(1-r)):
    ``Lambda_avg`` and ``Lambda_star`` at both temperatures and the smallest n with ``2 R_n < 1``
    by the covering bound (:func:`smallest_n_below`); the three forms of the search bias at k = 4
    and 16 and ``tau_star``; the growth factor of the vector bound from k = 16 to k = 256."""
    L = 1.0 / (1.0 - radius)
    out = {}
    for name, tau in (("star", tau_star), ("other", tau_other)):
        ones = np.ones(1)
        args = (L * ones, L * ones, L * np.ones((1, k)), tau)
        lam_avg = float(loss_lipschitz_constant(*args, kind="average")[0])
        lam_star = float(embedding_lipschitz_constant(*args)[0])
        out.update({f"lam_avg_{name}": lam_avg, f"lam_star_{name}": lam_star,
                    f"n_avg_{name}": smallest_n_below(lam_avg, radius, n_params, 1.0),
                    f"n_star_{name}": smallest_n_below(lam_star, radius, n_params, 1.0)})
    moments = vmf_ratio_moments(model)
    for kk in (4, 16):
        b = search_bias_bounds(kk, tau_star, **moments)
        out.update({f"b2_{kk}": b["second_moment"], f"b3_{kk}": b["third_moment"], f"b4_{kk}": b["two_term"]})
    width = [3.0 + math.sqrt(kk * max_negative_weight(kk, tau_star)) for kk in (16, 256)]
    out["vector_ratio"] = width[1] / width[0]
    return out


# ---------------------------------------------------------------------------------------------
# Tables and figures


def headline_table(summary: pd.DataFrame, headline: dict, sphere: str = "vmf") -> pd.DataFrame:
    """The terms of the old and the sharp bound side by side at the headline cell (seed means) of
    the model named ``sphere``."""
    n, k, tau = headline["n"], headline["k"], headline["tau"]
    r = summary[(summary.model == sphere) & (summary.n == n) & (summary.k == k) & np.isclose(summary.tau, tau)]
    if not len(r):
        return pd.DataFrame()
    r = r.iloc[0]
    rows = [("empirical risk - log k", r.old_empirical_risk, r.sharp_empirical_risk),
            ("complexity 2 R_n", r.old_complexity, r.sharp_complexity),
            ("  covering, Lambda_avg / Lambda_star", r.old_complexity, r.sharp_cover),
            ("  vector contraction", float("nan"), r.sharp_vector),
            ("confidence B_k sqrt(log(1/delta)/2n)", r.old_confidence, r.sharp_confidence),
            ("search bias", r.old_search_bias, r.sharp_search_bias),
            ("bound on E H - log k", r.old_bound, r.sharp_bound),
            ("measured E H - log k", r.search_ce, r.search_ce)]
    return pd.DataFrame(rows, columns=["term (nats)", "old constants", "sharp constants"]).set_index("term (nats)")


def fig_bounds_vs_n(summary, model: str = "vmf"):
    """The old bound, the sharp bound, the PAC-Bayes certificate and the measured values against n
    (log x-axis, symlog y-axis, nats): one panel per k (columns) and tau (rows), with the trivial
    bound ``2 beta``.

    Args: table from :func:`bound_summary`.
    """
    sub = summary[summary.model == model]
    taus, ks = sorted(sub.tau.unique()), sorted(sub.k.unique())
    fig, axes = plt.subplots(len(taus), len(ks), figsize=(3.6 * len(ks), 3.1 * len(taus)), squeeze=False,
                             sharex=True)
    for i, tau in enumerate(taus):
        for j, k in enumerate(ks):
            ax = axes[i, j]
            cell = sub[np.isclose(sub.tau, tau) & (sub.k == k)].sort_values("n")
            if not len(cell):
                ax.axis("off")
                continue
            ax.plot(cell.n, cell.old_bound, "s-", color="C3", ms=4, label="old constants")
            ax.plot(cell.n, cell.sharp_bound, "o-", color="C0", ms=4, label="sharp constants")
            if "pb_bound" in cell:
                ax.plot(cell.n, cell.pb_bound, "^-", color="C2", ms=4, label="PAC-Bayes (randomised)")
                ax.plot(cell.n, cell.pb_measured, "^:", color="C2", ms=3, alpha=0.7, label="measured (randomised)")
            ax.plot(cell.n, cell.search_ce, "ko:", ms=3, label="measured E H - log k")
            ax.axhline(2.0 / tau, color="0.4", ls="--", lw=1, label=r"trivial bound $2\beta$")
            ax.set_xscale("log", base=2)
            ax.set_yscale("symlog", linthresh=1.0)
            ax.set_title(f"k = {int(k)}, tau = {tau:g}")
            if i == len(taus) - 1:
                ax.set_xlabel("training tuples $n$")
            if j == 0:
                ax.set_ylabel("nats")
    axes[0, 0].legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def fig_theorem1_terms(summary, model: str = "vmf", tau: float | None = None):
    """The terms of the sharp bound (stacked, seed means) against n for each k, with the measured
    left-hand side, at one temperature (default: the smallest).

    Args: table from :func:`bound_summary`.
    """
    terms = ["sharp_empirical_risk", "sharp_complexity", "sharp_confidence", "sharp_search_bias"]
    sub = summary[summary.model == model]
    tau = sub.tau.min() if tau is None else tau
    sub = sub[np.isclose(sub.tau, tau)]
    ks = sorted(sub.k.unique())
    fig, axes = plt.subplots(1, len(ks), figsize=(3.6 * len(ks), 3.3), squeeze=False, sharey=True)
    for ax, k in zip(axes[0], ks):
        cell = sub[sub.k == k].sort_values("n")
        pos = np.arange(len(cell))
        bottom, neg = np.zeros(len(cell)), np.zeros(len(cell))
        for i, term in enumerate(terms):
            vals = cell[term].fillna(0.0).to_numpy()
            base = np.where(vals >= 0, bottom, neg)
            ax.bar(pos, vals, bottom=base, color=f"C{i}", label=term.replace("sharp_", "").replace("_", " "))
            bottom, neg = np.where(vals >= 0, bottom + vals, bottom), np.where(vals < 0, neg + vals, neg)
        ax.plot(pos, cell.sharp_bound, "D", color="k", mfc="white", ms=6, label="bound (sum of the terms)")
        ax.plot(pos, cell.search_ce, "ko-", ms=4, label="measured E H - log k")
        ax.axhline(2.0 / tau, color="0.4", ls="--", lw=1, label=r"trivial bound $2\beta$")
        ax.set_xticks(pos, [str(int(v)) for v in cell.n])
        ax.set_xlabel("training tuples $n$")
        ax.set_title(f"{model}, k = {int(k)}, tau = {tau:g}")
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
    q = normal_quantile(0.95)
    for i, ((tau, k), sub) in enumerate(vmf.groupby(["tau", "k"])):
        sub = sub.sort_values("n")
        label = f"tau = {tau:g}, k = {k}"
        ax1.errorbar(sub.n, sub.gap_cv, yerr=q * sub.gap_cv_se, fmt="o-", color=f"C{i}", ms=4, capsize=3, label=label)
        ax2.errorbar(sub.n, sub.n_gap_cv, yerr=q * sub.n_gap_cv_se, fmt="o-", color=f"C{i}", ms=4, capsize=3,
                     label=label)
    ns = np.array([vmf.n.min(), vmf.n.max()], dtype=float)
    ax1.plot(ns, p_eff / ns, "k--", label=f"{p_eff:g}/n (prediction at tau = {tau_star:g})")
    ax1.plot(ns, p_eff / ns[0] * np.sqrt(ns[0] / ns), "k:", label=r"slope $-1/2$ (reference)")
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log")
    ax1.set_xlabel("training tuples $n$")
    ax1.set_ylabel("E[gap] (nats)")
    ax1.legend(fontsize="x-small")
    ax2.axhline(p_eff, color="k", ls="--")
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("training tuples $n$")
    ax2.set_ylabel(r"$n \times$ E[gap]")
    fig.tight_layout()
    return fig
