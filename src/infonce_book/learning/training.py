"""Training by empirical risk minimisation of InfoNCE (small, seeded, on the chosen device).

* :func:`fit_temperature`: learn ``tau`` alone (``log tau`` by Adam) with the embedding fixed to
  the identity on vMF data, from fresh tuples at every step (so the iterates follow the gradient
  of the population risk ``L_k(tau)``).
* :func:`fit_linear_embedding`: learn ``phi(x) = normalize(A x)`` on a fixed training set of n
  tuples (empirical risk), for a given tau; returns the embedding and a history table.
* :func:`fit`: ERM of InfoNCE for any embedding class of :mod:`infonce_book.learning.embeddings` (or any
  module into the unit ball), on a fixed training set or on fresh tuples from a sampler.

Progress bars show in a terminal only (see :mod:`infonce_book.utils.progress`).
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from ..losses import VARIANTS, info_nce
from ..utils.device import resolve_device
from ..utils.progress import progress
from ..utils.validation import check_choice, check_float_tensor, check_k, check_positive, check_seed, check_tau
from .embeddings import loss_per_tuple


def _check_sphere_model(model) -> None:
    if not getattr(model, "identity_embedding", False):
        raise TypeError(f"model must be a reference model whose data lie on the sphere with phi = identity (the "
                        f"vMF model), so that its tuples can be embedded directly; got {model!r}")


def fit_temperature(model, k: int, *, tau_init: float = 1.0, batch_size: int = 512, steps: int = 400,
                    lr: float = 0.05, tail: int = 200, seed: int = 0, device="auto",
                    variant: str = "standard") -> dict:
    """Learn the temperature of InfoNCE on the vMF model with phi = identity.

    Adam on ``log tau`` with fresh tuples each step; the estimate is the average of ``tau`` over
    the last ``tail`` steps. Returns ``{"tau": estimate, "history": DataFrame(step, tau, loss)}``.
    """
    _check_sphere_model(model)
    k = check_k(k)
    tau_init = check_positive(tau_init, "tau_init")
    batch_size, steps, tail = check_k(batch_size, "batch_size"), check_k(steps, "steps"), check_k(tail, "tail")
    if tail > steps:
        raise ValueError(f"tail must be <= steps (the estimate averages the last tail steps), got tail={tail}, "
                         f"steps={steps}")
    lr = check_positive(lr, "lr")
    check_choice(variant, "variant", VARIANTS)
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(check_seed(seed))
    log_tau = torch.tensor(math.log(tau_init), dtype=torch.float64, device=dev, requires_grad=True)
    opt = torch.optim.Adam([log_tau], lr=lr)
    hist = []
    for step in progress(range(steps), desc="fit_temperature"):
        x, xp, neg = model.sample_tuples(batch_size, k, generator=gen, device=dev)
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
    _check_sphere_model(model)
    tau = check_tau(tau)
    k, n_train, steps = check_k(k), check_k(n_train, "n_train"), check_k(steps, "steps")
    if isinstance(n_test, bool) or not isinstance(n_test, int) or n_test < 2:
        raise ValueError(f"n_test must be an integer >= 2 (a standard error needs two tuples), got n_test={n_test!r}")
    lr = check_positive(lr, "lr")
    dev = resolve_device(device)
    gen = torch.Generator(device=dev).manual_seed(check_seed(seed))
    x, xp, neg = model.sample_tuples(n_train, k, generator=gen, device=dev)
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
        tx, txp, tneg = model.sample_tuples(n_test, k, generator=gen, device=dev)
        test = info_nce(phi(tx), phi(txp), phi(tneg), tau, reduction="none")
    return {"A": A.detach(), "train_risk": train, "test_risk": float(test.mean()),
            "test_se": float(test.std() / math.sqrt(n_test)), "history": pd.DataFrame(hist)}


class FitResult:
    """What :func:`fit` returns: the trained ``embedding`` (the module, trained in place) and its
    ``history`` (a DataFrame with columns ``step, loss``; ``loss`` in nats)."""

    def __init__(self, embedding, history: pd.DataFrame):
        self.embedding, self.history = embedding, history

    def __repr__(self) -> str:
        last = float(self.history["loss"].iloc[-1]) if len(self.history) else float("nan")
        return f"FitResult({self.embedding!r}, steps={len(self.history)}, final loss={last:.4f})"


def fit(embedding, data, tau, *, steps: int = 300, lr: float = 0.01, batch_size: int | None = None,
        seed: int = 0, variant: str = "standard", desc: str | None = None) -> FitResult:
    """Empirical risk minimisation of InfoNCE over an embedding class (book, chapters C6 and C7).

    Args:
        embedding: a ``torch.nn.Module`` mapping ``(..., p)`` inputs to ``(..., d)`` vectors of
            norm <= 1 (e.g. a class of :mod:`infonce_book.learning.embeddings`); trained in place on the
            device of its parameters. If it has ``project_()``, the parameters are projected back
            onto its parameter set after every step (projected gradient descent).
        data: either a tuple ``(x, x_pos, x_neg)`` of tensors with shapes (n, p), (n, p),
            (n, k, p) -- a fixed training set, whose empirical risk ``L_hat_{n,k}`` is minimised
            (full batch if ``batch_size`` is None, else minibatches drawn with replacement) -- or
            a callable ``sampler(batch_size, generator) -> (x, x_pos, x_neg)`` that draws fresh
            tuples every step (then ``batch_size`` is required).
        tau: temperature > 0. steps: Adam steps >= 1. lr: learning rate > 0. seed: seeds the
            minibatches and the sampler. variant: "standard" or "decoupled".
        desc: label of the progress bar (shown in a terminal only).
    Returns:
        :class:`FitResult`.
    Raises:
        ValueError: bad shapes, tau, steps, lr, batch_size, variant.
    """
    tau = check_tau(tau)
    steps = check_k(steps, "steps")
    lr = check_positive(lr, "lr")
    check_choice(variant, "variant", VARIANTS)
    params = [p for p in embedding.parameters() if p.requires_grad]
    if not params:
        raise ValueError("embedding has no trainable parameters")
    dev = params[0].device
    gen = torch.Generator(device=dev).manual_seed(check_seed(seed))
    fixed = not callable(data)
    if fixed:
        if not isinstance(data, (tuple, list)) or len(data) != 3:
            raise TypeError(f"data must be a tuple (x, x_pos, x_neg) of tensors or a sampler, got {type(data).__name__}")
        x, xp, xn = data
        for name, t in (("x", x), ("x_pos", xp), ("x_neg", xn)):
            check_float_tensor(t, name)
        if x.dim() != 2 or xp.shape != x.shape or xn.dim() != 3 or xn.shape[0] != x.shape[0]:
            raise ValueError(f"data must be (x (n, p), x_pos (n, p), x_neg (n, k, p)); got {tuple(x.shape)}, "
                             f"{tuple(xp.shape)}, {tuple(xn.shape)}")
        n = x.shape[0]
        if batch_size is not None:
            batch_size = check_k(batch_size, "batch_size")
    else:
        if batch_size is None:
            raise ValueError("batch_size is required when data is a sampler")
        batch_size = check_k(batch_size, "batch_size")
    opt = torch.optim.Adam(params, lr=lr)
    hist = []
    for step in progress(range(steps), desc=desc or "fit"):
        if not fixed:
            batch = data(batch_size, gen)
        elif batch_size is None:
            batch = (x, xp, xn)
        else:
            idx = torch.randint(0, n, (batch_size,), generator=gen, device=dev)
            batch = (x[idx], xp[idx], xn[idx])
        loss = loss_per_tuple(embedding, *batch, tau, variant=variant).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if hasattr(embedding, "project_"):
            embedding.project_()
        hist.append({"step": step, "loss": float(loss.detach())})
    return FitResult(embedding, pd.DataFrame(hist))
