"""Chapter 4's runners: a :class:`~.config.ContinuitySetup`, the page's models and sizes in, a
tidy table out, cached by configuration; the predictions they are compared with; and the values
the page quotes from those tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from scipy import integrate
from scipy.special import logsumexp

from ...experiment.cache import cached
from ...experiment.prose import count_word, join_words
from ...learning.embeddings import BallLinear, BallMLP, NormalisedLinear, loss_per_tuple, reference_embedding
from ...learning.rademacher import empirical_rademacher
from ...losses import info_nce_from_similarities
from ...models import from_params
from ...theory.bounds import (
    continuity_bound,
    embedding_lipschitz_constant,
    loss_lipschitz_constant,
    max_negative_weight,
    rademacher_covering_bound,
    tunable_lipschitz_constant,
    vector_contraction_bound,
)
from ...utils.device import on_one_cpu_thread, resolve_device
from ...utils.progress import progress
from .config import ContinuitySetup

__all__ = ["PERTURBATIONS", "complexity_glue", "complexity_table", "crossover_k", "embedding_segments",
           "exercise_numbers", "expected_max_norm", "lipschitz_check", "lipschitz_constants", "lipschitz_predictions",
           "perturbations", "rademacher_configs", "rademacher_estimates", "radius_exercise", "radius_glue",
           "sparse_average_ratio_limit"]


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
def perturbations(setup: ContinuitySetup, models: dict, ks: list, n_pairs: int, max_elements: int, device: str,
                  seed: int):
    """Actual ``|l(s') - l(s)|`` against the three bounds of Proposition ``c4-prop-continuity``.

    For each model (``{name: model}``), k and perturbation ("sparse": the top negative moved by
    ``setup.eps``; "dense": the positive moved down and every negative up by ``setup.eps``;
    "parameter": the embedding's parameters moved by ``setup.eps_theta`` in a random direction),
    at ``setup.tau``, ``n_pairs`` pairs
    (processed in batches of at most ``max_elements`` similarities). Columns: ``model, k,
    perturbation, n, ratio_<kind>_max`` (largest actual/bound: <= 1 iff the bound held on every
    pair), ``ratio_<kind>_mean, ratio_<kind>_se`` (mean and s.e. of bound/actual), ``actual_mean``.
    """
    tau, eps, eps_theta = setup.tau, setup.eps, setup.eps_theta
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
def lipschitz_constants(setup: ContinuitySetup, models: dict, ks: list, n_tuples: int, max_elements: int,
                        device: str, seed: int):
    """``Lambda_avg`` and ``Lambda_max`` of Theorem ``c4-thm-lipschitz`` and ``Lambda_star`` of
    Corollary ``c4-cor-embedding`` (kind ``"embedding"``) on sampled tuples, at ``setup.tau``.

    For ``phi = BallLinear`` (``L(x) = |x|``), the data of each model (``{name: model}``, Euclidean
    models with ``norm_sf``), each k: mean and standard error over tuples, the predictions by
    quadrature (average and max forms), and for ``Lambda_star`` the largest ratio
    ``Lambda_star / min(Lambda_avg, Lambda_max)`` over the tuples (``worst_ratio_to_min``, at most 1
    by the corollary). The number of tuples at k is ``min(n_tuples, max_elements // k)``.
    """
    tau = setup.tau
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    rows = []
    for name, model in models.items():
        for k in progress(ks, desc=f"c4 Lipschitz constants ({name})"):
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
def lipschitz_check(setup: ContinuitySetup, sphere_model, euclidean_model, ks: list, n_tuples: int, n_pairs: int,
                    device: str, seed: int):
    """Check ``|l(theta; z) - l(theta'; z)| <= Lambda(z) |theta - theta'|`` for random pairs in Theta.

    Classes (:class:`~.config.ContinuitySetup`): NormalisedLinear on the data of ``sphere_model``
    (vMF), BallLinear and BallMLP on the data of ``euclidean_model`` (Gaussian); at ``setup.tau``.
    Constants: ``average``,
    ``max`` (Theorem ``c4-thm-lipschitz``), ``embedding`` (Corollary ``c4-cor-embedding``),
    ``tunable`` (Corollary ``c4-cor-dv``). ``n_pairs`` random pairs in Theta and as many short steps
    (1e-3 of the way to a random point). Columns: ``cls, k, kind, worst`` (largest ratio over
    tuples and pairs).
    """
    tau = setup.tau
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    rows = []
    d, d_out = euclidean_model.dim, setup.ball_dim_out
    specs = [("NormalisedLinear", sphere_model, lambda: NormalisedLinear(sphere_model.dim, setup.sphere_radius)),
             ("BallLinear", euclidean_model,
              lambda: BallLinear(d, d_out, scale=setup.ball_scale, radius=setup.ball_radius)),
             ("BallMLP", euclidean_model, lambda: BallMLP(d, setup.mlp_hidden, d_out, radius=setup.mlp_radius))]
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


def crossover_k(model, tau: float, k_max: float = 1e12) -> float | None:
    """Smallest k (on a log grid up to k_max) where ``E Lambda_max > E Lambda_avg`` for the data of
    ``model``, or None."""
    for k in np.unique(np.logspace(0, math.log10(k_max), 241).astype(np.int64)):
        p = lipschitz_predictions(model, int(k), tau)
        if p["max"] > p["avg"]:
            return float(k)
    return None


def _rademacher_setup(setup: ContinuitySetup, spec: dict, n: int, k: int, gen, dev):
    """The class and the data of one configuration of :func:`rademacher_configs`."""
    model = from_params(spec["model"])
    x, xp, xn = model.sample_tuples(n, k, generator=gen, device=dev)
    if spec["class"] == "BallLinear":
        phi = BallLinear(spec["dim"], spec["dim_out"], scale=setup.ball_scale, radius=spec["radius"]).to(dev)
    elif spec["class"] == "NormalisedLinear":
        phi = NormalisedLinear(spec["dim"], spec["radius"]).to(dev)
    else:
        raise ValueError(f"unknown class in spec {spec!r}")
    return phi, (x, xp, xn)


@cached
@on_one_cpu_thread
def rademacher_estimates(setup: ContinuitySetup, configs: list, n_sigma: int, steps: int, n_starts: int, device: str,
                         seed: int):
    """Estimate R_n (``empirical_rademacher``) for each config ``{"class", "model", "dim",
    ("dim_out"), "radius", "n", "k", "sweep"}`` (from :func:`rademacher_configs`) and evaluate, on
    the same sample, the covering bound of Theorem ``c4-thm-rademacher`` with the average-form, the
    max-form and the embedding Lipschitz constants, and the vector-contraction bound of Theorem
    ``c4-thm-vector`` (with the sample's mean squared input norms), at ``setup.tau``.

    Columns: ``sweep, class, dim, n, k, value, se, ci_low, ci_high, bound_avg, bound_max,
    bound_embedding, bound_vector, n_params``.
    """
    tau = setup.tau
    dev = resolve_device(device)
    rows = []
    for i, cfg in enumerate(progress(configs, desc="c4 Rademacher")):
        gen = torch.Generator(device=dev).manual_seed(int(seed) * 1000 + i)
        phi, data = _rademacher_setup(setup, cfg, cfg["n"], cfg["k"], gen, dev)
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


def rademacher_configs(setup: ContinuitySetup, euclidean_model, sphere_model, ns: list, ks: list, dims: list,
                       n_fixed: int, k_fixed: int) -> list:
    """The three sweeps of the chapter: over n and over k (BallLinear on the data of
    ``euclidean_model``), over the dimension d (NormalisedLinear on the data of ``sphere_model``
    moved to S^{d-1}, same concentration); the classes' sizes from ``setup``."""
    base = {"class": "BallLinear", "model": euclidean_model.params, "dim": euclidean_model.dim,
            "dim_out": setup.ball_dim_out, "radius": setup.ball_radius}
    out = [{**base, "n": int(n), "k": int(k_fixed), "sweep": "n"} for n in ns]
    out += [{**base, "n": int(n_fixed), "k": int(k), "sweep": "k"} for k in ks]
    out += [{"class": "NormalisedLinear", "model": {**sphere_model.params, "dim": int(d)}, "dim": int(d),
             "radius": setup.sphere_radius, "n": int(n_fixed), "k": int(k_fixed), "sweep": "d"} for d in dims]
    return out


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
def embedding_segments(setup: ContinuitySetup, ks: list, betas: list, n_pairs: int, seed: int):
    """Pairs of points of the ball product against part 2 of Proposition ``c4-prop-embedding``.

    For each variant, k and beta: ``n_pairs`` random pairs ``e, e'`` of ``B^{k+2}`` in ``R^dim``
    (``dim = setup.segment_dim``)
    (half of them a short step, ``e' = e + 10^-3 (e'' - e)``), plus the extreme configuration
    (``u = v_1 = e_1``, every other point ``-e_1``) where the weight of negative 1 is exactly
    ``p_max``. Columns: ``variant, k, beta, n, worst`` (largest ``|g(e') - g(e)| / bound``),
    ``mean_ratio``, ``weight_ratio`` (largest ``p_j / p_max`` seen; 1 at the extreme point).
    """
    dim = setup.segment_dim
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


def complexity_table(setup: ContinuitySetup, dim: int) -> pd.DataFrame:
    """The bounds on ``R_n`` for ``NormalisedLinear(dim, radius)`` on unit inputs (L = 1/(1-r),
    ``P = dim^2``), in closed form: the covering bound of Theorem ``c4-thm-rademacher`` with
    ``Lambda_avg`` and with ``Lambda_star``, and the vector-contraction bound of Theorem
    ``c4-thm-vector``, with the factors each route pays, over ``setup.table_taus`` and
    ``setup.table_ks`` (``n = setup.table_n``, ``radius = setup.sphere_radius``). Columns:
    ``tau, k, covering_avg, covering_star, vector, lambda_avg, lambda_star, vector_factor``
    (``3 + sqrt(k p_max)``)."""
    taus, ks, n, radius = setup.table_taus, setup.table_ks, setup.table_n, setup.sphere_radius
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
def radius_exercise(setup: ContinuitySetup, sphere_model, radii: list, n: int, n_sigma: int, steps: int,
                    device: str, seed: int):
    """The exercise ``c4-ex-radius``: ``empirical_rademacher`` of ``NormalisedLinear(dim, r)`` on the
    same ``n`` tuples (``setup.exercise_k`` negatives) of ``sphere_model`` for each radius r, at
    ``setup.tau``. Columns: ``radius, value, se, ratio``
    (``value / radius``)."""
    k, tau = setup.exercise_k, setup.tau
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
    return {"ratios": text, "spread": float(ratios.max() / ratios.min()),
            "radii": join_words([f"{r:g}" for r in table.radius]), "n_radii": count_word(len(table))}


def exercise_numbers(setup: ContinuitySetup, euclidean_model) -> dict:
    """Numbers of the exercises, with ``k = setup.exercise_k``: ``k p_max`` at ``setup.tau_scalings``
    and the ratio ``sqrt(3 (5 + k p)) / (3 + sqrt(k p))`` of the naive to the optimal block scalings
    (``c4-ex-scalings``); for ``L(x) = |x|`` on the data of ``euclidean_model`` at ``setup.tau``, the
    sub-Gaussian bound ``beta (E L + 2 sqrt(beta))`` (sigma = 1) and ``beta E max_{j <= k} |x_j|``
    (``c4-ex-dv-uniform``)."""
    k, tau = setup.exercise_k, setup.tau
    kp = k * max_negative_weight(k, setup.tau_scalings)
    beta = 1.0 / tau
    return {"kp": kp, "scaling_ratio": math.sqrt(3.0 * (5.0 + kp)) / (3.0 + math.sqrt(kp)),
            "dv_bound": beta * (expected_max_norm(euclidean_model, 1) + 2.0 * math.sqrt(beta)),
            "max_norm": beta * expected_max_norm(euclidean_model, k)}
