"""Chapter 5's runners: the training cells of a profile (:func:`cells`), one cell trained and
measured with every bound and certificate of claim C6 and the gap of claim C7 (:func:`train_cell`,
a configuration in, a one-row table out, cached), and the grid of cells (:func:`grid`).

Each bound or certificate of a cell is one helper that returns its columns (``old_*``,
``sharp_*``, ``pb_*``); a new certificate is a function of ``learning/`` or ``theory/`` and one
such helper, called from :func:`train_cell`.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd
import torch

from ...experiment.cache import cached
from ...learning.embeddings import loss_per_tuple, reference_embedding
from ...learning.pacbayes import gaussian_posterior_certificate, randomised_search_cross_entropy
from ...learning.training import fit
from ...theory.bounds import (
    embedding_lipschitz_constant,
    loss_lipschitz_constant,
    loss_range,
    max_negative_weight,
    rademacher_covering_bound,
    search_bias_bounds,
    theorem1_terms,
    vector_contraction_bound,
)
from ...theory.pacbayes import log_xi
from ...theory.search import search_cross_entropy
from ...utils.device import one_thread, resolve_device
from ...utils.parallel import cpu_workers, map_processes
from .certify import bernstein_columns, direct_columns, holdout_columns, sharp_bias, variant_columns
from .config import GeneralisationSetup

__all__ = ["cells", "train_cell", "grid"]


def cells(size: dict, tau_star: float, tau_other: float) -> list:
    """The training cells of a profile: one dict ``{"model", "n", "k", "tau", "seed", "gap",
    "batch", "variants"}`` per (block, tau, k, n, seed) of ``size["blocks"]``; ``model`` names an
    entry of the page's models (``"vmf"``, ``"gaussian"``), ``tau`` is ``tau_star`` or
    ``tau_other``; ``variants`` is true for the (n, k) pairs of the block's ``"variants"`` list
    (the cells that also compute the certificates with other priors). A cell named by two blocks
    (the same model, n, k, tau, seed and batch) appears once."""
    names = {"star": float(tau_star), "other": float(tau_other)}
    out = {}
    for block in size["blocks"]:
        variants = {tuple(v) for v in block.get("variants", [])}
        for t in block["taus"]:
            for k in block["ks"]:
                for n in block["ns"]:
                    for s in range(block["seeds"]):
                        cell = {"model": block["model"], "n": int(n), "k": int(k), "tau": names[t], "seed": s,
                                "gap": bool(block["gap"]), "batch": block.get("batch"),
                                "variants": (int(n), int(k)) in variants}
                        key = (cell["model"], cell["n"], cell["k"], cell["tau"], s, cell["batch"])
                        if key in out:  # a cell that two blocks name is trained once, with both blocks' flags
                            out[key].update(gap=out[key]["gap"] or cell["gap"],
                                            variants=out[key]["variants"] or cell["variants"])
                        else:
                            out[key] = cell
    return list(out.values())


def _cell_seed(seed: int, cell: dict) -> int:
    """The seed of one cell: the chapter's ``seed`` and a CRC of the cell's name."""
    key = f"{cell['model']}-{cell['n']}-{cell['k']}-{cell['tau']:.6g}-{cell['seed']}-{cell['batch']}"
    return int(seed) * 1_000_003 + zlib.crc32(key.encode())


def grid(models: dict, cells: list, setup: GeneralisationSetup, moments: dict, input_m2: dict, device: str,
         seed: int) -> pd.DataFrame:
    """Run :func:`train_cell` on every cell (each cached on its own) and stack the rows. On the
    CPU the cells run on :func:`~infonce_book.utils.parallel.cpu_workers` processes, one thread
    each; every cell has its own seed, so the table is bit for bit that of a serial run.

    ``models``, ``moments`` (the density-ratio moments for ``search_bias_bounds``) and ``input_m2``
    (``E|x|^2`` of the inputs) are keyed by the cells' model names; ``setup`` holds the confidence
    levels, the steps and the test and Monte Carlo sizes (the test set and the Monte Carlo draws
    shrink with ``k + 2`` so that their cost stays flat).
    """
    jobs = [dict(model=models[cell["model"]], cell=cell, cell_seed=_cell_seed(seed, cell), setup=setup,
                 moments=moments[cell["model"]], input_m2=float(input_m2[cell["model"]]), device=device)
            for cell in cells]
    workers = cpu_workers() if resolve_device(device).type == "cpu" else 1
    with one_thread(device):
        rows = map_processes(_train_cell_one_thread, jobs, workers=workers, desc="c5 cells")
    return pd.concat(rows, ignore_index=True)


def _train_cell_one_thread(**job) -> pd.DataFrame:
    """:func:`train_cell` on one CPU thread (in a worker process of :func:`grid`)."""
    with one_thread(job["device"]):
        return train_cell(**job)


@cached
def train_cell(model, cell: dict, cell_seed: int, setup: GeneralisationSetup, moments: dict, input_m2: float,
               device: str) -> pd.DataFrame:
    """One training cell: ERM and every measured and certified quantity (a one-row table, nats).

    ``cell`` is one entry of :func:`cells` (``model`` its name in the table), ``cell_seed`` the
    seed of all its draws. Trains ``reference_embedding(model)`` (vMF: NormalisedLinear(3, 0.5),
    P = 9; Gaussian: BallLinear(8 -> 4), P = 32) by :func:`~infonce_book.learning.training.fit`
    (Adam, projected onto Theta, ``setup.steps`` steps, full batch unless ``cell["batch"]``) from
    a random point of Theta, and measures:

    * ``train_risk``, ``test_risk`` (``setup.n_test_for(k)`` fresh tuples), ``search_ce`` (``E
      H(M_k, Q_k) - log k`` on fresh databases, with ``search_se``), ``gap``, ``excess``,
      ``improvement``, ``gap_cv`` (the control-variate gap: ``phi_ref`` = centre of Theta);
    * the old bound (``old_*``: covering bound with ``Lambda_avg``, ``E Lambda_avg^2`` by Monte Carlo
      on the test tuples, and ``C_H(tau)/k`` where m is bounded below);
    * the sharp bound (``sharp_*``: ``2 R_n <= 2 min(covering with Lambda_star, vector contraction)``
      with population constants -- ``L`` constant for NormalisedLinear; ``L(x) = |x|`` with
      ``E|x|^2 = input_m2`` for BallLinear, Minkowski for ``(E Lambda_star^2)^(1/2)`` -- and the
      search bias ``b_k`` of Proposition ``c5-prop-search-bias`` from ``moments``);
    * for the vMF model (``model.identity_embedding``), the PAC-Bayes-kl certificate of the
      randomised embedding (``pb_*``) and its measured value (``pb_measured``), and the certificates
      of :mod:`~.certify` (``bern_*``, ``det_*``, ``ho_*``; ``ddp_*`` and ``away_*`` where
      ``cell["variants"]``).
    """
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(int(cell_seed))
    k, tau = cell["k"], cell["tau"]
    phi, train, test = _train(model, cell, cell_seed, setup, gen, dev)
    row, L = _measure(phi, model, cell, train, test)
    train_risk = row["train_risk"]
    row.update(_old_bound(phi, model, cell["n"], k, tau, train_risk, L, setup.delta))
    b_star = sharp_bias(model, k, tau) if model.identity_embedding else None
    row.update(_sharp_bound(phi, model, cell["n"], k, tau, train_risk, setup.delta, moments, input_m2, b_star))
    if model.identity_embedding:
        row.update(_pac_bayes(phi, train, test, model, k, tau, b_star, setup, gen))
        row.update(bernstein_columns(phi, train, test, model, k, tau, b_star, setup, gen),
                   det_measured=row["search_ce"], det_measured_se=row["search_se"])
        holdout, phi1, second = holdout_columns(model, train, test, cell, cell_seed, b_star, setup, gen, dev)
        row.update(holdout)
        if cell.get("variants"):
            row.update(variant_columns(phi, phi1, second, train, test, model, k, tau, b_star, setup, gen))
            oracle = float(model.search_cross_entropy(k, tau).mean)
            row.update(direct_columns(phi, phi1, train, test, model, k, tau, oracle, setup, gen),
                       dir_det_measured=row["search_ce"], dir_det_measured_se=row["search_se"],
                       dir_truth_measured=row["search_ce"], dir_truth_measured_se=row["search_se"],
                       dir_ho_measured=row["ho_measured"], dir_ho_measured_se=row["ho_measured_se"])
    return pd.DataFrame([row])


def _train(model, cell: dict, cell_seed: int, setup: GeneralisationSetup, gen, dev):
    """The embedding trained on the cell's tuples from a random start, the training tuples and the
    fresh test tuples (drawn in that order from ``gen``)."""
    n, k, tau = cell["n"], cell["k"], cell["tau"]
    phi = reference_embedding(model).to(dev)
    with torch.no_grad():
        phi.set_theta_(phi.random_parameters(gen))
    train = model.sample_tuples(n, k, generator=gen, device=dev)
    fit(phi, train, tau, steps=setup.steps, lr=phi.radius / 25, seed=int(cell_seed) % 2**31,
        batch_size=cell["batch"])
    test = model.sample_tuples(setup.n_test_for(k), k, generator=gen, device=dev)
    return phi, train, test


def _measure(phi, model, cell: dict, train, test):
    """The measured columns of a cell's row (risks, search cross-entropy, gaps) and the Lipschitz
    functions ``L`` of the test tuples (anchors, positives, negatives)."""
    n, k, tau, batch = cell["n"], cell["k"], cell["tau"], cell["batch"]
    n_test = test[0].shape[0]
    with torch.no_grad():
        train_loss = loss_per_tuple(phi, *train, tau)
        test_loss = loss_per_tuple(phi, *test, tau)
        train_dec = loss_per_tuple(phi, *train, tau, variant="decoupled") - math.log(k)
        test_dec = loss_per_tuple(phi, *test, tau, variant="decoupled") - math.log(k)
        x, _, db = test
        log_m = model.log_density_ratio(x, db)
        h = search_cross_entropy(torch.einsum("bd,bkd->bk", phi(x), phi(db)), log_m, tau) - math.log(k)
        # The baselines on the same databases: a constant embedding (the uniform search) and, for
        # data on the sphere, the identity (the oracle of the vMF model).
        h_uniform = search_cross_entropy(torch.zeros_like(log_m), log_m, tau) - math.log(k)
        h_oracle = (search_cross_entropy(torch.einsum("bd,bkd->bk", x, db), log_m, tau) - math.log(k)
                    if model.identity_embedding else torch.full_like(h, float("nan")))
        L = [phi.lipschitz(t).cpu().numpy() for t in test]
        theta_hat = phi.theta.detach().clone()
        phi.set_theta_(phi.center)
        excess = test_loss - loss_per_tuple(phi, *test, tau)
        improvement = float((loss_per_tuple(phi, *train, tau) - train_loss).mean())
        phi.set_theta_(theta_hat)
    train_risk = float(train_loss.mean())
    row = {"model": cell["model"], "n": n, "k": k, "tau": tau, "seed": cell["seed"], "gap_cell": cell["gap"],
           "batch": 0 if batch is None else int(batch), "train_risk": train_risk,
           "test_risk": float(test_loss.mean()), "test_se": float(test_loss.std() / math.sqrt(n_test)),
           "search_ce": float(h.mean()), "search_se": float(h.std() / math.sqrt(n_test)),
           "gap": float(test_loss.mean()) - train_risk, "excess": float(excess.mean()),
           "excess_se": float(excess.std() / math.sqrt(n_test)), "improvement": improvement,
           "gap_cv": float(excess.mean()) + improvement, "trivial": 2.0 * (1.0 / tau),
           "uniform_risk": math.log1p(1.0 / k), "dec_train": float(train_dec.mean()), "dec_test": float(test_dec.mean()),
           "dec_test_se": float(test_dec.std() / math.sqrt(n_test)),
           "var_std": float((test_loss - math.log(k)).var()), "var_dec": float(test_dec.var()),
           "uniform_measured": float(h_uniform.mean()), "oracle_measured": float(h_oracle.mean()),
           "oracle_measured_se": float(h_oracle.std() / math.sqrt(n_test))}
    return row, L


def _old_bound(phi, model, n: int, k: int, tau: float, train_risk: float, L, delta: float) -> dict:
    """The old bound's columns (``old_*``): the covering bound with the average form of the
    Lipschitz constant (``E Lambda_avg^2`` by Monte Carlo over the test tuples' ``L``) and the
    search constant ``C_H(tau)/k`` of Chapter 2 that needs no density floor,
    ``C_H = beta (2 R - 3/2) + e^{2 beta}`` (vMF model; none for the Gaussian one)."""
    lam_avg = loss_lipschitz_constant(*L, tau, kind="average")
    r_old = rademacher_covering_bound(float(np.sqrt(np.mean(lam_avg**2))), phi.radius, phi.n_params, n)
    constant = model.search_bias_constants(tau)["uniform"] if model.identity_embedding else None
    old = theorem1_terms(train_risk=train_risk, k=k, n=n, tau=tau, delta=delta, rademacher=r_old,
                         search_constant=constant)
    return {f"old_{key}": value for key, value in old.items() if key != "bound_on"}


def _sharp_bound(phi, model, n: int, k: int, tau: float, train_risk: float, delta: float, moments: dict,
                 input_m2: float, b_star: float | None = None):
    """The sharp bound's columns (``sharp_*``, ``lambda_star_rms``, ``bias_*``), population
    constants only, with the search bias ``b_k`` (the best of the moment forms, ``bias_moments``),
    replaced in the bound by the sharp ``b*_k`` where the model gives one (``b_star``;
    ``bias_sharp``)."""
    beta = 1.0 / tau
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
    used = bias["best"] if b_star is None else min(bias["best"], b_star)
    sharp = theorem1_terms(train_risk=train_risk, k=k, n=n, tau=tau, delta=delta, rademacher=min(r_cover, r_vec),
                           search_bias=used)
    out = {f"sharp_{key}": value for key, value in sharp.items() if key != "bound_on"}
    out.update(sharp_cover=2.0 * r_cover, sharp_vector=2.0 * r_vec, lambda_star_rms=lam_rms,
               bias_second=bias["second_moment"], bias_third=bias["third_moment"], bias_two_term=bias["two_term"],
               bias_moments=bias["best"], bias_sharp=float("nan") if b_star is None else b_star)
    return out


def _pac_bayes(phi, train, test, model, k: int, tau: float, b_k: float, setup: GeneralisationSetup, gen) -> dict:
    """The PAC-Bayes columns (``pb_*``): the certificate of Theorem ``c5-thm-pac-bayes`` for
    ``NormalisedLinear`` (:func:`~infonce_book.learning.pacbayes.gaussian_posterior_certificate`:
    prior centred at the centre of Theta, posterior around the canonical representative of the
    trained parameters) plus the search bias ``b*_k``, and the measured ``E_Q E H - log k`` of the
    randomised embedding (one draw per test query)."""
    cert = gaussian_posterior_certificate(phi.theta.detach(), phi.center.detach(), train, tau, delta=setup.delta_pb,
                                          delta_mc=setup.delta_mc, pilot_draws=setup.pilot_draws(k),
                                          final_draws=setup.final_draws(k), generator=gen,
                                          prior_scales=setup.prior_scales, posterior_ratios=setup.posterior_ratios)
    x, _, db = test
    h = randomised_search_cross_entropy(cert["mean"], cert["posterior_scale"], x, db, model.log_density_ratio(x, db),
                                        tau, gen) - math.log(k)
    return {"pb_bound": cert["risk_upper"] - math.log(k) + b_k, "pb_risk_upper": cert["risk_upper"],
            "pb_emp_risk": cert["emp_risk"], "pb_emp_upper": cert["emp_upper"], "pb_kl": cert["kl"],
            "pb_prior_scale": cert["prior_scale"], "pb_post_scale": cert["posterior_scale"],
            "pb_dist": cert["distance"], "pb_pairs": cert["draws"], "pb_measured": float(h.mean()),
            "pb_range": loss_range(k, tau),
            "pb_log_term": log_xi(train[0].shape[0]) + math.log(len(setup.prior_scales) / setup.delta_pb),
            "pb_measured_se": float(h.std() / math.sqrt(len(h)))}
