"""The chunked kernel from embeddings: InfoNCE scored chunk by chunk of negatives, in a custom
autograd function that holds at most ``B x chunk_size`` similarities, forward and backward.

:class:`InfoNCEFromEmbeddings` forms ``z = <beta a, n_j> - <beta a, p>`` with one matrix
multiply per chunk and a running log-sum-exp, accumulates in the forward pass the (B, d)
softmax-weighted sum of negatives (as in an online softmax) and recomputes the weights chunk by
chunk in the backward pass. Numerics: module docstring of :mod:`infonce_book.losses.explicit`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from ..utils.validation import norm_deviation
from ._backward import differentiable_backward, grad_like, row_factor
from ._common import autocast_off
from ._logsumexp import LogSumExpState, embedding_lse_plain, finite_shift, stretched
from ._norm_checks import raise_unless_unit_norm
from ._variant import Variant

__all__ = ["InfoNCEFromEmbeddings"]

_NEG_INF = float("-inf")


def _scaled_similarities(buffer: torch.Tensor, a_beta: torch.Tensor, n: torch.Tensor, shared: bool) -> torch.Tensor:
    """``beta s_ij = <beta a_i, n_j>`` for a chunk ``n`` of negatives ((c, d) shared or (B, c, d)
    per anchor), one matrix multiply written into ``buffer`` (at least B x c); returns (B, c)."""
    B, c = a_beta.shape[0], n.shape[-2]
    out = buffer[: B * c].view(B, c)
    if shared:
        return torch.mm(a_beta, n.T, out=out)
    torch.bmm(a_beta.unsqueeze(1), n.transpose(1, 2), out=out.view(B, 1, c))
    return out


def _chunk(negatives: torch.Tensor, lo: int, hi: int, shared: bool, dtype: torch.dtype) -> torch.Tensor:
    return (negatives[lo:hi] if shared else negatives[:, lo:hi]).to(dtype)


def _buffer(a: torch.Tensor, bounds: Sequence[tuple[int, int]]) -> torch.Tensor:
    return torch.empty(a.shape[0] * max(hi - lo for lo, hi in bounds), dtype=a.dtype, device=a.device)


def _mask_excluded(y: torch.Tensor, exclude: torch.Tensor, lo: int) -> None:
    """Set ``y[i, exclude[i, e] - lo] = -inf`` where that column lies in the chunk ``y`` (B, c)
    that starts at negative ``lo`` (``exclude``: (B, e) column indices into shared negatives), with
    no index read on the host: a scatter-add of ``-inf`` there and of 0 elsewhere (which changes no
    logit)."""
    cols = exclude - lo
    inside = (cols >= 0) & (cols < y.shape[1])
    values = torch.zeros(cols.shape, dtype=y.dtype, device=y.device).masked_fill_(inside, _NEG_INF)
    y.scatter_add_(1, torch.where(inside, cols, 0), values)


class InfoNCEFromEmbeddings(torch.autograd.Function):
    """Per-row ``lse = log(c + sum_j e^{z_j})`` with ``z_j = <beta a, n_j> - <beta a, p>``.

    The gradients, with weights ``p_ij = e^{z_ij - lse_i}`` and ``P_i = sum_j p_ij n_j``:
    ``grad a_i = g_i beta (P_i - (sum_j p_ij) p_i)``, ``grad p_i = -g_i beta (sum_j p_ij) a_i``,
    ``grad tau = -(1/tau) sum_i g_i (<beta a_i, P_i> - (sum_j p_ij) <beta a_i, p_i>)``, and
    ``grad n_j = sum_i g_i beta p_ij a_i`` (shared) or ``g_i beta p_ij a_i`` (per anchor).

    Saved for the backward pass: the inputs, ``beta a`` (B, d), ``beta s+`` and ``lse = m + r``
    as (B,) tensors and, when the anchor or ``tau`` needs a gradient, ``P`` (B, d), accumulated in
    the forward pass with the running shift (as the output of an online softmax). The negatives'
    gradient needs the final ``lse`` in every weight, so the backward pass recomputes the weights
    chunk by chunk for it. No ``B x k`` tensor is saved. ``exclude`` ((B, e) indices into shared
    negatives, or None) leaves some negatives out of some rows (their logit is ``-inf``): the
    in-batch forms use it for the positive (and the anchor itself) among the candidates.
    """

    @staticmethod
    def forward(ctx: Any, anchor: torch.Tensor, positive: torch.Tensor, negatives: torch.Tensor,
                tau_tensor: torch.Tensor | None, tau: float, variant: Variant, bounds: Sequence[tuple[int, int]],
                dtype: torch.dtype, want_pn: bool, check_norm: bool, exclude: torch.Tensor | None,
                stretch: torch.Tensor | None = None, parts: bool = False) -> torch.Tensor:
        shared = negatives.dim() == 2
        a_beta = anchor.to(dtype) * (1.0 / tau)
        s_pos_beta = (a_beta * positive.to(dtype)).sum(dim=-1)
        state = LogSumExpState(variant, offset=s_pos_beta)
        buffer = _buffer(a_beta, bounds)
        pn: torch.Tensor | None = None
        worst: torch.Tensor | None = None  # max |norm - 1| over the negatives seen so far
        for lo, hi in bounds:
            raw = negatives[lo:hi] if shared else negatives[:, lo:hi]
            if check_norm:  # the chunk is then in cache for the matrix multiply
                dev = norm_deviation(raw)
                worst = dev if worst is None else torch.maximum(worst, dev)
            n = raw.to(dtype)
            y = _scaled_similarities(buffer, a_beta, n, shared)
            if exclude is not None:
                _mask_excluded(y, exclude, lo)
            w, alpha = state.add(y)
            if want_pn:  # sum_j e^{z_ij - m_i} n_j under the running shift m
                if pn is None:
                    pn = _weighted_sum(w, n, shared)
                else:
                    assert alpha is not None  # (every chunk after the first)
                    _add_weighted_sum(pn.mul_(alpha.unsqueeze(-1)), w, n, shared)
        if check_norm:
            assert worst is not None  # (k >= 1: at least one chunk)
            raise_unless_unit_norm(float(worst), negatives, "negatives")
        m, r = state.finish()
        if want_pn:
            assert pn is not None  # (at least one chunk)
            pn.mul_(torch.exp(-r).unsqueeze(-1))  # now sum_j p_ij n_j
        ctx.save_for_backward(anchor, positive, negatives, a_beta, s_pos_beta, m, r, pn, tau_tensor, stretch)
        ctx.tau, ctx.variant, ctx.bounds, ctx.dtype = tau, variant, bounds, dtype
        ctx.exclude = exclude
        # (a logit_scale past its cap: the rest applied to each row, _logsumexp.stretched; m is the
        # row's largest centred logit, at least 0 in the standard variant; ``parts``: (B, 3), the
        # loss, the unstretched loss and m, for _logsumexp.combine_stretched)
        if stretch is None:
            return m + r
        lse = stretched(m + r, m, stretch)
        return torch.stack([lse, m + r, finite_shift(m)], dim=1) if parts else lse

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        anchor, positive, negatives, a_beta, s_pos_beta, m, r, pn, tau_tensor, stretch = ctx.saved_tensors
        tail = (None,) * 7
        if torch.is_grad_enabled():  # create_graph: a differentiable backward pass
            tau, variant, dtype, exclude = ctx.tau, ctx.variant, ctx.dtype, ctx.exclude

            def recompute(a_: torch.Tensor, p_: torch.Tensor, n_: torch.Tensor, t_: torch.Tensor | None,
                          st_: torch.Tensor | None) -> torch.Tensor:
                return embedding_lse_plain(a_, p_, n_, tau if t_ is None else t_, variant, dtype, exclude,
                                           st_)
            if grad.dim() == 2:  # parts (as below)
                grad = grad[:, 0] + (grad[:, 1] + grad[:, 2]) / stretch
            grads = differentiable_backward(recompute, (anchor, positive, negatives, tau_tensor, stretch),
                                            ctx.needs_input_grad[:4] + ctx.needs_input_grad[-2:-1], grad)
            return grads[:4] + tail + grads[4:] + (None,)
        grad_stretch: torch.Tensor | None = None
        if stretch is not None:
            if grad.dim() == 2:  # parts: the unstretched loss and m move as the loss does (d m = d lse
                # where the weights have saturated, the only place their sums are used), at 1/stretch
                grad = grad[:, 0] + (grad[:, 1] + grad[:, 2]) / stretch
            if ctx.needs_input_grad[-2]:  # d lse'/d stretch = m (finite_shift: 0 for a row without a logit)
                grad_stretch = (grad.to(m.dtype) * finite_shift(m)).sum().reshape(())
        with autocast_off(grad.device.type):
            grads = _embedding_backward(ctx, grad, anchor, positive, negatives, a_beta, s_pos_beta, m, r, pn)
        if stretch is not None:  # (last, so that no product meets an overflowed factor)
            grads = tuple(None if x is None else x * stretch for x in grads[:3]) + grads[3:]
        return grads + tail + (grad_stretch, None)

    if TYPE_CHECKING:  # (torch leaves Function.apply unannotated: its signature here, for the callers)
        @classmethod
        def apply(cls, anchor: torch.Tensor, positive: torch.Tensor, negatives: torch.Tensor,
                  tau_tensor: torch.Tensor | None, tau: float, variant: Variant, bounds: Sequence[tuple[int, int]],
                  dtype: torch.dtype, want_pn: bool, check_norm: bool, exclude: torch.Tensor | None,
                  stretch: torch.Tensor | None = None, parts: bool = False) -> torch.Tensor: ...


def _embedding_backward(ctx: Any, grad: torch.Tensor, anchor: torch.Tensor, positive: torch.Tensor,
                        negatives: torch.Tensor, a_beta: torch.Tensor, s_pos_beta: torch.Tensor, m: torch.Tensor,
                        r: torch.Tensor, pn: torch.Tensor | None
                        ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    need_a, need_p, need_n, need_tau = ctx.needs_input_grad[:4]
    tau, dtype = ctx.tau, ctx.dtype
    beta = 1.0 / tau
    shared = negatives.dim() == 2
    a = anchor.to(dtype)
    g = grad.to(dtype)
    f, late = row_factor(g, beta)  # f = g beta unless that overflows (then beta comes last)
    sum_w = ctx.variant.sum_of_weights(m + r)
    grad_a: torch.Tensor | None = None
    grad_p: torch.Tensor | None = None
    grad_n: torch.Tensor | None = None
    grad_tau: torch.Tensor | None = None
    if need_n:
        # p_ij = e^{-r_i} w_ij with w_ij = e^{z_ij - m_i}: the row factor goes into ga.
        grad_n = torch.empty_like(negatives)
        ga = a * (f * torch.exp(-r)).unsqueeze(-1)
        shift = (s_pos_beta + m).unsqueeze(-1)
        buffer = _buffer(a_beta, ctx.bounds)
        for lo, hi in ctx.bounds:
            n = _chunk(negatives, lo, hi, shared, dtype)
            y = _scaled_similarities(buffer, a_beta, n, shared)
            if ctx.exclude is not None:
                _mask_excluded(y, ctx.exclude, lo)
            w = y.sub_(shift).exp_()  # w_ij, (B, c)
            if shared and grad_n.dtype == dtype:
                torch.mm(w.T, ga, out=grad_n[lo:hi])
            elif shared:
                grad_n[lo:hi] = w.T @ ga
            else:
                grad_n[:, lo:hi] = w.unsqueeze(-1) * ga.unsqueeze(1)
        grad_n.mul_(late)
    if need_a:
        assert pn is not None  # (saved when the anchor needs a gradient)
        grad_a = f.unsqueeze(-1) * pn.addcmul(sum_w.unsqueeze(-1), positive.to(dtype), value=-1.0)
        grad_a.mul_(late)
    if need_p:
        grad_p = -(f * sum_w).unsqueeze(-1) * a
        grad_p.mul_(late)
    if need_tau:
        assert pn is not None  # (saved when tau needs a gradient)
        pz = (a_beta * pn).sum(dim=-1) - sum_w * s_pos_beta
        grad_tau = (-((g * pz).sum() * beta)).reshape(())
    return grad_like(grad_a, anchor), grad_like(grad_p, positive), grad_n, grad_tau


def _weighted_sum(w: torch.Tensor, n: torch.Tensor, shared: bool) -> torch.Tensor:
    """``sum_j w_ij n_j``: (B, c) weights times a chunk of negatives, (B, d)."""
    if shared:
        return w @ n
    return torch.bmm(w.unsqueeze(1), n).squeeze(1)


def _add_weighted_sum(out: torch.Tensor, w: torch.Tensor, n: torch.Tensor, shared: bool) -> None:
    """``out += sum_j w_ij n_j`` in place."""
    if shared:
        out.addmm_(w, n)
    else:
        out.unsqueeze(1).baddbmm_(w.unsqueeze(1), n)
