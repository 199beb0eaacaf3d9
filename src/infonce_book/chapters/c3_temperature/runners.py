"""Chapter 3's runners: the page's model, sizes and (where they depend on it) its
:class:`~.config.TemperatureSetup` in, a tidy table out, cached by configuration; and the values
the page quotes from those tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from scipy import optimize, special

from ...experiment.cache import cached
from ...learning.training import fit_linear_embeddings, fit_temperature
from ...models import VonMisesFisher
from ...theory.bounds import antipodal_kl, kl_softmax_bound, kl_softmax_sharp_bound, loss_range, two_point_kl
from ...theory.search import empirical_kl_softmax_interval
from ...theory.stats import Estimate, normal_quantile
from ...utils.device import one_thread, resolve_device
from .config import TemperatureSetup

__all__ = ["approximation_gain_monte_carlo", "approximation_table", "decoupled_minimisers", "exercise_values",
           "gap_across_taus", "gap_summary", "kl_sweep", "learned_tau", "sharp_kl_check"]


def _two_cluster_sample(n: int, dim: int, gen, dev):
    """Two antipodal clusters: half the points at +e_1, half at -e_1 (the adversarial case)."""
    e = torch.zeros(dim, dtype=torch.float64, device=dev)
    e[0] = 1.0
    sign = torch.where(torch.rand(n, generator=gen, device=dev, dtype=torch.float64) < 0.5, 1.0, -1.0)
    return sign.unsqueeze(-1) * e


@cached
def kl_sweep(setup: TemperatureSetup, taus: list, n_queries: int, n_sample: int, device: str, seed: int,
             trained_A: list | None = None):
    """``E_x KL(Q_tau(x, .) || pi)`` against tau for several embeddings, with 95% intervals.

    Embeddings, with ``(d, D) = setup.kl_dims`` (default ``(3, 16)``): ``vmf identity`` (data uniform
    on ``S^{d-1}``; closed form, and empirical), ``identity on S^{D-1}`` (data uniform on
    ``S^{D-1}``, phi the identity), ``two antipodal clusters`` in ``R^d`` (closed form
    ``beta tanh beta - log cosh beta``), and ``trained linear`` (``phi(x) = A x/|A x|`` on
    ``S^{d-1}`` with the given (d, d) matrix A) when given.
    Columns: ``tau, embedding, kl, kl_se, kl_low, kl_high, closed_form, bound`` (``min(1/(2 tau^2),
    2/tau)``), ``sharp`` (the exact supremum ``Psi``).
    """
    d, d_high = setup.kl_dims
    high = f"identity on S^{d_high - 1}"
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    # Uniform data on the sphere: the vMF model's pi (its kappa plays no role here).
    vmf3, unif16 = VonMisesFisher(d, 0.0), VonMisesFisher(d_high, 0.0)
    A = torch.tensor(trained_A, dtype=torch.float64, device=dev) if trained_A is not None else None
    rows = []
    for tau in taus:
        emb = {"vmf identity": (vmf3.sample_data, lambda v: v, d),
               high: (unif16.sample_data, lambda v: v, d_high),
               "two antipodal clusters": (lambda n, **kw: _two_cluster_sample(n, d, gen, dev), lambda v: v, d)}
        if A is not None:
            emb["trained linear"] = (vmf3.sample_data, lambda v: torch.nn.functional.normalize(v @ A.T, dim=-1), d)
        for name, (sampler, phi, dim) in emb.items():
            q = phi(sampler(n_queries, generator=gen, device=dev))
            smp = phi(sampler(n_queries * n_sample, generator=gen, device=dev)).reshape(n_queries, n_sample, dim)
            est = empirical_kl_softmax_interval(q, smp, tau)
            closed = {"vmf identity": vmf3.kl_softmax_vs_data(tau), high: unif16.kl_softmax_vs_data(tau),
                      "two antipodal clusters": antipodal_kl(tau)}.get(name, float("nan"))
            rows.append({"tau": tau, "embedding": name, "kl": est.mean, "kl_se": est.se, "kl_low": est.ci_low,
                         "kl_high": est.ci_high,
                         "closed_form": closed, "bound": kl_softmax_bound(tau),
                         "sharp": kl_softmax_sharp_bound(tau)})
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
def gap_across_taus(setup: TemperatureSetup, model, taus: list, n_train: int, steps: int, device: str, seed: int,
                    n_test: int = 20000, n_sets: int = 1):
    """Train ``phi(x) = A x/|A x|`` by ERM at each tau (``k = setup.gap_k`` negatives per tuple) on
    each of ``n_sets`` independent training sets (set ``j``: the tuples, initial matrix and test
    tuples of seed ``seed + j``, the same for every tau;
    :func:`~infonce_book.learning.training.fit_linear_embeddings`). Report the empirical risk, the
    risk on fresh tuples and the gap (with a 95% interval from the test sample), in nats;
    the loss's range ``B_k`` (:func:`~infonce_book.theory.bounds.loss_range`, the scale of the
    McDiarmid term of the combined bound) and ``gap_over_range = gap / B_k``; and two sensitivity
    constants: ``2 beta`` (the loss is 2 beta-Lipschitz in the similarity vector, sup norm) and
    ``beta e^{2 beta}/(k+1)`` (the per-negative factor of the averaging bound of Chapter 4,
    which grows exponentially as tau -> 0). ``model``: the vMF model of the page.

    Rows are ordered by set, then tau (set 0 is the single run of earlier versions).
    """
    k = setup.gap_k
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


def sharp_kl_check(setup: TemperatureSetup, n_random: int = 12, seed: int = 0) -> pd.DataFrame:
    """Theorem ``c3-thm-kl-sharp`` checked by optimisation, independently of its proof.

    For each beta of ``setup.sharp_betas``: ``psi`` (the closed form), ``two_point_max`` (the
    largest KL over laws of the similarity on {-1, 1}, by bounded Brent over the mass at +1 in
    logit form), ``random_max``
    (the largest KL found by Nelder--Mead over laws on 6 points of [-1, 1], from ``n_random``
    random starts), ``asym`` (``2 beta - 1 - log 2 beta``) and ``asym_law`` (the KL of the
    two-point law with mass ``(2 beta - 1) e^{-2 beta}`` at +1; only for beta > 1/2).
    """
    rng = np.random.default_rng(seed)
    rows = []
    for beta in setup.sharp_betas:
        tau = 1.0 / beta
        res = optimize.minimize_scalar(lambda lq: -two_point_kl(tau, float(special.expit(lq))), bounds=(-80.0, 20.0),
                                       method="bounded", options={"xatol": 1e-12})

        def neg_kl(z):
            s = np.tanh(z[:6])
            lw = special.log_softmax(z[6:]) + beta * s
            lz = special.logsumexp(lw)
            return -(beta * (np.exp(lw - lz) @ s) - lz)

        best = max(-optimize.minimize(neg_kl, rng.normal(size=12), method="Nelder-Mead",
                                      options={"maxiter": 1500, "xatol": 1e-10, "fatol": 1e-13}).fun
                   for _ in range(n_random))
        q = (2 * beta - 1) * math.exp(-2 * beta)
        rows.append({"beta": beta, "psi": kl_softmax_sharp_bound(tau), "two_point_max": -float(res.fun),
                     "random_max": float(best), "bound": kl_softmax_bound(tau),
                     "asym": 2 * beta - 1 - math.log(2 * beta),
                     "asym_law": two_point_kl(tau, q) if 0 < q < 1 else float("nan")})
    return pd.DataFrame(rows)


@cached
def approximation_table(model, taus: list):
    """Theorem ``c3-thm-vmf-approx`` on the vMF ``model``: for each tau the identity's error
    ``E_x KL(M || Q_tau)`` (closed form), the infimum over all embeddings (convex programme,
    :meth:`~infonce_book.models.VonMisesFisher.best_search_approximation_error`) with its
    Frank--Wolfe certificate, the optimal coefficients ``b_1/beta, b_2/beta`` and the floor
    ``KL(M || pi) - 2/tau`` (all in nats).
    """
    rows = []
    for tau in taus:
        best = model.best_search_approximation_error(tau)
        coef = best["coefficients"] + [0.0, 0.0]
        rows.append({"tau": tau, "identity": best["identity"], "infimum": best["value"], "certificate": best["gap"],
                     "embedding": best["embedding"], "b1": coef[0], "b2": coef[1],
                     "floor": model.kl_kernel_vs_data() - 2.0 / tau})
    return pd.DataFrame(rows)


@cached
def approximation_gain_monte_carlo(setup: TemperatureSetup, model, n_draws: int, n_reps: int, device: str,
                                   seed: int):
    """Monte Carlo of ``E_x KL(M || Q^phi) - E_x KL(M || Q^id)`` for the explicit embedding
    ``phi(x) = (sqrt(a1) x, sqrt(a2) psi_2(x))`` with ``psi_2(x) = sqrt(p/(p-1)) vec(x x^T - I/p)``
    (so ``<phi(x), phi(y)> = a1 t + a2 G_2(t)``), ``(a1, a2)`` the degree-2 optimum of the
    programme at ``tau = setup.tau_example``. Common random numbers:
    ``-beta E[s_phi(x, x+) - <x, x+>]`` over ``n_draws`` pairs, plus ``log Z_phi(x) - log Z_id(x)``
    averaged over ``setup.n_anchors`` anchors, each ``Z`` a mean over the same ``n_draws`` uniform
    points; ``n_reps`` independent replicates give the interval.
    Also the identity's own error ``E[kappa t - log Z(kappa) - beta t] + E log Z_id`` (log Z_id by
    Monte Carlo).

    Columns: ``rep, gain, identity_error`` (one row per replicate), ``a1, a2``, ``predicted_gain``.
    """
    tau, n_anchors = setup.tau_example, setup.n_anchors
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(seed)
    beta = 1.0 / tau
    best = model.best_search_approximation_error(tau, n_max=2)
    a1, a2 = best["coefficients"][:2]
    predicted = best["identity"] - best["value"]
    p = model.dim
    eye = torch.eye(p, dtype=torch.float64, device=dev)

    def embed(x):
        outer = (x[:, :, None] * x[:, None, :] - eye / p).reshape(x.shape[0], -1)
        return torch.cat([math.sqrt(a1) * x, math.sqrt(a2 * p / (p - 1)) * outer], dim=1)

    log_zk = float(model.log_partition(model.kappa))
    rows = []
    for rep in range(n_reps):
        x = model.sample_data(n_draws, generator=gen, device=dev)
        xp = model.sample_positive(x, generator=gen)
        y = model.sample_data(n_draws, generator=gen, device=dev)
        s_id, s_phi = (x * xp).sum(1), (embed(x) * embed(xp)).sum(1)
        anchors = x[:n_anchors]
        lz_phi = torch.logsumexp(beta * embed(anchors) @ embed(y).T, dim=1) - math.log(n_draws)
        lz_id = torch.logsumexp(beta * anchors @ y.T, dim=1) - math.log(n_draws)
        gain = beta * (s_phi - s_id).mean() - (lz_phi - lz_id).mean()  # identity error minus phi's error
        ident = ((model.kappa - beta) * s_id).mean() - log_zk + lz_id.mean()
        rows.append({"rep": rep, "gain": float(gain), "identity_error": float(ident), "a1": a1, "a2": a2,
                     "predicted_gain": predicted, "identity_closed_form": best["identity"]})
    return pd.DataFrame(rows)


@cached
def decoupled_minimisers(model, ks: list):
    """``tau_k`` minimising the decoupled risk (:meth:`~infonce_book.models.VonMisesFisher.decoupled_risk_minimiser`)
    and ``k (beta_k - kappa)``, with the predicted constant ``C``. Columns: ``k, tau_k, beta_k, k_shift, C``."""
    C = model.decoupled_rate_constant()
    rows = []
    for k in ks:
        t = model.decoupled_risk_minimiser(k)
        rows.append({"k": int(k), "tau_k": t, "beta_k": 1.0 / t, "k_shift": k * (1.0 / t - model.kappa), "C": C})
    return pd.DataFrame(rows)


def exercise_values(model) -> dict:
    """The numbers the exercises ask for: the decoupled minimiser at k = 8 (it exists) and the
    slope at infinity ``(k - 1)/(k + 1) - A_3(kappa)`` at k = 7 and 8 (on S^2)."""
    A = float(model.mean_resultant_length())
    return {"tau_8": model.decoupled_risk_minimiser(8), "slope_7": 6 / 8 - A, "slope_8": 7 / 9 - A, "A_kappa": A}
