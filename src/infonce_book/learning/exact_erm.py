"""Exact empirical risk minimisation of InfoNCE for a small embedding class, by L-BFGS on the full
training set (book, Chapter 5, "The gap does not grow with k").

Adam with a fixed number of steps (:func:`~infonce_book.learning.training.fit`) is what the
chapters train with; where an experiment needs the empirical risk minimiser itself (the gap of ERM
is a property of the minimiser, not of a path to it) and many fits, a quasi-Newton method reaches
it to a gradient norm near rounding in tens of function evaluations. The minimiser of
``phi_A(x) = A x/|A x|`` is an orbit (``A -> c R A`` leaves the similarities unchanged); L-BFGS
converges to a point of it, and every quantity of the book is the same at every point.

Source: Nocedal & Wright (2006), *Numerical Optimization*, ch. 7 (L-BFGS) and 3 (strong Wolfe
line search); torch's ``torch.optim.LBFGS``.
"""

from __future__ import annotations

import torch

from ..losses import VARIANTS
from ..utils.validation import check_choice, check_k, check_scalar, check_tau
from .embeddings import loss_per_tuple

__all__ = ["fit_exact"]


def fit_exact(embedding, data, tau, *, max_iter: int = 500, tolerance_grad: float = 1e-10,
              variant: str = "standard") -> dict:
    """Minimise the empirical InfoNCE risk of ``embedding`` on the fixed tuples ``data`` by L-BFGS
    (full batch, strong Wolfe line search), in place.

    Args:
        embedding: a ``torch.nn.Module`` with trainable parameters (e.g. ``NormalisedLinear``),
            mapping ``(..., p)`` inputs to vectors of norm <= 1.
        data: ``(x, x_pos, x_neg)`` of shapes (n, p), (n, p), (n, k, p).
        tau: temperature > 0. max_iter: largest number of L-BFGS iterations (>= 1).
        tolerance_grad: stop when the largest gradient entry is below this (> 0).
        variant: "standard" or "decoupled".
    Returns:
        ``{"risk": final empirical risk (nats), "grad_norm": Euclidean norm of its gradient,
        "evaluations": function evaluations used}``.
    Raises:
        ValueError: bad tau, max_iter, tolerance or variant; an embedding without trainable
        parameters.

    Examples:
        >>> import torch
        >>> from infonce_book.models import VonMisesFisher
        >>> from infonce_book.learning import NormalisedLinear
        >>> model, gen = VonMisesFisher(3, 2.0), torch.Generator().manual_seed(0)
        >>> phi, data = NormalisedLinear(3, 0.5), model.sample_tuples(256, 4, generator=gen)
        >>> out = fit_exact(phi, data, 0.5)
        >>> out["grad_norm"] < 1e-8
        True
    """
    tau = check_tau(tau)
    max_iter = check_k(max_iter, "max_iter")
    tolerance_grad = check_scalar(tolerance_grad, "tolerance_grad", gt=0)
    check_choice(variant, "variant", VARIANTS)
    params = [p for p in embedding.parameters() if p.requires_grad]
    if not params:
        raise ValueError("embedding has no trainable parameters")
    opt = torch.optim.LBFGS(params, lr=1.0, max_iter=max_iter, tolerance_grad=tolerance_grad, tolerance_change=0.0,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = loss_per_tuple(embedding, *data, tau, variant=variant).mean()
        loss.backward()
        return loss

    opt.step(closure)
    loss = closure()
    grad = torch.cat([p.grad.reshape(-1) for p in params])
    for p in params:
        p.grad = None
    return {"risk": float(loss.detach()), "grad_norm": float(torch.linalg.vector_norm(grad)),
            "evaluations": int(opt.state[params[0]]["func_evals"])}
