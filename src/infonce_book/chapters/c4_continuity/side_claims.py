"""Chapter 4's runners for the paper's two side claims: the temperature sweep (low temperatures and
the negatives' norms) and the dimension sweep (a norm budget fixed as the embedding dimension
grows). A :class:`~.config.SideClaimsSetup`, the page's models and sizes in, a tidy table out,
cached by configuration."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from ...experiment.cache import cached
from ...learning.embeddings import BallLinear, FrobeniusLinear, NormalisedLinear, loss_per_tuple
from ...learning.rademacher import empirical_rademacher
from ...learning.training import fit
from ...models import from_params
from ...theory.bounds import (
    embedding_lipschitz_constant,
    loss_lipschitz_constant,
    max_negative_weight,
    rademacher_covering_bound,
    similarity_contraction_bound,
    vector_contraction_bound,
)
from ...theory.stats import Estimate
from ...utils.device import on_one_cpu_thread, resolve_device
from ...utils.progress import progress
from .config import ContinuitySetup, SideClaimsSetup
from .design import aligned_concentration

__all__ = ["dimension_gap_replication", "dimension_sweep", "temperature_constants", "temperature_sweep"]


def _embedding_class(setup: ContinuitySetup, model):
    """The chapter's class for the data of ``model``: NormalisedLinear on the sphere, BallLinear on
    Euclidean data (``setup``'s sizes)."""
    if model.identity_embedding:
        return NormalisedLinear(model.dim, setup.sphere_radius)
    return BallLinear(model.dim, setup.ball_dim_out, scale=setup.ball_scale, radius=setup.ball_radius)


def temperature_constants(setup: ContinuitySetup, model, tau: float, k: int, n: int, data) -> dict:
    """The continuity constants and the complexity term at ``tau`` for the chapter's class on the
    data of ``model``, from the tuples ``data`` ((m, p), (m, p), (m, k, p)).

    Returns ``lambda_star, lambda_avg, lambda_max`` (means over the tuples), ``neg_star``
    (the mean of the negatives' part of ``Lambda_star`` divided by ``beta``), ``covering`` (the
    covering bound with the root mean square of ``Lambda_star``, at ``n`` tuples), ``vector``
    (the vector-contraction bound with the tuples' mean squared norms) and ``complexity``, the
    smaller of the two (nats)."""
    phi = _embedding_class(setup, model)
    with torch.no_grad():
        L = [phi.lipschitz(t).cpu().numpy() for t in data]
        m2 = [float((t**2).sum(-1).mean()) for t in data]
    star = embedding_lipschitz_constant(*L, tau)
    avg, mx = (loss_lipschitz_constant(*L, tau, kind=kind) for kind in ("average", "max"))
    p_max = max_negative_weight(k, tau)
    neg = np.minimum(L[2].max(axis=1), p_max * L[2].sum(axis=1))
    covering = rademacher_covering_bound(float(np.sqrt(np.mean(star**2))), phi.radius, phi.n_params, n)
    post = 1.0 / (1.0 - phi.radius) if model.identity_embedding else 1.0
    vector = vector_contraction_bound(n, k, tau, radius=phi.radius, dim_out=phi.output_dim, m2_anchor=m2[0],
                                      m2_positive=m2[1], m2_negatives=m2[2], post_lipschitz=post)
    return {"lambda_star": float(star.mean()), "lambda_avg": float(avg.mean()), "lambda_max": float(mx.mean()),
            "neg_star": float(neg.mean()), "neg_star_se": float(neg.std(ddof=1) / math.sqrt(len(neg))),
            "covering": covering, "vector": vector, "complexity": min(covering, vector)}


def _train_gap(phi, train, test, tau: float, steps: int, lr: float, seed: int) -> float:
    """Train ``phi`` by projected Adam on ``train`` (full batch) at ``tau`` from its current
    parameters ``theta_0`` (which must not depend on ``train``); return the generalisation gap with
    a control variate (nats):
    ``[L_test(theta_hat) - L_test(theta_0)] - [L_train(theta_hat) - L_train(theta_0)]``.

    The subtracted ``L_test(theta_0) - L_train(theta_0)`` has mean 0 (a fixed embedding), so the
    expectation is that of the gap ``L_k(theta_hat) - L_hat_{n,k}(theta_hat)``; its variance is far
    smaller, since the trained embedding stays in a small ball around ``theta_0``."""
    with torch.no_grad():
        start = [float(loss_per_tuple(phi, *d, tau).mean()) for d in (test, train)]
    fit(phi, train, tau, steps=steps, lr=lr, seed=seed, desc=f"c4 gap tau={tau:g}")
    with torch.no_grad():
        end = [float(loss_per_tuple(phi, *d, tau).mean()) for d in (test, train)]
    return (end[0] - start[0]) - (end[1] - start[1])


@cached
@on_one_cpu_thread
def temperature_sweep(setup: ContinuitySetup, side: SideClaimsSetup, models: dict, taus: list, k: int, n: int,
                      n_test: int, n_seeds: int, steps: int, n_lip: int, device: str, seed: int):
    """The generalisation gap of embeddings trained at each temperature, against the bound's
    prediction, for each input law of ``models`` (``{name: model}``).

    For each law and tau: the constants of :func:`temperature_constants` on ``n_lip`` tuples, and
    for each of ``n_seeds`` seeds the gap ``L_k(phi_hat) - L_hat_{n,k}(phi_hat)`` (with the control
    variate of :func:`_train_gap`) of the chapter's class trained on ``n`` tuples (``side.train_lr``, ``steps`` projected Adam steps, from the
    centre of the parameter ball), the population risk estimated on ``n_test`` fresh tuples. Seed
    ``s`` uses the same training and test tuples at every tau (paired differences across tau).
    Columns: ``data, tau, beta, seed_index, gap`` plus the constants (repeated on each row).
    """
    dev = resolve_device(device)
    rows = []
    for name, model in models.items():
        gen = torch.Generator(device=dev).manual_seed(int(seed) * 7919 + 17)
        lip_data = model.sample_tuples(n_lip, k, generator=gen, device=dev)
        sets = [(model.sample_tuples(n, k, generator=gen, device=dev),
                 model.sample_tuples(n_test, k, generator=gen, device=dev)) for _ in range(n_seeds)]
        for tau in progress(taus, desc=f"c4 temperature sweep ({name})"):
            const = temperature_constants(setup, model, float(tau), k, n, lip_data)
            for s, (train, test) in enumerate(sets):
                phi = _embedding_class(setup, model).to(dev)
                gap = _train_gap(phi, tuple(train), tuple(test), float(tau), steps, side.train_lr, int(seed) + s)
                rows.append({"data": name, "tau": float(tau), "beta": 1.0 / float(tau), "seed_index": s,
                             "gap": gap, **const})
    return pd.DataFrame(rows)


def _dimension_class(side: SideClaimsSetup, cls: str, d: int):
    if cls == "frobenius":
        return FrobeniusLinear(d, d, side.frobenius_radius)
    return NormalisedLinear(d, side.normalised_radius)


def _dimension_bound(side: SideClaimsSetup, cls: str, phi, n: int, k: int, tau: float) -> dict:
    """The bounds on ``R_n`` for one class at dimension d (unit inputs)."""
    if cls == "frobenius":
        return {"bound": similarity_contraction_bound(n, k, tau, frobenius_radius=side.frobenius_radius)}
    L = 1.0 / (1.0 - phi.radius)
    ones = np.ones(1)
    lam = float(embedding_lipschitz_constant(L * ones, L * ones, L * np.ones((1, k)), tau)[0])
    return {"bound": vector_contraction_bound(n, k, tau, radius=phi.radius, dim_out=phi.output_dim,
                                              post_lipschitz=L),
            "bound_covering": rademacher_covering_bound(lam, phi.radius, phi.n_params, n)}


@cached
@on_one_cpu_thread
def dimension_sweep(side: SideClaimsSetup, sphere_model, dims: list, n: int, k: int, n_sigma: int, rad_steps: int,
                    n_seeds: int, steps: int, n_test: int, tau: float, device: str, seed: int):
    """The Rademacher complexity and the generalisation gap against the dimension d, for the
    norm-constrained class ``FrobeniusLinear(d, d, side.frobenius_radius)`` and for the class
    without a fixed norm budget, ``NormalisedLinear(d, side.normalised_radius)`` (``|A|_F`` about
    ``sqrt d``), on the data of ``sphere_model`` moved to ``S^{d-1}`` (same concentration).

    For each d and class: ``empirical_rademacher`` on one sample of ``n`` tuples (``n_sigma``
    sign draws, ``rad_steps`` steps, two starts: the centre and a random point), the class's bound
    (Theorem ``c4-thm-dimension-free`` for the first, Theorem ``c4-thm-vector`` and the covering
    bound for the second), and the gap of the class trained on ``n`` tuples for each of ``n_seeds``
    seeds (``steps`` projected Adam steps from a random point of the ball, ``side.train_lr``;
    population risk on ``n_test`` fresh tuples; the control variate of :func:`_train_gap`). Columns: ``cls, dim, n, k, value, se, ci_low,
    ci_high, bound, bound_covering, gap_mean, gap_se, gap_low, gap_high, n_seeds``.
    """
    dev = resolve_device(device)
    rows = []
    for i, d in enumerate(progress(dims, desc="c4 dimension sweep")):
        model = from_params({**sphere_model.params, "dim": int(d)})
        gen = torch.Generator(device=dev).manual_seed(int(seed) * 1000 + 500 + i)
        data = tuple(model.sample_tuples(n, k, generator=gen, device=dev))
        sets = [(tuple(model.sample_tuples(n, k, generator=gen, device=dev)),
                 tuple(model.sample_tuples(n_test, k, generator=gen, device=dev))) for _ in range(n_seeds)]
        for cls in ("frobenius", "normalised"):
            phi = _dimension_class(side, cls, int(d)).to(dev)
            est = empirical_rademacher(phi, data, n_sigma, tau=tau, steps=rad_steps, n_starts=2,
                                       seed=int(seed) * 1000 + i)
            gaps = []
            for s, (train, test) in enumerate(sets):
                phi = _dimension_class(side, cls, int(d)).to(dev)
                start = torch.Generator(device=dev).manual_seed(int(seed) + 31 * s)
                with torch.no_grad():
                    phi.set_theta_(phi.random_parameters(start))
                gaps.append(_train_gap(phi, train, test, tau, steps, side.train_lr, int(seed) + s))
            gap = Estimate.from_samples(np.asarray(gaps), t=True, method="seeds")
            rows.append({"cls": cls, "dim": int(d), "n": int(n), "k": int(k), "value": est.value, "se": est.se,
                         "ci_low": est.ci_low, "ci_high": est.ci_high, "bound_covering": float("nan"),
                         **_dimension_bound(side, cls, phi, n, k, tau), "gap_mean": gap.mean, "gap_se": gap.se,
                         "gap_low": gap.ci_low, "gap_high": gap.ci_high, "n_seeds": int(n_seeds)})
    return pd.DataFrame(rows)


@cached
@on_one_cpu_thread
def dimension_gap_replication(side: SideClaimsSetup, sphere_model, dims: list, alignment: float, n: int, k: int,
                              n_seeds: int, steps: int, n_test: int, tau: float, device: str, seed: int):
    """The replication of the dimension claim's gap test with the anchor--positive alignment held
    fixed: at each d the data are the vMF model on ``S^{d-1}`` with the concentration ``kappa_d`` of
    :func:`~.design.aligned_concentration` (``E <x, x+> = alignment`` at every d), and the class with
    the fixed norm budget ``FrobeniusLinear(d, d, side.frobenius_radius)`` is trained on ``n`` tuples
    for each of ``n_seeds`` seeds (``steps`` projected Adam steps from a random point of the ball,
    ``side.train_lr``; population risk on ``n_test`` fresh tuples; the control variate of
    :func:`_train_gap`). Columns: ``dim, kappa, alignment, seed_index, gap``."""
    dev = resolve_device(device)
    rows = []
    for i, d in enumerate(progress(dims, desc="c4 dimension replication")):
        kappa = aligned_concentration(int(d), alignment)
        model = from_params({**sphere_model.params, "dim": int(d), "kappa": kappa})
        gen = torch.Generator(device=dev).manual_seed(int(seed) * 1000 + 700 + i)
        for s in range(n_seeds):
            train = tuple(model.sample_tuples(n, k, generator=gen, device=dev))
            test = tuple(model.sample_tuples(n_test, k, generator=gen, device=dev))
            phi = _dimension_class(side, "frobenius", int(d)).to(dev)
            start = torch.Generator(device=dev).manual_seed(int(seed) + 31 * s)
            with torch.no_grad():
                phi.set_theta_(phi.random_parameters(start))
            gap = _train_gap(phi, train, test, tau, steps, side.train_lr, int(seed) + s)
            rows.append({"dim": int(d), "kappa": kappa, "alignment": float(alignment), "seed_index": s, "gap": gap})
    return pd.DataFrame(rows)
