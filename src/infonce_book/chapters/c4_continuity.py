"""Chapter 4, ``book/c4_continuity.md``: continuity bounds that keep the averaging, in the
similarities and in the embeddings (claim C4), the Lipschitz constants they give in the parameters
and the Rademacher complexity of the loss class, by covering and by vector contraction (claim C5).

Runners take the page's models and sizes and return tidy tables (cached by configuration);
``ledger_*`` turn tables into claims-ledger records (each documents its verdict rule); ``fig_*``
draw the page's figures. Embedding classes: ``NormalisedLinear(dim, 0.5)`` on sphere data (the
vMF model), ``BallLinear(dim -> 4, scale 0.25, radius 0.05)`` and ``BallMLP(dim -> 16 -> 4,
radius 0.5)`` on Euclidean data.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from scipy import integrate
from scipy.special import logsumexp

from ..experiment.cache import cached
from ..experiment.ledger import Rule
from ..experiment.setup import ChapterContext, setup_chapter
from ..learning.embeddings import BallLinear, BallMLP, NormalisedLinear, loss_per_tuple, reference_embedding
from ..learning.rademacher import empirical_rademacher
from ..losses import info_nce_from_similarities
from ..models import from_params
from ..theory.bounds import (
    continuity_bound,
    embedding_lipschitz_constant,
    loss_lipschitz_constant,
    max_negative_weight,
    rademacher_covering_bound,
    tunable_lipschitz_constant,
    vector_contraction_bound,
)
from ..theory.stats import Estimate, fit_loglog_slope, normal_quantile
from ..utils.device import on_one_cpu_thread, resolve_device
from ..utils.progress import progress

STEM = "c4_continuity"

SIZES = {
    "smoke": {"c4_ks": [1, 10, 100, 1000, 10000], "c4_pairs": 100, "c4_max_elements": 1_000_000,
              "lip_ks": [1, 10, 100, 1000, 10000], "lip_tuples": 1000, "lip_max_elements": 1_000_000,
              "check_ks": [1, 16], "check_tuples": 100, "check_pairs": 3,
              "rad_ns": [32, 96, 256], "rad_ks": [1, 4, 32, 256], "rad_dims": [2, 4, 8], "rad_n": 128,
              "rad_k": 16, "rad_sigma": 6, "rad_steps": 30, "rad_starts": 1,
              "seg_ks": [1, 4, 16, 64], "seg_betas": [0.25, 1.0, 2.0, 4.0], "seg_pairs": 2000,
              "ex_radii": [0.05, 0.1, 0.2], "ex_n": 128, "ex_sigma": 6, "ex_steps": 30},
    "standard": {"c4_ks": [1, 10, 100, 1000, 10000, 100000], "c4_pairs": 100, "c4_max_elements": 1_000_000,
                 "lip_ks": [1, 10, 100, 1000, 10000, 100000], "lip_tuples": 4000,
                 "lip_max_elements": 5_000_000, "check_ks": [1, 16, 256], "check_tuples": 200,
                 "check_pairs": 5, "rad_ns": [32, 64, 128, 256, 512, 1024], "rad_ks": [1, 4, 16, 64, 256],
                 "rad_dims": [2, 3, 4, 6, 8], "rad_n": 256, "rad_k": 16, "rad_sigma": 10, "rad_steps": 40,
                 "rad_starts": 1, "seg_ks": [1, 2, 4, 16, 64, 256], "seg_betas": [0.1, 0.25, 0.5, 1.0, 2.0, 4.0],
                 "seg_pairs": 4000, "ex_radii": [0.05, 0.1, 0.2], "ex_n": 128, "ex_sigma": 8, "ex_steps": 40},
    "full": {"c4_ks": [1, 10, 100, 1000, 10000, 100000], "c4_pairs": 1000, "c4_max_elements": 20_000_000,
             "lip_ks": [1, 10, 100, 1000, 10000, 100000], "lip_tuples": 20000,
             "lip_max_elements": 200_000_000, "check_ks": [1, 16, 256, 4096], "check_tuples": 1000,
             "check_pairs": 10, "rad_ns": [32, 64, 128, 256, 512, 1024, 2048],
             "rad_ks": [1, 4, 16, 64, 256, 1024], "rad_dims": [2, 3, 4, 6, 8, 12], "rad_n": 512,
             "rad_k": 16, "rad_sigma": 24, "rad_steps": 60, "rad_starts": 2,
             "seg_ks": [1, 2, 4, 16, 64, 256, 4096], "seg_betas": [0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0],
             "seg_pairs": 20000, "ex_radii": [0.05, 0.1, 0.2, 0.4], "ex_n": 256, "ex_sigma": 24, "ex_steps": 60},
}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The chapter's set-up (see :func:`~infonce_book.experiment.setup.setup_chapter`)."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)



PERTURBATIONS = ("sparse", "dense", "parameter")


def _similarities(model, n: int, k: int, gen, dev, eps_theta: float):
    """Similarity vectors before and after a parameter perturbation of the embedding
    (:func:`~infonce_book.learning.embeddings.reference_embedding` of the model, moved from its centre by eps_theta in a random direction).
    Returns ``(s_pos, s_neg, s_pos_new, s_neg_new)`` as float64 tensors (n,), (n, k).
    """
    x, xp, xn = model.sample_tuples(n, k, generator=gen, device=dev)
    phi = reference_embedding(model).to(dev)
    out = []
    direction = torch.randn(phi.n_params, generator=gen, device=dev, dtype=torch.float64)
    direction = direction / torch.linalg.vector_norm(direction)
    with torch.no_grad():
        for theta in (phi.center, phi.center + eps_theta * direction):
            phi.set_theta_(theta)
            a, p, ng = phi(x), phi(xp), phi(xn)
            out += [(a * p).sum(-1).clamp(-1, 1), torch.einsum("nd,nkd->nk", a, ng).clamp(-1, 1)]
    # (clamp only removes rounding excursions of size ~1e-16 beyond [-1, 1]; embeddings are in the ball)
    return out


def _feasible_step(s: torch.Tensor, eps: float, sign: float) -> torch.Tensor:
    """``sign * eps`` where ``s + sign * eps`` stays in [-1, 1], else ``-sign * eps``."""
    h = torch.full_like(s, sign * eps)
    return torch.where((s + h).abs() <= 1.0, h, -h)


def _perturb(kind: str, s_pos, s_neg, tau: float, eps: float):
    if kind == "sparse":
        # move only the negative of largest weight (the largest similarity) by eps
        j = s_neg.argmax(dim=1)
        h = torch.zeros_like(s_neg)
        hj = _feasible_step(s_neg.gather(1, j[:, None]), eps, 1.0)
        h.scatter_(1, j[:, None], hj)
        return s_pos, s_neg + h
    if kind == "dense":
        # the worst direction of the Gateaux derivative: positive down, every negative up
        return s_pos + _feasible_step(s_pos, eps, -1.0), s_neg + _feasible_step(s_neg, eps, 1.0)
    raise ValueError(kind)


@cached
@on_one_cpu_thread
def perturbations(models: dict, ks: list, tau: float, n_pairs: int, eps: float, eps_theta: float,
                  max_elements: int, device: str, seed: int):
    """Actual ``|l(s') - l(s)|`` against the three bounds of Proposition ``c4-prop-continuity``.

    For each model (``{name: model}``), k and perturbation ("sparse": the top negative moved by
    eps; "dense": the positive moved down and every negative up by eps; "parameter": the
    embedding's parameters moved by eps_theta in a random direction), ``n_pairs`` pairs
    (processed in batches of at most ``max_elements`` similarities). Columns: ``model, k,
    perturbation, n, ratio_<kind>_max`` (largest actual/bound: <= 1 iff the bound held on every
    pair), ``ratio_<kind>_mean, ratio_<kind>_se`` (mean and s.e. of bound/actual), ``actual_mean``.
    """
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    rows = []
    for model_name, model in models.items():
        for k in progress(ks, desc=f"c4 perturbations ({model_name})"):
            batch = max(1, min(n_pairs, max_elements // k))
            acc = {p: {"actual": [], **{kind: [] for kind in ("average", "max", "dv")}} for p in PERTURBATIONS}
            done = 0
            while done < n_pairs:
                b = min(batch, n_pairs - done)
                sp, sn, sp_par, sn_par = _similarities(model, b, k, gen, dev, eps_theta)
                for pert in PERTURBATIONS:
                    sp2, sn2 = (sp_par, sn_par) if pert == "parameter" else _perturb(pert, sp, sn, tau, eps)
                    before = info_nce_from_similarities(sp, sn, tau, reduction="none")
                    after = info_nce_from_similarities(sp2, sn2, tau, reduction="none")
                    acc[pert]["actual"].append((after - before).abs().cpu().numpy())
                    args = [t.cpu().numpy() for t in (sp, sn, sp2, sn2)]
                    for kind in ("average", "max", "dv"):
                        acc[pert][kind].append(continuity_bound(*args, tau, kind=kind))
                done += b
            for pert in PERTURBATIONS:
                actual = np.concatenate(acc[pert]["actual"])
                row = {"model": model_name, "k": int(k), "perturbation": pert, "n": len(actual),
                       "actual_mean": float(actual.mean())}
                keep = actual > 1e-12  # ratios bound/actual need a non-zero change
                for kind in ("average", "max", "dv"):
                    bound = np.concatenate(acc[pert][kind])
                    row[f"ratio_{kind}_max"] = float(np.max(actual / bound))
                    r = bound[keep] / actual[keep]
                    row[f"ratio_{kind}_mean"] = float(r.mean())
                    row[f"ratio_{kind}_se"] = float(r.std(ddof=1) / math.sqrt(len(r))) if len(r) > 1 else float("nan")
                rows.append(row)
    return pd.DataFrame(rows)


def sparse_average_ratio_limit(tau: float, eps: float) -> float:
    """Large-k limit of the mean ratio (average bound)/(actual change) for the sparse perturbation
    in the vMF model on S^2 of :func:`perturbations` (phi the identity):
    ``e^beta Z_3(beta) * beta eps / (1 - e^{-beta eps})`` with ``Z_3(beta) = sinh(beta)/beta``.

    Derivation (book, section "Experiment: perturbation pairs"): the top negative has
    ``s_max -> 1``, so for large k it is moved *down* by eps (moving it up would leave [-1, 1]);
    its weight is ``p_max ~ e^beta / (k mu)`` with ``mu = Z_3(beta)``; the change is
    ``-log(1 - p_max (1 - e^{-beta eps})) ~ p_max (1 - e^{-beta eps})`` and the bound is
    ``beta e^{2 beta} eps / (k + 1)``.
    """
    beta = 1.0 / tau
    return math.exp(beta) * math.sinh(beta) / beta * beta * eps / -math.expm1(-beta * eps)


def ledger_perturbations(ledger, table: pd.DataFrame, tau: float, eps: float, sphere: str = "vmf") -> dict:
    """Ledger records: every bound holds on every pair (one-sided, per model and kind); the
    sparse-perturbation ratio of the average bound at the largest k against its large-k limit, for
    the rows of the vMF model on S^2 (named ``sphere`` in the table)."""
    out = {}
    for model_name, sub in table.groupby("model"):
        for kind in ("average", "max", "dv"):
            worst = float(sub[f"ratio_{kind}_max"].max())
            ledger.record(claim="C4", id=f"C4-holds-{model_name}-{kind}",
                          quantity=f"largest |l(s')-l(s)| / bound over all pairs ({kind})",
                          predicted=1.0, measured=Estimate.exact(worst), rule=Rule.bound("measured", "<="),
                          params={"model": model_name, "kind": kind, "tau": tau, "n_pairs": int(sub.n.sum()),
                                  "ks": sorted(int(v) for v in sub.k.unique())})
            out[f"worst_{model_name}_{kind}"] = worst
    vmf = table[(table.model == sphere) & (table.perturbation == "sparse")].sort_values("k")
    if len(vmf):
        last = vmf.iloc[-1]
        pred = sparse_average_ratio_limit(tau, eps)
        ledger.record(claim="C4", id="C4-average-flat-limit",
                      quantity="mean (average bound)/actual, sparse perturbation, largest k", predicted=pred,
                      measured=Estimate(last.ratio_average_mean, last.ratio_average_se, int(last.n)),
                      params={"model": sphere, "k": int(last.k), "tau": tau, "eps": eps})
        out.update(limit=pred, limit_measured=float(last.ratio_average_mean), limit_k=int(last.k))
        big = vmf[vmf.k >= 100]
        fit = fit_loglog_slope(big.k, big.ratio_max_mean, big.ratio_max_se)
        out.update(max_slope=fit.mean, max_slope_low=fit.ci_low, max_slope_high=fit.ci_high)
    return out


def expected_max_norm(model, k: int) -> float:
    """``E max_{j <= k} |x_j|`` for k i.i.d. inputs of ``model`` (a Euclidean model with
    ``norm_sf``: Gaussian or Student-t), by quadrature of ``int_0^inf (1 - F(r)^k) dr``."""
    sf = model.norm_sf

    def integrand(r):
        s = float(sf(r))
        return -math.expm1(k * math.log1p(-s)) if s < 1.0 else 1.0

    total, _ = integrate.quad(integrand, 0.0, np.inf, limit=400, epsabs=1e-11, epsrel=1e-10)
    return float(total)


def lipschitz_predictions(model, k: int, tau: float) -> dict:
    """Predicted ``E Lambda_avg`` and ``E Lambda_max`` for ``phi = BallLinear`` (``L(x) = |x|``)
    on the data of ``model``."""
    beta = 1.0 / tau
    m = expected_max_norm(model, 1)
    emax = expected_max_norm(model, k)
    return {"avg": 2 * beta * m + 2 * beta * math.exp(2 * beta) * k / (k + 1) * m,
            "max": 2 * beta * m + beta * (m + emax), "mean_norm": m, "max_norm": emax}


@cached
@on_one_cpu_thread
def lipschitz_constants(models: dict, ks: list, tau: float, n_tuples: int, max_elements: int, device: str,
                        seed: int):
    """``Lambda_avg`` and ``Lambda_max`` of Theorem ``c4-thm-lipschitz`` and ``Lambda_star`` of
    Corollary ``c4-cor-embedding`` (kind ``"embedding"``) on sampled tuples.

    For ``phi = BallLinear`` (``L(x) = |x|``), the data of each model (``{name: model}``, Euclidean
    models with ``norm_sf``), each k: mean and standard error over tuples, the predictions by
    quadrature (average and max forms), and for ``Lambda_star`` the largest ratio
    ``Lambda_star / min(Lambda_avg, Lambda_max)`` over the tuples (``worst_ratio_to_min``, at most 1
    by the corollary). The number of tuples at k is ``min(n_tuples, max_elements // k)``.
    """
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    rows = []
    for name, model in models.items():
        for k in progress(ks, desc=f"c5 Lipschitz constants ({name})"):
            n = max(2, min(n_tuples, max_elements // k))
            x, xp, xn = model.sample_tuples(n, k, generator=gen, device=dev)
            La, Lp, Ln = (torch.linalg.vector_norm(t, dim=-1).cpu().numpy() for t in (x, xp, xn))
            pred = lipschitz_predictions(model, k, tau)
            lams = {kind: loss_lipschitz_constant(La, Lp, Ln, tau, kind=kind) for kind in ("average", "max")}
            lams["embedding"] = embedding_lipschitz_constant(La, Lp, Ln, tau)
            worst = float(np.max(lams["embedding"] / np.minimum(lams["average"], lams["max"])))
            for kind, lam in lams.items():
                rows.append({"data": name, "k": int(k), "kind": kind, "n": n, "mean": float(lam.mean()),
                             "se": float(lam.std(ddof=1) / math.sqrt(n)),
                             "predicted": {"average": pred["avg"], "max": pred["max"]}.get(kind, float("nan")),
                             "worst_ratio_to_min": worst if kind == "embedding" else float("nan")})
    return pd.DataFrame(rows)


@cached
@on_one_cpu_thread
def lipschitz_check(sphere_model, euclidean_model, ks: list, tau: float, n_tuples: int, n_pairs: int, device: str,
                    seed: int):
    """Check ``|l(theta; z) - l(theta'; z)| <= Lambda(z) |theta - theta'|`` for random pairs in Theta.

    Classes: NormalisedLinear on the data of ``sphere_model`` (vMF), BallLinear(dim -> 4) and
    BallMLP(dim -> 16 -> 4) on the data of ``euclidean_model`` (Gaussian). Constants: ``average``,
    ``max`` (Theorem ``c4-thm-lipschitz``), ``embedding`` (Corollary ``c4-cor-embedding``),
    ``tunable`` (Corollary ``c4-cor-dv``). ``n_pairs`` random pairs in Theta and as many short steps
    (1e-3 of the way to a random point). Columns: ``cls, k, kind, worst`` (largest ratio over
    tuples and pairs).
    """
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    rows = []
    d = euclidean_model.dim
    specs = [("NormalisedLinear", sphere_model, lambda: NormalisedLinear(sphere_model.dim, 0.5)),
             ("BallLinear", euclidean_model, lambda: BallLinear(d, 4, scale=0.25, radius=0.05)),
             ("BallMLP", euclidean_model, lambda: BallMLP(d, 16, 4, radius=0.5))]
    for cls_name, model, make in specs:
        phi = make().to(dev)
        for k in ks:
            x, xp, xn = model.sample_tuples(n_tuples, k, generator=gen, device=dev)
            with torch.no_grad():
                L = [phi.lipschitz(t).cpu().numpy() for t in (x, xp, xn)]
                lam = {kind: loss_lipschitz_constant(*L, tau, kind=kind) for kind in ("average", "max")}
                lam["embedding"] = embedding_lipschitz_constant(*L, tau)
                lam["tunable"] = tunable_lipschitz_constant(*L, tau)
                worst = dict.fromkeys(lam, 0.0)
                for i_pair in range(2 * n_pairs):
                    t1, t2 = phi.random_parameters(gen), phi.random_parameters(gen)
                    if i_pair % 2:  # a short step: the local ratio is what a constant must cover
                        t2 = t1 + 1e-3 * (t2 - t1)
                    l1 = loss_per_tuple(phi.set_theta_(t1), x, xp, xn, tau).cpu().numpy()
                    l2 = loss_per_tuple(phi.set_theta_(t2), x, xp, xn, tau).cpu().numpy()
                    dist = float(torch.linalg.vector_norm(t1 - t2))
                    for kind in worst:
                        worst[kind] = max(worst[kind], float(np.max(np.abs(l1 - l2) / (lam[kind] * dist))))
                phi.set_theta_(phi.center)
            for kind, w in worst.items():
                rows.append({"cls": cls_name, "k": int(k), "kind": kind, "worst": w})
    return pd.DataFrame(rows)


def ledger_lipschitz(ledger, table: pd.DataFrame, check: pd.DataFrame, tau: float, level: float = 0.99) -> dict:
    """Ledger: ``E Lambda`` measured (normal interval at ``level``; 99% by default because the
    chapter records one value per (data, k, kind)) against the quadrature prediction; and the
    Lipschitz property on random parameter pairs (one-sided)."""
    out = {}
    for name, sub in table[table.kind == "embedding"].groupby("data"):
        worst = float(sub.worst_ratio_to_min.max())
        ledger.record(claim="C5", id=f"C5-embedding-below-both-{name}",
                      quantity="largest Lambda_star / min(Lambda_avg, Lambda_max) over tuples (BallLinear)",
                      predicted=1.0, measured=Estimate.exact(worst), rule=Rule.bound("measured", "<=", tol=1e-12),
                      params={"data": name, "tau": tau, "ks": sorted(int(v) for v in sub.k)})
        out[f"embedding_ratio_{name}"] = worst
    for _, r in table[table.kind != "embedding"].iterrows():
        ledger.record(claim="C5", id=f"C5-lipschitz-{r.kind}-{r.data}-k{r.k}",
                      quantity=f"E Lambda_{r.kind} (BallLinear, {r.data} data)", predicted=r.predicted,
                      measured=Estimate(r["mean"], r.se, int(r.n), level),
                      params={"data": r.data, "k": int(r.k), "kind": r.kind, "tau": tau, "n": int(r.n),
                              "level": level})
    for (cls_name, kind), sub in check.groupby(["cls", "kind"]):
        worst = float(sub.worst.max())
        ledger.record(claim="C5", id=f"C5-lipschitz-holds-{cls_name}-{kind}",
                      quantity=f"largest |l(theta)-l(theta')| / (Lambda_{kind} |theta-theta'|)",
                      predicted=1.0, measured=Estimate.exact(worst), rule=Rule.bound("measured", "<="),
                      params={"cls": cls_name, "kind": kind, "tau": tau,
                              "ks": sorted(int(v) for v in sub.k.unique())})
        out[f"worst_{cls_name}_{kind}"] = worst
    return out


def crossover_k(model, tau: float, k_max: float = 1e12) -> float | None:
    """Smallest k (on a log grid up to k_max) where ``E Lambda_max > E Lambda_avg`` for the data of
    ``model``, or None."""
    for k in np.unique(np.logspace(0, math.log10(k_max), 241).astype(np.int64)):
        p = lipschitz_predictions(model, int(k), tau)
        if p["max"] > p["avg"]:
            return float(k)
    return None


def _rademacher_setup(spec: dict, n: int, k: int, gen, dev):
    """The class and the data of one configuration of :func:`rademacher_configs`."""
    model = from_params(spec["model"])
    x, xp, xn = model.sample_tuples(n, k, generator=gen, device=dev)
    if spec["class"] == "BallLinear":
        phi = BallLinear(spec["dim"], spec["dim_out"], scale=0.25, radius=spec["radius"]).to(dev)
    elif spec["class"] == "NormalisedLinear":
        phi = NormalisedLinear(spec["dim"], spec["radius"]).to(dev)
    else:
        raise ValueError(f"unknown class in spec {spec!r}")
    return phi, (x, xp, xn)


@cached
@on_one_cpu_thread
def rademacher_estimates(configs: list, tau: float, n_sigma: int, steps: int, n_starts: int, device: str, seed: int):
    """Estimate R_n (``empirical_rademacher``) for each config ``{"class", "model", "dim",
    ("dim_out"), "radius", "n", "k", "sweep"}`` (from :func:`rademacher_configs`) and evaluate, on
    the same sample, the covering bound of Theorem ``c4-thm-rademacher`` with the average-form, the
    max-form and the embedding Lipschitz constants, and the vector-contraction bound of Theorem
    ``c4-thm-vector`` (with the sample's mean squared input norms).

    Columns: ``sweep, class, dim, n, k, value, se, ci_low, ci_high, bound_avg, bound_max,
    bound_embedding, bound_vector, n_params``.
    """
    dev = resolve_device(device)
    rows = []
    for i, cfg in enumerate(progress(configs, desc="c5 Rademacher")):
        gen = torch.Generator(device=dev).manual_seed(int(seed) * 1000 + i)
        phi, data = _rademacher_setup(cfg, cfg["n"], cfg["k"], gen, dev)
        est = empirical_rademacher(phi, data, n_sigma, tau=tau, steps=steps, n_starts=n_starts,
                                   seed=int(seed) * 1000 + i)
        with torch.no_grad():
            L = [phi.lipschitz(t).cpu().numpy() for t in data]
            m2 = [float((t**2).sum(-1).mean()) for t in data]
        lams = {kind: loss_lipschitz_constant(*L, tau, kind=kind) for kind in ("average", "max")}
        lams["embedding"] = embedding_lipschitz_constant(*L, tau)
        bounds = {kind: rademacher_covering_bound(float(np.sqrt(np.mean(lam**2))), phi.radius, phi.n_params, cfg["n"])
                  for kind, lam in lams.items()}
        post = 1.0 / (1.0 - phi.radius) if cfg["class"] == "NormalisedLinear" else 1.0
        vec = vector_contraction_bound(cfg["n"], cfg["k"], tau, radius=phi.radius, dim_out=phi.output_dim,
                                       m2_anchor=m2[0], m2_positive=m2[1], m2_negatives=m2[2], post_lipschitz=post)
        rows.append({**{k: v for k, v in cfg.items() if k != "model"}, "value": est.value, "se": est.se,
                     "ci_low": est.ci_low, "ci_high": est.ci_high, "bound_avg": bounds["average"],
                     "bound_max": bounds["max"], "bound_embedding": bounds["embedding"], "bound_vector": vec,
                     "n_params": phi.n_params})
    return pd.DataFrame(rows)


def rademacher_configs(euclidean_model, sphere_model, ns: list, ks: list, dims: list, n_fixed: int,
                       k_fixed: int) -> list:
    """The three sweeps of the chapter: over n and over k (BallLinear(dim -> 4) on the data of
    ``euclidean_model``), over the dimension d (NormalisedLinear on the data of ``sphere_model``
    moved to S^{d-1}, same concentration)."""
    base = {"class": "BallLinear", "model": euclidean_model.params, "dim": euclidean_model.dim, "dim_out": 4,
            "radius": 0.05}
    out = [{**base, "n": int(n), "k": int(k_fixed), "sweep": "n"} for n in ns]
    out += [{**base, "n": int(n_fixed), "k": int(k), "sweep": "k"} for k in ks]
    out += [{"class": "NormalisedLinear", "model": {**sphere_model.params, "dim": int(d)}, "dim": int(d),
             "radius": 0.5, "n": int(n_fixed), "k": int(k_fixed), "sweep": "d"} for d in dims]
    return out


def ledger_rademacher(ledger, table: pd.DataFrame, tau: float) -> dict:
    """Ledger: slope in n (predicted -1/2), slope in k (predicted 0, over k >= 4), and every bound
    (covering with the average, max and embedding constants; vector contraction) above the upper
    end of every estimate's interval (one-sided: the estimate is a lower estimate of R_n)."""
    out = {}
    by_n = table[table.sweep == "n"]
    fit = fit_loglog_slope(by_n.n, by_n.value, by_n.se)
    ledger.record(claim="C5", id="C5-rademacher-slope-n", quantity="log-log slope of R_n against n",
                  predicted=-0.5, measured=fit,
                  params={"class": "BallLinear", "k": int(by_n.k.iloc[0]), "ns": [int(v) for v in by_n.n],
                          "tau": tau})
    out.update(n_slope=fit.mean, n_slope_low=fit.ci_low, n_slope_high=fit.ci_high)
    by_k = table[(table.sweep == "k") & (table.k >= 4)]
    fit = fit_loglog_slope(by_k.k, by_k.value, by_k.se)
    ledger.record(claim="C5", id="C5-rademacher-slope-k", quantity="log-log slope of R_n against k (k >= 4)",
                  predicted=0.0, measured=fit,
                  params={"class": "BallLinear", "n": int(by_k.n.iloc[0]), "ks": [int(v) for v in by_k.k],
                          "tau": tau})
    out.update(k_slope=fit.mean, k_slope_low=fit.ci_low, k_slope_high=fit.ci_high)
    for form, col in (("average", "bound_avg"), ("max", "bound_max"), ("embedding", "bound_embedding"),
                      ("vector", "bound_vector")):
        worst = float((table.ci_high / table[col]).max())
        ledger.record(claim="C5", id=f"C5-rademacher-below-bound-{form}",
                      quantity=f"largest (upper end of the R_n interval) / bound ({form})",
                      predicted=1.0, measured=Estimate.exact(worst), rule=Rule.bound("measured", "<="),
                      params={"configs": len(table), "tau": tau})
        out[f"bound_ratio_{form}"] = worst
        out[f"bound_gap_{form}"] = 1.0 / worst
    covering = table[["bound_avg", "bound_max", "bound_embedding"]].min(axis=1)
    out["vector_advantage"] = float((covering / table.bound_vector).min())
    return out


# ---------------------------------------------------------------------------------------------
# Continuity in the embeddings (Proposition c4-prop-embedding) and the complexity bounds compared


def _ball_points(rng, shape, dim):
    """Points of the closed unit ball of R^dim: uniform, a fifth of them on the sphere."""
    g = rng.standard_normal(shape + (dim,))
    g /= np.linalg.norm(g, axis=-1, keepdims=True)
    r = rng.uniform(0, 1, shape + (1,)) ** (1.0 / dim)
    return g * np.where(rng.uniform(size=shape + (1,)) < 0.2, 1.0, r)


def _loss_of_embeddings(u, V, beta, variant):
    s = np.einsum("bd,bkd->bk", u, V)
    z = beta * (s if variant == "standard" else s[:, 1:])
    return -beta * s[:, 0] + logsumexp(z, axis=1)


@cached
def embedding_segments(ks: list, betas: list, n_pairs: int, dim: int, seed: int):
    """Pairs of points of the ball product against part 2 of Proposition ``c4-prop-embedding``.

    For each variant, k and beta: ``n_pairs`` random pairs ``e, e'`` of ``B^{k+2}`` in ``R^dim``
    (half of them a short step, ``e' = e + 10^-3 (e'' - e)``), plus the extreme configuration
    (``u = v_1 = e_1``, every other point ``-e_1``) where the weight of negative 1 is exactly
    ``p_max``. Columns: ``variant, k, beta, n, worst`` (largest ``|g(e') - g(e)| / bound``),
    ``mean_ratio``, ``weight_ratio`` (largest ``p_j / p_max`` seen; 1 at the extreme point).
    """
    rng = np.random.default_rng(int(seed))
    rows = []
    for variant in ("standard", "decoupled"):
        for k in ks:
            if variant == "decoupled" and k == 1:
                continue
            for beta in betas:
                tau = 1.0 / beta
                u, V = _ball_points(rng, (n_pairs,), dim), _ball_points(rng, (n_pairs, k + 1), dim)
                u2, V2 = _ball_points(rng, (n_pairs,), dim), _ball_points(rng, (n_pairs, k + 1), dim)
                half = n_pairs // 2
                u2[:half], V2[:half] = u[:half] + 1e-3 * (u2[:half] - u[:half]), V[:half] + 1e-3 * (V2[:half] - V[:half])
                du, dV = np.linalg.norm(u2 - u, axis=-1), np.linalg.norm(V2 - V, axis=-1)
                bound = embedding_lipschitz_constant(du, dV[:, 0], dV[:, 1:], tau, variant=variant)
                actual = np.abs(_loss_of_embeddings(u2, V2, beta, variant) - _loss_of_embeddings(u, V, beta, variant))
                ratio = actual / bound
                e1 = np.eye(dim)[0]
                ext = np.stack([-e1, e1] + [-e1] * (k - 1))
                z = beta * (ext @ e1 if variant == "standard" else ext[1:] @ e1)
                w = np.exp(z - z.max())
                w /= w.sum()
                w_neg = w[1] if variant == "standard" else w[0]
                rows.append({"variant": variant, "k": int(k), "beta": float(beta), "n": n_pairs,
                             "worst": float(ratio.max()), "mean_ratio": float(ratio.mean()),
                             "weight_ratio": float(w_neg / max_negative_weight(k, tau, variant=variant))})
    return pd.DataFrame(rows)


def ledger_segments(ledger, table: pd.DataFrame) -> dict:
    """Ledger (claim C4): the bound of Proposition ``c4-prop-embedding`` holds on every pair
    (one-sided, per variant), and the weight bound ``p_max`` is attained at the extreme
    configuration (the ratio is 1 up to rounding: ``Estimate.exact`` with error 1e-12)."""
    out = {}
    for variant, sub in table.groupby("variant"):
        worst = float(sub.worst.max())
        ledger.record(claim="C4", id=f"C4-embedding-holds-{variant}",
                      quantity="largest |g(e') - g(e)| / bound over pairs of the ball product",
                      predicted=1.0, measured=Estimate.exact(worst), rule=Rule.bound("measured", "<="),
                      params={"variant": variant, "pairs": int(sub.n.sum()), "ks": sorted(int(v) for v in sub.k.unique()),
                              "betas": sorted(float(v) for v in sub.beta.unique())})
        out[f"segments_worst_{variant}"] = worst
        out[f"segments_mean_{variant}"] = float(sub.mean_ratio.mean())
    attained = float(table.weight_ratio.iloc[np.argmax(np.abs(table.weight_ratio.to_numpy() - 1.0))])
    ledger.record(claim="C4", id="C4-weight-bound-attained", quantity="p_j / p_max at the extreme configuration "
                  "(the value farthest from 1 over k, beta, variant)", predicted=1.0,
                  measured=Estimate.exact(attained, 1e-12), params={"configs": len(table)})
    out["segments_pairs"] = int(table.n.sum())
    return out


def complexity_table(taus: list, ks: list, n: int, radius: float, dim: int) -> pd.DataFrame:
    """The bounds on ``R_n`` for ``NormalisedLinear(dim, radius)`` on unit inputs (L = 1/(1-r),
    ``P = dim^2``), in closed form: the covering bound of Theorem ``c4-thm-rademacher`` with
    ``Lambda_avg`` and with ``Lambda_star``, and the vector-contraction bound of Theorem
    ``c4-thm-vector``, with the factors each route pays. Columns: ``tau, k, covering_avg,
    covering_star, vector, lambda_avg, lambda_star, vector_factor`` (``3 + sqrt(k p_max)``)."""
    L = 1.0 / (1.0 - radius)
    rows = []
    for tau in taus:
        for k in ks:
            ones = np.ones(1)
            args = (L * ones, L * ones, L * np.ones((1, k)), tau)
            lam_avg = float(loss_lipschitz_constant(*args, kind="average")[0])
            lam_star = float(embedding_lipschitz_constant(*args)[0])
            rows.append({"tau": tau, "k": int(k),
                         "covering_avg": rademacher_covering_bound(lam_avg, radius, dim * dim, n),
                         "covering_star": rademacher_covering_bound(lam_star, radius, dim * dim, n),
                         "vector": vector_contraction_bound(n, k, tau, radius=radius, dim_out=dim, post_lipschitz=L),
                         "lambda_avg": lam_avg, "lambda_star": lam_star,
                         "vector_factor": 3.0 + math.sqrt(k * max_negative_weight(k, tau))})
    return pd.DataFrame(rows)


def complexity_glue(table: pd.DataFrame) -> dict:
    """Every number of :func:`complexity_table` as ``<column>_tau<tau>_k<k>`` (tau written with
    ``p`` for the decimal point), plus ``ratio_...``: the old covering bound over the smaller of the
    two new ones."""
    out = {}
    for _, r in table.iterrows():
        tag = f"tau{r.tau:g}".replace(".", "p") + f"_k{int(r.k)}"
        for col in ("covering_avg", "covering_star", "vector", "lambda_avg", "lambda_star", "vector_factor"):
            out[f"{col}_{tag}"] = float(r[col])
        out[f"ratio_{tag}"] = float(r.covering_avg / min(r.covering_star, r.vector))
    return out


@cached
@on_one_cpu_thread
def radius_exercise(sphere_model, radii: list, n: int, k: int, tau: float, n_sigma: int, steps: int, device: str,
                    seed: int):
    """The exercise ``c4-ex-radius``: ``empirical_rademacher`` of ``NormalisedLinear(dim, r)`` on the
    same ``n`` tuples of ``sphere_model`` for each radius r. Columns: ``radius, value, se, ratio``
    (``value / radius``)."""
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    data = sphere_model.sample_tuples(n, k, generator=gen, device=dev)
    rows = []
    for r in radii:
        phi = NormalisedLinear(sphere_model.dim, r).to(dev)
        est = empirical_rademacher(phi, data, n_sigma, tau=tau, steps=steps, n_starts=1, seed=int(seed))
        rows.append({"radius": float(r), "value": est.value, "se": est.se, "ratio": est.value / r})
    return pd.DataFrame(rows)


def radius_glue(table: pd.DataFrame) -> dict:
    """Numbers of the exercise ``c4-ex-radius``: the ratios estimate/radius as text, and the ratio
    of the largest to the smallest."""
    ratios = table.ratio.to_numpy()
    text = ", ".join(f"{v:.3f} (r = {r:g})" for r, v in zip(table.radius, ratios))
    return {"ratios": text, "spread": float(ratios.max() / ratios.min())}


def exercise_numbers(euclidean_model, tau: float, k: int = 16, tau_scalings: float = 0.5) -> dict:
    """Numbers of the exercises: ``k p_max`` at ``tau_scalings`` and the ratio
    ``sqrt(3 (5 + k p)) / (3 + sqrt(k p))`` of the naive to the optimal block scalings
    (``c4-ex-scalings``); for ``L(x) = |x|`` on the data of ``euclidean_model`` at ``tau``, the
    sub-Gaussian bound ``beta (E L + 2 sqrt(beta))`` (sigma = 1) and ``beta E max_{j <= k} |x_j|``
    (``c4-ex-dv-uniform``)."""
    kp = k * max_negative_weight(k, tau_scalings)
    beta = 1.0 / tau
    return {"kp": kp, "scaling_ratio": math.sqrt(3.0 * (5.0 + kp)) / (3.0 + math.sqrt(kp)),
            "dv_bound": beta * (expected_max_norm(euclidean_model, 1) + 2.0 * math.sqrt(beta)),
            "max_norm": beta * expected_max_norm(euclidean_model, k)}


_KIND_STYLE = {"average": ("C0", "o", "average (C4)"), "max": ("C1", "s", "max"), "dv": ("C2", "^", "Donsker-Varadhan"),
               "embedding": ("C3", "D", "embedding (Lambda_star)")}


def fig_continuity_ratios(table, tau: float):
    """Mean ratio bound/actual change against k (log-log), one panel per (model, perturbation), at
    temperature ``tau`` (in the titles).

    Args: table from :func:`perturbations`.
    """
    models = list(dict.fromkeys(table.model))
    perts = list(dict.fromkeys(table.perturbation))
    fig, axes = plt.subplots(len(models), len(perts), figsize=(3.3 * len(perts), 2.9 * len(models)),
                             sharex=True, squeeze=False)
    for i, model in enumerate(models):
        for j, pert in enumerate(perts):
            ax = axes[i, j]
            sub = table[(table.model == model) & (table.perturbation == pert)].sort_values("k")
            for kind in ("average", "max", "dv"):
                color, marker, label = _KIND_STYLE[kind]
                ax.loglog(sub.k, sub[f"ratio_{kind}_mean"], marker=marker, color=color, ms=4, label=label)
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_title(f"{model}, {pert}, tau = {tau:g}")
            if i == len(models) - 1:
                ax.set_xlabel("negatives $k$")
            if j == 0:
                ax.set_ylabel("bound / actual change")
    axes[0, 0].legend(fontsize="small")
    fig.tight_layout()
    return fig


def fig_lipschitz_vs_k(table, tau: float):
    """``E Lambda`` (average, max and embedding forms) against k, measured (95% CI) and predicted
    (lines; average and max forms), at temperature ``tau`` (in the titles).

    Args: table from :func:`lipschitz_constants`.
    """
    data = list(dict.fromkeys(table.data))
    fig, axes = plt.subplots(1, len(data), figsize=(4.6 * len(data), 3.6), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], data):
        for kind in ("average", "max", "embedding"):
            color, marker, label = _KIND_STYLE[kind]
            sub = table[(table.data == name) & (table.kind == kind)].sort_values("k")
            ax.errorbar(sub.k, sub["mean"], yerr=normal_quantile(0.95) * sub.se, fmt=marker, color=color, ms=4,
                        capsize=3, label=f"{label}: measured")
            if sub.predicted.notna().any():
                ax.plot(sub.k, sub.predicted, "-", color=color, lw=1, label=f"{label}: predicted")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("negatives $k$")
        ax.set_title(f"{name} inputs, tau = {tau:g}")
    axes[0, 0].set_ylabel(r"$\mathbb{E}\,\Lambda(z)$ (nats per unit of $\theta$)")
    axes[0, 0].legend(fontsize="small")
    fig.tight_layout()
    return fig


def fig_rademacher_sweeps(table, tau: float, n_fit: tuple | None = None):
    """The estimated Rademacher complexity (95% CI), the covering bounds (average, max and
    embedding constants) and the vector-contraction bound against n, k and d, at ``tau``.

    Args: table from :func:`rademacher_estimates`; ``n_fit``: optional ``(slope, intercept)`` of
    log R_n on log n (:func:`~infonce_book.theory.stats.fit_loglog_line`), drawn as a line.
    """
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, (sweep, xlabel) in zip(axes, [("n", "tuples $n$"), ("k", "negatives $k$"), ("d", "dimension $d$")]):
        sub = table[table.sweep == sweep].sort_values(sweep if sweep != "d" else "dim")
        x = sub["dim"] if sweep == "d" else sub[sweep]
        ax.errorbar(x, sub.value, yerr=[sub.value - sub.ci_low, sub.ci_high - sub.value], fmt="o", color="k",
                    ms=4, capsize=3, label=r"$\hat R_n$ (lower estimate)")
        ax.plot(x, sub.bound_avg, "--", color="C0", label="covering, average form")
        ax.plot(x, sub.bound_max, ":", color="C1", lw=2, label="covering, max form")
        ax.plot(x, sub.bound_embedding, "-.", color="C2", label="covering, embedding form")
        ax.plot(x, sub.bound_vector, "-", color="C4", label="vector contraction")
        if sweep == "n" and n_fit is not None:
            xs = np.array([x.min(), x.max()], dtype=float)
            slope, intercept = n_fit
            ax.plot(xs, np.exp(intercept) * xs ** slope.mean, "-", color="C3", lw=1,
                    label=f"fit: slope {slope.mean:.2f}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_title(f"against {sweep}, tau = {tau:g}")
    axes[0].set_ylabel("nats")
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    return fig
