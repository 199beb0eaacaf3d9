"""Training by empirical risk minimisation of InfoNCE (small, seeded, on the chosen device).

* :func:`fit_temperature`: learn ``tau`` alone (``log tau`` by Adam) with the embedding fixed to
  the identity on vMF data, from fresh tuples at every step (so the iterates follow the gradient
  of the population risk ``L_k(tau)``).
* :func:`fit_linear_embedding`: learn ``phi(x) = normalize(A x)`` on a fixed training set of n
  tuples (empirical risk), for a given tau; returns the embedding and a history table.

Progress bars show in a terminal only (see :mod:`infonce_book.progress`).
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from ._validation import check_k, check_tau
from .device import resolve_device
from .losses import info_nce
from .progress import progress


def _vmf_tuples(model, n: int, k: int, gen, dev):
    x = model.sample_uniform(n, generator=gen, device=dev)
    xp = model.sample_positive(x, generator=gen)
    neg = model.sample_uniform(n * k, generator=gen, device=dev).reshape(n, k, model.dim)
    return x, xp, neg


def fit_temperature(model, k: int, *, tau_init: float = 1.0, batch_size: int = 512, steps: int = 400,
                    lr: float = 0.05, tail: int = 200, seed: int = 0, device="auto",
                    variant: str = "standard") -> dict:
    """Learn the temperature of InfoNCE on the vMF model with phi = identity.

    Adam on ``log tau`` with fresh tuples each step; the estimate is the average of ``tau`` over
    the last ``tail`` steps. Returns ``{"tau": estimate, "history": DataFrame(step, tau, loss)}``.
    """
    k = check_k(k)
    check_tau(tau_init)
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    log_tau = torch.tensor(math.log(tau_init), dtype=torch.float64, device=dev, requires_grad=True)
    opt = torch.optim.Adam([log_tau], lr=lr)
    hist = []
    for step in progress(range(steps), desc="fit_temperature"):
        x, xp, neg = _vmf_tuples(model, batch_size, k, gen, dev)
        loss = info_nce(x, xp, neg, log_tau.exp(), variant=variant)
        opt.zero_grad()
        loss.backward()
        opt.step()
        hist.append({"step": step, "tau": float(log_tau.detach().exp()), "loss": float(loss.detach())})
    history = pd.DataFrame(hist)
    return {"tau": float(history["tau"].iloc[-tail:].mean()), "history": history}


def fit_linear_embedding(model, tau: float, *, n_train: int, k: int, steps: int = 300, lr: float = 0.05,
                         seed: int = 0, device="auto", n_test: int = 20000) -> dict:
    """ERM of InfoNCE over ``phi(x) = A x / |A x|`` (A a dim x dim matrix, initialised at random)
    on one fixed training set of ``n_train`` vMF tuples with k negatives each.

    Returns ``{"A", "train_risk", "test_risk", "test_se", "history"}``: the empirical risk on the
    training tuples and the risk on ``n_test`` fresh tuples (with its standard error), in nats.
    """
    tau = check_tau(tau)
    k, n_train = check_k(k), check_k(n_train, "n_train")
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    x, xp, neg = _vmf_tuples(model, n_train, k, gen, dev)
    A = (torch.eye(model.dim, dtype=torch.float64, device=dev)
         + 0.5 * torch.randn(model.dim, model.dim, generator=gen, dtype=torch.float64, device=dev)).requires_grad_()
    phi = lambda v: torch.nn.functional.normalize(v @ A.T, dim=-1)  # noqa: E731
    opt = torch.optim.Adam([A], lr=lr)
    hist = []
    for step in progress(range(steps), desc=f"fit_linear_embedding tau={tau:g}"):
        loss = info_nce(phi(x), phi(xp), phi(neg), tau)
        opt.zero_grad()
        loss.backward()
        opt.step()
        hist.append({"step": step, "train_risk": float(loss.detach())})
    with torch.no_grad():
        train = float(info_nce(phi(x), phi(xp), phi(neg), tau))
        tx, txp, tneg = _vmf_tuples(model, n_test, k, gen, dev)
        test = info_nce(phi(tx), phi(txp), phi(tneg), tau, reduction="none")
    return {"A": A.detach(), "train_risk": train, "test_risk": float(test.mean()),
            "test_se": float(test.std() / math.sqrt(n_test)), "history": pd.DataFrame(hist)}
