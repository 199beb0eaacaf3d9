"""Chapter 5's experiment "the gap does not grow with k" (claim C7): the generalisation gap of the
exact empirical risk minimiser at one n, for several k, paired by seed, and its equivalence test.

Each seed draws one training set of n anchors and positives with the largest k's negatives, and
one test set likewise; the training set with k negatives is the first k negatives of each tuple
(nested), so the cells of one seed differ only in k, and the slope of ``n * gap`` against
``log2 k`` within a seed is a paired measurement. ERM is exact (L-BFGS,
:func:`~infonce_book.learning.exact_erm.fit_exact`) from one random start per seed. The gap is
measured with the control variate of the chapter's gap section (the reference: the centre of the
class).
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd
import torch

from ...experiment.cache import cached
from ...experiment.ledger import Rule
from ...learning.embeddings import loss_per_tuple, reference_embedding
from ...learning.exact_erm import fit_exact
from ...learning.pacbayes import canonical_mean
from ...theory.stats import Estimate, seeds_needed
from ...utils.device import one_thread, resolve_device
from ...utils.progress import progress

__all__ = ["gap_k_sweep", "per_seed_slopes", "ledger_gap_sweep"]


def _gap_cv(phi, train, test, tau: float) -> dict:
    """``(L(A) - L(I)) + (L_hat(I) - L_hat(A))`` on the test and training tuples, and the risks."""
    with torch.no_grad():
        a_train, a_test = loss_per_tuple(phi, *train, tau), loss_per_tuple(phi, *test, tau)
        theta = phi.theta.detach().clone()
        phi.set_theta_(phi.center)
        i_train, i_test = loss_per_tuple(phi, *train, tau), loss_per_tuple(phi, *test, tau)
        phi.set_theta_(theta)
    return {"gap_cv": float((a_test - i_test).mean()) + float((i_train - a_train).mean()),
            "train_risk": float(a_train.mean()), "test_risk": float(a_test.mean())}


@cached
def gap_k_sweep(model, n: int, ks: list, seeds: int, n_test: int, tau: float, seed: int, device: str) -> pd.DataFrame:
    """The gap of exact ERM for each k of ``ks`` (nested negatives) and each of ``seeds`` seeds.

    Returns a tidy table ``seed, k, n, gap_cv, n_gap_cv, train_risk, test_risk, grad_norm`` (nats;
    ``n_gap_cv = n * gap_cv``, the constant of the ``p_eff / n`` law).
    """
    ks = sorted(int(k) for k in ks)
    dev = resolve_device(device)
    rows = []
    with one_thread(device):
        for s in progress(range(int(seeds)), desc="c5 gap sweep"):
            gen = torch.Generator(device=dev).manual_seed(int(seed) * 1_000_003 + zlib.crc32(f"gap-{n}-{s}".encode()))
            x = model.sample_data(n, generator=gen, device=dev)
            xp, xn = model.sample_positive(x, generator=gen), model.sample_negatives(n, ks[-1], generator=gen, device=dev)
            tx = model.sample_data(n_test, generator=gen, device=dev)
            txp, txn = model.sample_positive(tx, generator=gen), model.sample_negatives(n_test, ks[-1], generator=gen,
                                                                                       device=dev)
            start = reference_embedding(model).random_parameters(gen)
            for k in ks:
                phi = reference_embedding(model).to(dev)
                with torch.no_grad():
                    phi.set_theta_(start)
                train, test = (x, xp, xn[:, :k]), (tx, txp, txn[:, :k])
                fitted = fit_exact(phi, train, tau)
                with torch.no_grad():  # the orbit point closest to the identity: the same similarities, inside Theta
                    phi.theta_param.copy_(canonical_mean(phi.theta.detach(), phi.center, phi.input_dim))
                rows.append({"seed": s, "k": k, "n": int(n), **_gap_cv(phi, train, test, tau),
                             "grad_norm": fitted["grad_norm"]})
    table = pd.DataFrame(rows)
    table["n_gap_cv"] = table.n * table.gap_cv
    return table


def per_seed_slopes(table: pd.DataFrame) -> np.ndarray:
    """The least-squares slope of ``n * gap_cv`` against ``log2 k`` within each seed (per doubling
    of k), in the seeds' order."""
    out = []
    for _, sub in table.sort_values(["seed", "k"]).groupby("seed"):
        out.append(np.polyfit(np.log2(sub.k.to_numpy(float)), sub.n_gap_cv.to_numpy(float), 1)[0])
    return np.asarray(out, dtype=float)


def ledger_gap_sweep(ledger, table: pd.DataFrame, *, tau: float, margin: float, alpha: float, p_eff: int = 5,
                     min_seeds: int = 8) -> dict:
    """``C7-gap-flat-in-k``: the mean over seeds of the per-seed slopes of ``n * gap`` against
    ``log2 k``, predicted 0, as an equivalence test: passed when its ``1 - 2 alpha`` Student-t
    interval lies inside ``(-margin, margin)``, ``margin`` declared before the run. Also
    ``C7-aic-sweep``: the mean of ``n * gap`` over every cell of the sweep against ``p_eff``
    (a t-interval over seeds of the per-seed means). Returns the page's numbers (the margin, the
    seeds used and the seeds a rerun would need, :func:`~infonce_book.theory.stats.seeds_needed`);
    nothing (an empty dict) when the table has fewer than four k or ``min_seeds`` seeds, too few
    for the test to decide."""
    slopes = per_seed_slopes(table)
    ks, n = sorted(int(k) for k in table.k.unique()), int(table.n.iloc[0])
    if len(ks) < 4 or len(slopes) < min_seeds:
        return {}
    est = Estimate.from_samples(slopes, 1.0 - 2.0 * alpha, t=True, method="seeds, paired")
    rec = ledger.record(claim="C7", id="C7-gap-flat-in-k",
                  quantity=f"slope of n * E[gap] per doubling of k (vMF, tau = 1/kappa, n = {n}, exact ERM)",
                  predicted=0.0, measured=est,
                  rule=Rule.equivalence(margin, note=f"two one-sided tests at alpha = {alpha:g}, margin declared "
                                                     f"before the run"),
                  params={"tau": tau, "n": n, "ks": ks, "seeds": len(slopes), "margin": margin, "alpha": alpha})
    means = table.groupby("seed").n_gap_cv.mean().to_numpy(float)
    pooled = Estimate.from_samples(means, 0.95, t=True, method="seeds")
    ledger.record(claim="C7", id="C7-aic-sweep", quantity=f"n * E[gap] over the k sweep (vMF, n = {n}, exact ERM)",
                  predicted=float(p_eff), measured=pooled, params={"tau": tau, "n": n, "ks": ks, "seeds": len(means)})
    per_k = table.groupby("k").n_gap_cv.mean()
    return {"sweep_passed": bool(rec.passed), "sweep_n": n, "sweep_seeds": len(slopes), "sweep_ks": ", ".join(str(k) for k in ks),
            "sweep_margin": margin, "sweep_total_margin": margin * math.log2(ks[-1] / ks[0]),
            "sweep_slope": est.mean, "sweep_slope_low": est.ci_low, "sweep_slope_high": est.ci_high,
            "sweep_slope_sd": float(np.std(slopes, ddof=1)),
            "sweep_seeds_needed": seeds_needed(slopes, margin, alpha),
            "sweep_pooled": pooled.mean, "sweep_pooled_low": pooled.ci_low, "sweep_pooled_high": pooled.ci_high,
            "sweep_first": float(per_k.iloc[0]), "sweep_last": float(per_k.iloc[-1]),
            "sweep_max_grad": float(table.grad_norm.max())}
