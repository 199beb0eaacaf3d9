"""The kernel from similarities: InfoNCE over given (B,) and (B, k) similarities, chunk by chunk.

:class:`InfoNCEFromSimilarities` is a custom autograd function that forms the centred logits
``z_j = (s_j - s+) / tau`` chunk by chunk with a running log-sum-exp, saves its inputs and two
(B,) tensors, and recomputes the softmax weights chunk by chunk in the backward pass, so that at
most ``B x chunk_size`` logits are held, forward and backward (the gradient of ``l_k`` in
``s_j`` is ``beta p_j``, in ``s+`` it is ``-beta sum_j p_j``, in ``tau`` it is
``-(1/tau) sum_j p_j z_j``). Small problems take plain torch operations instead
(:func:`._logsumexp.similarity_lse_plain`); :func:`similarity_loss` chooses. Numerics: module
docstring of :mod:`infonce_book.losses.explicit`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from ._backward import differentiable_backward, grad_like, row_factor
from ._common import autocast_off, chunk_bounds, finite_loss, inverse_temperature, use_fused
from ._logsumexp import LogSumExpState, centred_logits, similarity_lse_plain
from ._variant import Variant

__all__ = ["InfoNCEFromSimilarities", "similarity_loss"]


class InfoNCEFromSimilarities(torch.autograd.Function):
    """Per-row ``lse = log(c + sum_j e^{z_j})``, ``z_j = (s_j - s+)/tau``, from similarities.

    Saves ``s_pos``, ``s_neg`` (the inputs) and ``lse = m + r`` as two (B,) tensors; the
    backward pass recomputes the weights chunk by chunk, so autograd holds no ``B x chunk``
    temporaries. A backward pass that must itself be differentiable (``create_graph``) goes
    through :func:`._logsumexp.similarity_lse_plain` instead.
    """

    @staticmethod
    def forward(ctx: Any, s_pos: torch.Tensor, s_neg: torch.Tensor, tau_tensor: torch.Tensor | None, tau: float,
                variant: Variant, bounds: Sequence[tuple[int, int]], dtype: torch.dtype) -> torch.Tensor:
        state = LogSumExpState(variant)
        for lo, hi in bounds:
            state.add(centred_logits(s_neg[:, lo:hi], s_pos, tau, dtype))
        m, r = state.finish()
        ctx.save_for_backward(s_pos, s_neg, m, r, tau_tensor)
        ctx.tau, ctx.variant, ctx.bounds, ctx.dtype = tau, variant, bounds, dtype
        return m + r

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        s_pos, s_neg, m, r, tau_tensor = ctx.saved_tensors
        tau, dtype, variant = ctx.tau, ctx.dtype, ctx.variant
        tail = (None, None, None, None)
        if torch.is_grad_enabled():  # create_graph: a differentiable backward pass
            def recompute(s_pos_: torch.Tensor, s_neg_: torch.Tensor, tau_tensor_: torch.Tensor | None) -> torch.Tensor:
                return similarity_lse_plain(s_pos_, s_neg_, tau if tau_tensor_ is None else tau_tensor_,
                                            variant, dtype)
            return differentiable_backward(recompute, (s_pos, s_neg, tau_tensor), ctx.needs_input_grad[:3],
                                           grad) + tail
        with autocast_off(grad.device.type):
            return _similarity_backward(ctx, grad, s_pos, s_neg, m, r) + tail

    if TYPE_CHECKING:  # (torch leaves Function.apply unannotated: its signature here, for the callers)
        @classmethod
        def apply(cls, s_pos: torch.Tensor, s_neg: torch.Tensor, tau_tensor: torch.Tensor | None, tau: float,
                  variant: Variant, bounds: Sequence[tuple[int, int]], dtype: torch.dtype) -> torch.Tensor: ...


def _similarity_backward(ctx: Any, grad: torch.Tensor, s_pos: torch.Tensor, s_neg: torch.Tensor, m: torch.Tensor,
                         r: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    need_pos, need_neg, need_tau = ctx.needs_input_grad[:3]
    tau, dtype = ctx.tau, ctx.dtype
    beta = 1.0 / tau
    g = grad.to(dtype)
    f, late = row_factor(g, beta)  # f = g beta unless that overflows (then beta comes last)
    lse = m + r
    grad_pos: torch.Tensor | None = None
    grad_neg: torch.Tensor | None = None
    grad_tau: torch.Tensor | None = None
    if need_pos:
        grad_pos = -(f * ctx.variant.sum_of_weights(lse)) * late
    if need_neg or need_tau:
        grad_neg = torch.empty_like(s_neg) if need_neg else None
        pz = torch.zeros_like(lse)
        exp_neg_r = torch.exp(-r).unsqueeze(-1)
        for lo, hi in ctx.bounds:
            z = centred_logits(s_neg[:, lo:hi], s_pos, tau, dtype)
            # p_j = e^{z_j - m} e^{-r}: the exponent stays small (r, up to log(k+1), is not
            # added to it before rounding), so large k costs no accuracy here.
            w = (z - m.unsqueeze(-1)).exp_().mul_(exp_neg_r)
            if need_tau:  # p_j z_j, with 0 where p_j underflowed (z_j may be -inf there)
                pz += torch.where(w > 0, w * z, 0.0).sum(dim=-1)
            if grad_neg is not None:  # (need_neg)
                grad_neg[:, lo:hi] = w.mul_(f.unsqueeze(-1))
        if grad_neg is not None:
            grad_neg.mul_(late)
        if need_tau:
            grad_tau = (-((g * pz).sum() * beta)).reshape(())
    return grad_like(grad_pos, s_pos), grad_neg, grad_tau


def similarity_loss(s_pos: torch.Tensor, s_neg: torch.Tensor, tau_value: float, tau_tensor: torch.Tensor | None,
                    variant: Variant, chunk_size: int | None, dtype: torch.dtype, reduction: str) -> torch.Tensor:
    """The reduced loss from validated similarities ((B,) and (B, k), k >= 1): plain torch
    operations for small problems (:func:`._common.use_fused`), :class:`InfoNCEFromSimilarities`
    otherwise. ``tau_value`` the float temperature, ``tau_tensor`` the 0-d tensor to
    differentiate (or None). Raises OverflowError where ``1/tau`` or the loss leaves the range of
    ``dtype``."""
    inverse_temperature(tau_value, dtype)
    B, k = s_neg.shape
    if use_fused(B, k, chunk_size):
        lse = similarity_lse_plain(s_pos, s_neg, tau_value if tau_tensor is None else tau_tensor,
                                   variant, dtype)
    else:
        lse = InfoNCEFromSimilarities.apply(s_pos, s_neg, tau_tensor, tau_value, variant,
                                            chunk_bounds(k, chunk_size), dtype)
    return finite_loss(lse, reduction, dtype, tau_value)
