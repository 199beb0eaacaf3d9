"""Pieces shared by the backward passes of the custom autograd functions (:mod:`._similarity`,
:mod:`._chunked`, :mod:`._fused`): gradients in the inputs' dtypes, the row factor that keeps an
underflowed weight from meeting an overflowed factor, and the differentiable backward pass that a
double backward (``create_graph=True``) goes through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

__all__ = ["differentiable_backward", "grad_like", "row_factor"]


def grad_like(grad: torch.Tensor | None, t: torch.Tensor) -> torch.Tensor | None:
    """A gradient in the dtype of the input ``t`` (low-precision inputs get theirs rounded)."""
    return None if grad is None else grad.to(t.dtype)


def row_factor(grad: torch.Tensor, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``(f, late)`` for a backward pass: ``f = grad * beta`` per row and ``late = 1``, or, where
    that product overflows, ``f = grad`` and ``late = beta`` to be applied to the finished
    gradients (so that a weight that underflowed to 0 never meets an infinite factor).

    Chosen on the device, without reading a value on the host: ``late`` is a 0-d tensor, and
    multiplying by it when it is 1 changes no bit of a gradient."""
    f = grad * beta
    finite = torch.isfinite(f).all()
    return torch.where(finite, f, grad), torch.where(finite, grad.new_ones(()), grad.new_full((), beta))


def differentiable_backward(recompute: Callable[..., torch.Tensor], inputs: Sequence[torch.Tensor],
                            needs: Sequence[bool], grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
    """First derivatives as a differentiable graph, for a double backward (``create_graph``).

    ``recompute(*inputs)`` is the per-row loss written with plain torch operations (it
    materialises the logits); its vector-Jacobian product with ``grad`` is taken with
    ``create_graph=True``, so autograd can differentiate the result again. ``needs``: which of
    ``inputs`` need a gradient; returns one gradient (or None) per input."""
    with torch.enable_grad():
        # One alias per input: the same tensor may fill two slots (the in-batch forms pass the
        # candidates as positives and as negatives), and each slot needs its own gradient.
        aliases = [x.view_as(x) if need else x for x, need in zip(inputs, needs)]
        wanted = [x for x, need in zip(aliases, needs) if need]
        out = recompute(*aliases)
        grads = torch.autograd.grad(out, wanted, grad, create_graph=True, allow_unused=True)
    it = iter(grads)
    return tuple(next(it) if need else None for need in needs)
