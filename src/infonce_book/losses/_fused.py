"""The fused kernel from embeddings: the loss of a small problem (all k negatives at once, ``B k``
at most :data:`._common.FUSED_MAX_LOGITS`) in one matrix multiply and one softmax, with the
argument checks read in the same synchronisation as the loss (:class:`FusedInfoNCE`). Its fixed
cost per call is what matters at that size. Numerics: module docstring of
:mod:`infonce_book.losses.explicit`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from ._backward import differentiable_backward, grad_like
from ._common import autocast_enabled, check_finite_loss, finite_reduction, reduce, values_checked
from ._logsumexp import combine_stretched, embedding_lse_plain, finite_shift, safe_reduce, stretched
from ._norm_checks import norm_range, raise_unless_checks_pass
from ._variant import Variant

__all__ = ["FusedInfoNCE"]

_NEG_INF = float("-inf")


class FusedInfoNCE(torch.autograd.Function):
    """The loss of a small problem in one block (all k negatives at once), reduced.

    The centred logits come out of one matrix multiply with the positive folded in,
    ``z_ij = beta <a_i, n_j> - beta s+_i`` (``torch.addmm``; ``-inf`` where ``exclude`` leaves a
    negative out). With the softmax ``q_ij = e^{z_ij} / sum_l e^{z_il}`` over the negatives (one
    fused kernel), ``l_i = log sum_j e^{z_ij} = max_j z_ij - log max_j q_ij`` (``max_j q_ij >=
    1/k``, so the logarithm is exact to rounding), and the loss is ``log(1 + e^{l_i})``
    (standard; ``softplus``, exact in relative terms when the loss is tiny) or ``l_i``
    (decoupled). The weight of negative j is ``p_ij = s_i q_ij`` with ``s_i = sigmoid(l_i)``
    (standard) or 1, so that with the row factor ``f_i = g_i s_i beta`` (divided by B for the
    mean): ``grad a_i = f_i (sum_j q_ij n_j - p_i)``, ``grad p_i = -f_i a_i``,
    ``grad n_j = sum_i f_i q_ij a_i`` and
    ``grad tau = -beta sum_i f_i (<a_i, sum_j q_ij n_j> - s+_i)``. ``f`` is formed as
    ``(s beta) g`` and ``beta`` is never multiplied into a weight on its own, so a weight that
    underflowed to 0 never meets an overflowed factor (for upstream gradients up to B for the
    mean, 1 for the sum).

    ``checks``: ``(tensor, name)`` pairs whose rows must have norm 1; their smallest and largest
    norms and the loss are read in one synchronisation after the loss is computed (the norms
    first, so that the negatives are in cache for the matrix multiply), and a failing check is
    redone tensor by tensor for its message. Saves the inputs, the (B, k) softmax and the (B, 1)
    ``l``; a backward pass with ``create_graph`` goes through :func:`._logsumexp.embedding_lse_plain`
    instead. Written for a small fixed cost per call (it is what matters at this size): few
    tensor operations, the row quantities kept as (B, 1) columns, nothing computed for a
    backward pass in the forward one.
    """

    @staticmethod
    def forward(ctx: Any, anchor: torch.Tensor, positive: torch.Tensor, negatives: torch.Tensor,
                tau_tensor: torch.Tensor | None, tau: float, variant: Variant, dtype: torch.dtype,
                exclude: torch.Tensor | None, reduction: str, checks: Sequence[tuple[torch.Tensor, str]],
                stretch: torch.Tensor | None = None) -> torch.Tensor:
        lohi = norm_range([x for x, _ in checks]) if checks else ()
        beta = 1.0 / tau
        a, n = _as(anchor, dtype), _as(negatives, dtype)
        s_pos = torch.linalg.vecdot(a, _as(positive, dtype))
        if n.dim() == 2:
            z = torch.addmm(s_pos.unsqueeze(-1), a, n.T, beta=-beta, alpha=beta)
        else:
            z = torch.baddbmm(s_pos.view(-1, 1, 1), a.unsqueeze(1), n.transpose(1, 2), beta=-beta,
                              alpha=beta).squeeze(1)
        if exclude is not None:
            z.scatter_(1, exclude, _NEG_INF)
        q = torch.softmax(z, dim=-1)
        top: torch.Tensor | None = None
        if stretch is None:
            lse = z.amax(dim=-1, keepdim=True).sub_(q.amax(dim=-1, keepdim=True).log_())  # log sum_j e^{z_ij}
        else:  # a logit_scale past its cap: the rest applied to each row (_logsumexp.stretched)
            top = z.amax(dim=-1, keepdim=True)
            lse = top - q.amax(dim=-1, keepdim=True).log_()
            top = finite_shift(top)
            base, lse = lse, stretched(lse, top, stretch)
        rows = variant.row_loss(lse)
        # (reduction "none": a copy, not a view, so that the caller may change it in place)
        out = rows.mean() if reduction == "mean" else rows.sum() if reduction == "sum" else rows.view(-1).clone()
        if reduction == "mean" and not values_checked():  # (nothing read: a mean whose sum overflows, on the device)
            out = torch.where(torch.isfinite(out), out, (rows / rows.numel()).sum())
        if top is not None and variant.linear_rows and reduction != "none":  # (rows may be +inf and -inf)
            assert stretch is not None  # (top is set with it)
            out = combine_stretched(out, lambda x: safe_reduce(x, reduction), base, top, stretch)
        if not raise_unless_checks_pass(checks, lohi, out):  # rows beyond the range (an error), or a mean
            rows = rows.view(-1)                               # whose sum overflows
            check_finite_loss(rows, dtype, tau)
            out = finite_reduction(out, rows, reduction, dtype, tau, known_finite=False)
        # l only for the standard variant's s = sigmoid(l) (the decoupled output may be l itself,
        # which a caller may then change in place)
        ctx.save_for_backward(anchor, positive, negatives, q, lse if variant.weighted_rows else None, s_pos, tau_tensor,
                              stretch, top)
        ctx.tau, ctx.variant, ctx.dtype, ctx.exclude, ctx.reduction = (tau, variant, dtype,
                                                                                exclude, reduction)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        anchor, positive, negatives, q, lse, s_pos, tau_tensor, stretch, top = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph: a differentiable backward pass
            tau, dtype, variant, exclude, reduction = (ctx.tau, ctx.dtype, ctx.variant,
                                                                ctx.exclude, ctx.reduction)

            def recompute(a_: torch.Tensor, p_: torch.Tensor, n_: torch.Tensor, t_: torch.Tensor | None,
                          st_: torch.Tensor | None) -> torch.Tensor:
                lse = embedding_lse_plain(a_, p_, n_, tau if t_ is None else t_, variant, dtype, exclude,
                                          st_)
                return reduce(lse, reduction)
            grads = differentiable_backward(recompute, (anchor, positive, negatives, tau_tensor, stretch),
                                            ctx.needs_input_grad[:4] + ctx.needs_input_grad[-1:], grad)
            return grads[:4] + _TAIL6 + grads[4:]
        device_type = grad.device.type
        if autocast_enabled(device_type):
            with torch.autocast(device_type, enabled=False):
                return _fused_backward(ctx, grad, anchor, positive, negatives, q, lse, s_pos, stretch, top)
        return _fused_backward(ctx, grad, anchor, positive, negatives, q, lse, s_pos, stretch, top)

    if TYPE_CHECKING:  # (torch leaves Function.apply unannotated: its signature here, for the callers)
        @classmethod
        def apply(cls, anchor: torch.Tensor, positive: torch.Tensor, negatives: torch.Tensor,
                  tau_tensor: torch.Tensor | None, tau: float, variant: Variant, dtype: torch.dtype,
                  exclude: torch.Tensor | None, reduction: str, checks: Sequence[tuple[torch.Tensor, str]],
                  stretch: torch.Tensor | None = None) -> torch.Tensor: ...


_TAIL6 = (None,) * 6


def _fused_backward(ctx: Any, g: torch.Tensor, anchor: torch.Tensor, positive: torch.Tensor, negatives: torch.Tensor,
                    q: torch.Tensor, lse: torch.Tensor | None, s_pos: torch.Tensor, stretch: torch.Tensor | None = None,
                    top: torch.Tensor | None = None) -> tuple[torch.Tensor | None, ...]:
    """The first derivatives of :class:`FusedInfoNCE` (its docstring has the formulas), as the
    eleven outputs of its backward pass. With a ``stretch`` (:func:`._logsumexp.stretched`) the
    gradients are multiplied by it, last (the saturated weights are those of the larger scale), and
    its own gradient is ``sum_i f_i top_i / beta``."""
    need_a, need_p, need_n, need_tau = ctx.needs_input_grad[:4]
    dtype = ctx.dtype
    g = _as(g, dtype)
    if g.dim():  # reduction "none": one upstream gradient per row
        g = g.unsqueeze(-1)
    beta = 1.0 / ctx.tau
    c = -beta / q.shape[0] if ctx.reduction == "mean" else -beta
    # -f = (c s) g, (B, 1); s = sigmoid(l) (standard) or 1 (decoupled: every row's weights sum to 1)
    neg_f = ctx.variant.row_factor_fused(lse, g, c, _zero(dtype, q.device), q.shape[0])
    grad_stretch: torch.Tensor | None = None
    if stretch is not None and ctx.needs_input_grad[-1]:
        assert top is not None  # (saved with stretch)
        grad_stretch = (-(neg_f * top).sum() * ctx.tau).reshape(())
    shared = negatives.dim() == 2
    a, n = _as(anchor, dtype), _as(negatives, dtype)
    grad_a: torch.Tensor | None = None
    grad_p: torch.Tensor | None = None
    grad_n: torch.Tensor | None = None
    grad_tau: torch.Tensor | None = None
    if need_a or need_tau:
        # p_i - sum_j q_ij n_j, in one matrix multiply
        p = _as(positive, dtype)
        if shared:
            diff = torch.addmm(p, q, n, alpha=-1.0)
        else:
            diff = torch.baddbmm(p.unsqueeze(1), q.unsqueeze(1), n, alpha=-1.0).squeeze(1)
        if need_tau:  # pz_i = <a_i, sum_j q_ij n_j> - s+_i = -<a_i, diff_i>
            grad_tau = (-(neg_f.squeeze(-1) * torch.linalg.vecdot(a, diff)).sum() * beta).reshape(())
        if need_a:
            grad_a = diff.mul_(neg_f)
    if need_p or need_n:
        fa = a * neg_f  # -f a
        if need_p:
            grad_p = fa
        if need_n:
            grad_n = (torch.mm(q.T, fa) if shared else q.unsqueeze(-1) * fa.unsqueeze(1)).neg_()
    if stretch is not None:  # (last, so that no product meets an overflowed factor)
        grad_a, grad_p, grad_n = (None if x is None else x * stretch for x in (grad_a, grad_p, grad_n))
    return (grad_like(grad_a, anchor), grad_like(grad_p, positive), grad_like(grad_n, negatives), grad_tau,
            None, None, None, None, None, None, grad_stretch)


_ZEROS: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}


def _zero(dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A cached 0-d zero (the ``input`` of ``torch.addcmul``)."""
    key = (dtype, device)
    zero = _ZEROS.get(key)
    if zero is None:
        zero = _ZEROS[key] = torch.zeros((), dtype=dtype, device=device)
    return zero


def _as(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return x if x.dtype == dtype else x.to(dtype)
