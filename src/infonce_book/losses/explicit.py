"""The InfoNCE loss, in log space (book: notation page, eq. ``notation-infonce``).

For one tuple (anchor ``x``, positive ``x+``, negatives ``x_1- ... x_k-``) with similarities
``s+ = <phi(x), phi(x+)>`` and ``s_j = <phi(x), phi(x_j-)>`` and inverse temperature
``beta = 1/tau``::

    standard  : l_k = -beta s+ + log( e^{beta s+} + sum_j e^{beta s_j} )
    decoupled : l_k = -beta s+ + log(               sum_j e^{beta s_j} )

Both are computed from the *centred logits* ``z_j = beta (s_j - s+)``:
``standard = log(1 + sum_j e^{z_j})`` and ``decoupled = log sum_j e^{z_j}``. Nothing is clamped.
Low-precision inputs (float16, bfloat16) are computed in float32; the result has dtype
``promote(input, float32)`` unless an ``accumulate`` dtype is asked for. Under
``torch.autocast`` the loss switches autocast off for itself: float32 inputs give the float32
result and gradients.

Negatives are processed in chunks of ``chunk_size`` with a running log-sum-exp, so that at no
point more than ``B x chunk_size`` similarities are held, in the forward *and* the backward pass:
:func:`info_nce` and :func:`info_nce_from_similarities` are custom autograd functions that save
their inputs and per-row quantities only (the log-sum-exp, and for :func:`info_nce` the (B, d)
softmax-weighted sum of negatives, accumulated in the forward pass as in an online softmax), and
recompute chunk by chunk the softmax weights ``p_j = e^{z_j - lse}`` that the backward pass
needs for a (B, k)-sized gradient (the gradient of ``l_k`` in ``s_j`` is ``beta p_j``, in
``s+`` it is ``-beta sum_j p_j``, in ``tau`` it is ``-(1/tau) sum_j p_j z_j``).

Small problems (all k negatives in one chunk and ``B k <= 2^16``) take a *fused* path instead:
for embeddings one matrix multiply that forms the centred logits and one softmax kernel, with
the argument checks read in the same synchronisation as the loss (:class:`_FusedInfoNCE`; it
keeps the (B, k) softmax for the backward pass); for similarities plain torch operations. Their
fixed cost per call is what matters at that size.

Second derivatives (``create_graph=True``, as in gradient penalties) are right:
:func:`info_nce_streaming` and the fused path from similarities are plain autograd, and the
custom functions' backward pass, when a graph of it is asked for, recomputes the loss with
plain torch operations (materialising the (B, k) logits) and differentiates that.

Overflow: a result beyond the range of its dtype is an ``OverflowError``, never ``inf`` or
``NaN``: ``1/tau`` must be representable in the accumulation dtype (float32: ``tau >= 2.94e-39``),
and a loss whose logits overflow (inputs far off the sphere) is reported as such. Gradients are
formed so that a weight that underflowed to 0 never meets an overflowed factor (no ``0 * inf``).

Where the logits are formed:

* :func:`info_nce_from_similarities` and :func:`info_nce_streaming` take similarities as given
  and form ``s_j - s+`` in float64 (where the difference of two float32 numbers is exact) before
  the division by ``tau``, then round once: the result is exact to about ``eps * max|z|``
  relative to those similarities, even at ``tau = 1e-4``.
* :func:`info_nce` forms ``z = <beta a, n_j> - <beta a, p>`` with one matrix multiply per chunk
  (the bias folded into it) in the accumulation dtype. In float32 the similarities themselves
  are rounded by the matrix multiply (absolute error about ``eps32 * sqrt(d)``), so forming the
  difference in float64 would not make the result closer to a float64 reference; the error in
  ``z`` is about ``eps32 * beta`` either way. ``accumulate=torch.float64`` computes everything
  from float32 embeddings in float64 instead (exact to about ``1e-15``, at several times the
  cost on a CPU, more on most GPUs).
"""

from __future__ import annotations

import math

import torch

from ..utils.validation import (
    check_bool,
    check_choice,
    check_float_tensor,
    check_unit_norm,
    norm_deviation,
    raise_unless_unit_norm,
    unit_norm_tolerance,
)
from ._common import (
    ACCUMULATE_DTYPES,
    REDUCTIONS,
    VARIANTS,
    LogSumExpState,
    RunningLogSumExp,
    autocast_enabled,
    autocast_off,
    centred_logits,
    check_accumulate,
    check_chunk_size,
    check_finite_loss,
    chunk_bounds,
    differentiable_backward,
    finite_loss,
    finite_reduction,
    grad_like,
    inverse_temperature,
    lse_plain,
    reduce,
    row_factor,
    scale_by_temperature,
    split_tau,
    sum_of_weights,
    use_fused,
    without_autocast,
)

__all__ = ["ACCUMULATE_DTYPES", "REDUCTIONS", "VARIANTS", "info_nce", "info_nce_from_similarities",
           "info_nce_streaming"]

_NEG_INF = float("-inf")


@without_autocast
def info_nce_streaming(s_pos, s_neg_chunks, tau, *, variant="standard", reduction="mean", accumulate=None):
    """InfoNCE from similarities that arrive in chunks of negatives (running log-sum-exp).

    Args:
        s_pos: (B,) similarities of anchor and positive.
        s_neg_chunks: an iterable of (B, m_i) tensors, the similarities of each anchor with the
            next m_i negatives; at least one negative in all. Only one chunk is held at a time.
        tau, variant, reduction, accumulate: as in :func:`info_nce_from_similarities`.
    Returns:
        As :func:`info_nce_from_similarities` over the concatenated chunks (same value).
        Differentiable by plain autograd (to any order), which keeps one (B, m_i) tensor per
        chunk for the backward pass (chunks that were consumed cannot be recomputed): for a
        backward pass that holds at most ``B x chunk_size`` similarities, score embeddings with
        :func:`info_nce` and ``chunk_size``. Without gradients only one chunk is held.
    Raises:
        TypeError: non-tensor, non-floating or non-iterable inputs. ValueError: tau not in
        (0, inf); a chunk whose shape is not (B, m); no negatives; NaN/inf entries; unknown
        variant, reduction or accumulate dtype. OverflowError: ``1/tau`` or the loss beyond the
        range of the accumulation dtype.

    Examples:
        >>> import torch
        >>> s_pos = torch.tensor([0.5])
        >>> chunks = [torch.tensor([[0.5, 0.5]]), torch.tensor([[0.5]])]
        >>> round(float(info_nce_streaming(s_pos, chunks, 0.1)), 6)  # log(k + 1), k = 3
        1.386294
    """
    check_choice(variant, "variant", VARIANTS)
    check_choice(reduction, "reduction", REDUCTIONS)
    check_float_tensor(s_pos, "s_pos")
    if s_pos.dim() != 1 or s_pos.shape[0] == 0:
        raise ValueError(f"s_pos must have shape (B,) with B >= 1, got shape {tuple(s_pos.shape)}")
    if isinstance(s_neg_chunks, torch.Tensor) or not hasattr(s_neg_chunks, "__iter__"):
        raise TypeError(f"s_neg_chunks must be an iterable of (B, m) tensors (e.g. a list or a generator), "
                        f"got {type(s_neg_chunks).__name__}")
    tau_value, tau_tensor = split_tau(tau)
    tau = tau_value if tau_tensor is None else tau_tensor
    accumulate = check_accumulate(accumulate, s_pos.device)
    dtype = torch.promote_types(s_pos.dtype, torch.float32) if accumulate is None else accumulate
    inverse_temperature(tau_value, dtype)
    s_pos = s_pos.to(dtype)
    state = RunningLogSumExp(include_positive=(variant == "standard"))
    k = 0
    for chunk in s_neg_chunks:
        check_float_tensor(chunk, "s_neg chunk")
        if chunk.dim() != 2 or chunk.shape[0] != s_pos.shape[0]:
            raise ValueError(f"each s_neg chunk must have shape (B, m) with B = {s_pos.shape[0]}, "
                             f"got shape {tuple(chunk.shape)}")
        if chunk.shape[1] == 0:
            continue
        k += chunk.shape[1]
        state.update(centred_logits(chunk, s_pos, tau, dtype))
    if k < 1:
        raise ValueError("k (number of negatives) must be >= 1, got no negatives in s_neg_chunks")
    return finite_loss(state.value(), reduction, dtype, tau_value)


# ---- from similarities -------------------------------------------------------------------------

def _fused_similarity_lse(s_pos, s_neg, tau, include_positive, dtype):
    """Per-row loss from similarities with plain torch operations (any order of derivatives);
    ``tau`` a float or a 0-d tensor."""
    return lse_plain(centred_logits(s_neg, s_pos, tau, dtype), None, include_positive)


class _InfoNCEFromSimilarities(torch.autograd.Function):
    """Per-row ``lse = log(c + sum_j e^{z_j})``, ``z_j = (s_j - s+)/tau``, from similarities.

    Saves ``s_pos``, ``s_neg`` (the inputs) and ``lse = m + r`` as two (B,) tensors; the
    backward pass recomputes the weights chunk by chunk, so autograd holds no ``B x chunk``
    temporaries. A backward pass that must itself be differentiable (``create_graph``) goes
    through :func:`_fused_similarity_lse` instead.
    """

    @staticmethod
    def forward(ctx, s_pos, s_neg, tau_tensor, tau, include_positive, bounds, dtype):
        state = LogSumExpState(include_positive)
        for lo, hi in bounds:
            state.add(centred_logits(s_neg[:, lo:hi], s_pos, tau, dtype))
        m, r = state.finish()
        ctx.save_for_backward(s_pos, s_neg, m, r, tau_tensor)
        ctx.tau, ctx.include_positive, ctx.bounds, ctx.dtype = tau, include_positive, bounds, dtype
        return m + r

    @staticmethod
    def backward(ctx, grad):
        s_pos, s_neg, m, r, tau_tensor = ctx.saved_tensors
        tau, dtype, include_positive = ctx.tau, ctx.dtype, ctx.include_positive
        tail = (None, None, None, None)
        if torch.is_grad_enabled():  # create_graph: a differentiable backward pass
            def recompute(s_pos_, s_neg_, tau_tensor_):
                return _fused_similarity_lse(s_pos_, s_neg_, tau if tau_tensor_ is None else tau_tensor_,
                                             include_positive, dtype)
            return differentiable_backward(recompute, (s_pos, s_neg, tau_tensor), ctx.needs_input_grad[:3],
                                           grad) + tail
        with autocast_off(grad.device.type):
            return _similarity_backward(ctx, grad, s_pos, s_neg, m, r) + tail


def _similarity_backward(ctx, grad, s_pos, s_neg, m, r):
    need_pos, need_neg, need_tau = ctx.needs_input_grad[:3]
    tau, dtype = ctx.tau, ctx.dtype
    beta = 1.0 / tau
    g = grad.to(dtype)
    f, late = row_factor(g, beta)  # f = g beta unless that overflows (then beta comes last)
    lse = m + r
    grad_pos = grad_neg = grad_tau = None
    if need_pos:
        grad_pos = -(f * sum_of_weights(lse, ctx.include_positive)) * late
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
            if need_neg:
                grad_neg[:, lo:hi] = w.mul_(f.unsqueeze(-1))
        if need_neg and late != 1.0:
            grad_neg.mul_(late)
        if need_tau:
            grad_tau = (-((g * pz).sum() * beta)).reshape(())
    return grad_like(grad_pos, s_pos), grad_neg, grad_tau


# ---- from embeddings ---------------------------------------------------------------------------

def _scaled_similarities(buffer, a_beta, n, shared):
    """``beta s_ij = <beta a_i, n_j>`` for a chunk ``n`` of negatives ((c, d) shared or (B, c, d)
    per anchor), one matrix multiply written into ``buffer`` (at least B x c); returns (B, c)."""
    B, c = a_beta.shape[0], n.shape[-2]
    out = buffer[: B * c].view(B, c)
    if shared:
        return torch.mm(a_beta, n.T, out=out)
    torch.bmm(a_beta.unsqueeze(1), n.transpose(1, 2), out=out.view(B, 1, c))
    return out


def _chunk(negatives, lo, hi, shared, dtype):
    return (negatives[lo:hi] if shared else negatives[:, lo:hi]).to(dtype)


def _buffer(a, bounds):
    return torch.empty(a.shape[0] * max(hi - lo for lo, hi in bounds), dtype=a.dtype, device=a.device)


def _chunk_masks(exclude, bounds):
    """Per chunk, the (rows, columns within the chunk) of the negatives that ``exclude`` ((B, e)
    column indices into shared negatives, or None) leaves out of each row."""
    if exclude is None:
        return [None] * len(bounds)
    rows = torch.arange(exclude.shape[0], device=exclude.device).unsqueeze(-1).expand_as(exclude)
    masks = []
    for lo, hi in bounds:
        inside = (exclude >= lo) & (exclude < hi)
        masks.append((rows[inside], exclude[inside] - lo))
    return masks


def _fused_embedding_lse(anchor, positive, negatives, tau, include_positive, dtype, exclude=None):
    """Per-row loss from embeddings with plain torch operations over the (B, k) logits (any order
    of derivatives); ``tau`` a float or a 0-d tensor; ``exclude`` as in :func:`_chunk_masks`."""
    a_beta = scale_by_temperature(anchor.to(dtype), tau, divide=False)
    s_pos_beta = (a_beta * positive.to(dtype)).sum(dim=-1)
    n = negatives.to(dtype)
    y = a_beta @ n.T if n.dim() == 2 else torch.bmm(a_beta.unsqueeze(1), n.transpose(1, 2)).squeeze(1)
    if exclude is not None:
        y = y.scatter(1, exclude, _NEG_INF)
    return lse_plain(y, s_pos_beta, include_positive)


class _InfoNCEFromEmbeddings(torch.autograd.Function):
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
    def forward(ctx, anchor, positive, negatives, tau_tensor, tau, include_positive, bounds, dtype, want_pn,
                check_norm, exclude):
        shared = negatives.dim() == 2
        a_beta = anchor.to(dtype) * (1.0 / tau)
        s_pos_beta = (a_beta * positive.to(dtype)).sum(dim=-1)
        state = LogSumExpState(include_positive, offset=s_pos_beta)
        buffer = _buffer(a_beta, bounds)
        masks = _chunk_masks(exclude, bounds)
        pn = None
        worst = None  # max |norm - 1| over the negatives seen so far
        for (lo, hi), mask in zip(bounds, masks):
            raw = negatives[lo:hi] if shared else negatives[:, lo:hi]
            if check_norm:  # the chunk is then in cache for the matrix multiply
                dev = norm_deviation(raw)
                worst = dev if worst is None else torch.maximum(worst, dev)
            n = raw.to(dtype)
            y = _scaled_similarities(buffer, a_beta, n, shared)
            if mask is not None:
                y[mask] = _NEG_INF
            w, alpha = state.add(y)
            if want_pn:  # sum_j e^{z_ij - m_i} n_j under the running shift m
                if pn is None:
                    pn = _weighted_sum(w, n, shared)
                else:
                    _add_weighted_sum(pn.mul_(alpha.unsqueeze(-1)), w, n, shared)
        if check_norm:
            raise_unless_unit_norm(float(worst), negatives, "negatives")
        m, r = state.finish()
        if want_pn:
            pn.mul_(torch.exp(-r).unsqueeze(-1))  # now sum_j p_ij n_j
        ctx.save_for_backward(anchor, positive, negatives, a_beta, s_pos_beta, m, r, pn, tau_tensor)
        ctx.tau, ctx.include_positive, ctx.bounds, ctx.dtype = tau, include_positive, bounds, dtype
        ctx.exclude, ctx.masks = exclude, masks
        return m + r

    @staticmethod
    def backward(ctx, grad):
        anchor, positive, negatives, a_beta, s_pos_beta, m, r, pn, tau_tensor = ctx.saved_tensors
        tail = (None,) * 7
        if torch.is_grad_enabled():  # create_graph: a differentiable backward pass
            tau, include_positive, dtype, exclude = ctx.tau, ctx.include_positive, ctx.dtype, ctx.exclude

            def recompute(a_, p_, n_, t_):
                return _fused_embedding_lse(a_, p_, n_, tau if t_ is None else t_, include_positive, dtype, exclude)
            return differentiable_backward(recompute, (anchor, positive, negatives, tau_tensor),
                                           ctx.needs_input_grad[:4], grad) + tail
        with autocast_off(grad.device.type):
            return _embedding_backward(ctx, grad, anchor, positive, negatives, a_beta, s_pos_beta, m, r, pn) + tail


def _embedding_backward(ctx, grad, anchor, positive, negatives, a_beta, s_pos_beta, m, r, pn):
    need_a, need_p, need_n, need_tau = ctx.needs_input_grad[:4]
    tau, dtype = ctx.tau, ctx.dtype
    beta = 1.0 / tau
    shared = negatives.dim() == 2
    a = anchor.to(dtype)
    g = grad.to(dtype)
    f, late = row_factor(g, beta)  # f = g beta unless that overflows (then beta comes last)
    sum_w = sum_of_weights(m + r, ctx.include_positive)
    grad_a = grad_p = grad_n = grad_tau = None
    if need_n:
        # p_ij = e^{-r_i} w_ij with w_ij = e^{z_ij - m_i}: the row factor goes into ga.
        grad_n = torch.empty_like(negatives)
        ga = a * (f * torch.exp(-r)).unsqueeze(-1)
        shift = (s_pos_beta + m).unsqueeze(-1)
        buffer = _buffer(a_beta, ctx.bounds)
        for (lo, hi), mask in zip(ctx.bounds, ctx.masks):
            n = _chunk(negatives, lo, hi, shared, dtype)
            y = _scaled_similarities(buffer, a_beta, n, shared)
            if mask is not None:
                y[mask] = _NEG_INF
            w = y.sub_(shift).exp_()  # w_ij, (B, c)
            if shared and grad_n.dtype == dtype:
                torch.mm(w.T, ga, out=grad_n[lo:hi])
            elif shared:
                grad_n[lo:hi] = w.T @ ga
            else:
                grad_n[:, lo:hi] = w.unsqueeze(-1) * ga.unsqueeze(1)
        if late != 1.0:
            grad_n.mul_(late)
    if need_a:
        grad_a = f.unsqueeze(-1) * pn.addcmul(sum_w.unsqueeze(-1), positive.to(dtype), value=-1.0)
        if late != 1.0:
            grad_a.mul_(late)
    if need_p:
        grad_p = -(f * sum_w).unsqueeze(-1) * a
        if late != 1.0:
            grad_p.mul_(late)
    if need_tau:
        pz = (a_beta * pn).sum(dim=-1) - sum_w * s_pos_beta
        grad_tau = (-((g * pz).sum() * beta)).reshape(())
    return grad_like(grad_a, anchor), grad_like(grad_p, positive), grad_n, grad_tau


def _weighted_sum(w, n, shared):
    """``sum_j w_ij n_j``: (B, c) weights times a chunk of negatives, (B, d)."""
    if shared:
        return w @ n
    return torch.bmm(w.unsqueeze(1), n).squeeze(1)


def _add_weighted_sum(out, w, n, shared):
    """``out += sum_j w_ij n_j`` in place."""
    if shared:
        out.addmm_(w, n)
    else:
        out.unsqueeze(1).baddbmm_(w.unsqueeze(1), n)


class _FusedInfoNCE(torch.autograd.Function):
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
    ``l``; a backward pass with ``create_graph`` goes through :func:`_fused_embedding_lse`
    instead. Written for a small fixed cost per call (it is what matters at this size): few
    tensor operations, the row quantities kept as (B, 1) columns, nothing computed for a
    backward pass in the forward one.
    """

    @staticmethod
    def forward(ctx, anchor, positive, negatives, tau_tensor, tau, include_positive, dtype, exclude, reduction,
                checks):
        lohi = _norm_range([x for x, _ in checks]) if checks else ()
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
        lse = z.amax(dim=-1, keepdim=True).sub_(q.amax(dim=-1, keepdim=True).log_())  # log sum_j e^{z_ij}
        rows = _softplus(lse) if include_positive else lse
        # (reduction "none": a copy, not a view, so that the caller may change it in place)
        out = rows.mean() if reduction == "mean" else rows.sum() if reduction == "sum" else rows.view(-1).clone()
        if not _raise_unless_checks_pass(checks, lohi, out):  # rows beyond the range (an error), or a mean
            rows = rows.view(-1)                               # whose sum overflows
            check_finite_loss(rows, dtype, tau)
            out = finite_reduction(out, rows, reduction, dtype, tau, known_finite=False)
        # l only for the standard variant's s = sigmoid(l) (the decoupled output may be l itself,
        # which a caller may then change in place)
        ctx.save_for_backward(anchor, positive, negatives, q, lse if include_positive else None, s_pos, tau_tensor)
        ctx.tau, ctx.include_positive, ctx.dtype, ctx.exclude, ctx.reduction = (tau, include_positive, dtype,
                                                                                exclude, reduction)
        return out

    @staticmethod
    def backward(ctx, grad):
        anchor, positive, negatives, q, lse, s_pos, tau_tensor = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph: a differentiable backward pass
            tau, dtype, include_positive, exclude, reduction = (ctx.tau, ctx.dtype, ctx.include_positive,
                                                                ctx.exclude, ctx.reduction)

            def recompute(a_, p_, n_, t_):
                lse = _fused_embedding_lse(a_, p_, n_, tau if t_ is None else t_, include_positive, dtype, exclude)
                return reduce(lse, reduction)
            return differentiable_backward(recompute, (anchor, positive, negatives, tau_tensor),
                                           ctx.needs_input_grad[:4], grad) + _TAIL6
        device_type = grad.device.type
        if autocast_enabled(device_type):
            with torch.autocast(device_type, enabled=False):
                return _fused_backward(ctx, grad, anchor, positive, negatives, q, lse, s_pos)
        return _fused_backward(ctx, grad, anchor, positive, negatives, q, lse, s_pos)


_TAIL6 = (None,) * 6


def _fused_backward(ctx, g, anchor, positive, negatives, q, lse, s_pos):
    """The first derivatives of :class:`_FusedInfoNCE` (its docstring has the formulas), as the
    ten outputs of its backward pass."""
    need_a, need_p, need_n, need_tau = ctx.needs_input_grad[:4]
    dtype = ctx.dtype
    g = _as(g, dtype)
    if g.dim():  # reduction "none": one upstream gradient per row
        g = g.unsqueeze(-1)
    beta = 1.0 / ctx.tau
    c = -beta / q.shape[0] if ctx.reduction == "mean" else -beta
    if ctx.include_positive:  # -f = (c s) g, (B, 1)
        neg_f = torch.addcmul(_zero(dtype, q.device), torch.sigmoid(lse), g, value=c)
    else:  # every row's weights sum to 1: s = 1
        neg_f = (g * c).expand(q.shape[0], 1)
    shared = negatives.dim() == 2
    a, n = _as(anchor, dtype), _as(negatives, dtype)
    grad_a = grad_p = grad_n = grad_tau = None
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
    return (grad_like(grad_a, anchor), grad_like(grad_p, positive), grad_like(grad_n, negatives), grad_tau,
            None, None, None, None, None, None)


_ZEROS = {}


def _zero(dtype, device):
    """A cached 0-d zero (the ``input`` of ``torch.addcmul``)."""
    key = (dtype, device)
    zero = _ZEROS.get(key)
    if zero is None:
        zero = _ZEROS[key] = torch.zeros((), dtype=dtype, device=device)
    return zero


def _as(x, dtype):
    return x if x.dtype == dtype else x.to(dtype)


def _softplus(x):
    """``log(1 + e^x)``, exact in relative terms for very negative ``x``: torch's softplus is
    ``log1p(exp(x))`` below its threshold and ``x`` above it; at 40 the neglected ``e^{-x}``
    is below float64's rounding of ``x``."""
    return torch.nn.functional.softplus(x, beta=1.0, threshold=40.0)


def _norm_range(tensors):
    """The smallest and largest row norm over ``tensors`` (a 0-d tensor each; no synchronisation;
    call without autograd, e.g. inside a custom function's forward pass)."""
    parts = [torch.linalg.vector_norm(x, dim=-1) for x in tensors]
    parts = [t if t.dim() == 1 else t.reshape(-1) for t in parts]
    common = parts[0].dtype
    if any(t.dtype != common for t in parts):
        parts = [t.to(torch.float64) for t in parts]
    return torch.aminmax(torch.cat(parts) if len(parts) > 1 else parts[0])


def _raise_unless_checks_pass(checks, lohi, out=None) -> bool:
    """Read the norm range ``lohi`` of the tensors in ``checks`` and the sum of ``out`` (or None)
    in one synchronisation; raise as :func:`check_unit_norm` (redone tensor by tensor for the
    message) where a norm check fails. Returns whether ``out`` is finite (True without ``out``)."""
    stats = list(lohi)
    if out is not None:
        stats.append(out.detach() if out.dim() == 0 else out.detach().sum())
    if not stats:
        return True
    values = _read_floats(stats)
    if checks:
        tol = min(unit_norm_tolerance(x.dtype) for x, _ in checks)
        if not (1.0 - tol <= values[0] and values[1] <= 1.0 + tol):  # also False for NaN
            for x, name in checks:
                check_unit_norm(x, name)
    return out is None or math.isfinite(values[-1])


def _read_floats(scalars):
    """The values of 0-d tensors as floats, in one synchronisation: one transfer of their stack
    on an accelerator; ``item()`` each on the CPU, where there is nothing to wait for and a
    stack would be one more tensor operation."""
    if scalars[0].device.type == "cpu":
        return [x.item() for x in scalars]
    common = scalars[0].dtype
    return torch.stack([x if x.dtype == common else x.to(common) for x in scalars]).tolist()


def embedding_loss(anchor, positive, negatives, tau_value, tau_tensor, include_positive, chunk_size, dtype,
                   reduction, unit_norm=(), check_negatives_norm=False, exclude=None):
    """The reduced loss from embeddings whose shapes are validated: the fused path for small
    problems (:class:`_FusedInfoNCE`), the chunked custom autograd function otherwise.

    ``unit_norm``: ``(tensor, name)`` pairs whose rows must have norm 1; ``check_negatives_norm``:
    check the negatives' norms too (chunk by chunk as they are scored, on the chunked path);
    ``exclude``: see :func:`_chunk_masks`. Raises ValueError for rows off the sphere (or
    non-finite entries) and OverflowError where ``1/tau`` or the loss leaves the range of
    ``dtype``."""
    inverse_temperature(tau_value, dtype)
    B, k = anchor.shape[0], negatives.shape[-2]
    if use_fused(B, k, chunk_size):
        checks = tuple(unit_norm) + (((negatives, "negatives"),) if check_negatives_norm else ())
        return _FusedInfoNCE.apply(anchor, positive, negatives, tau_tensor, tau_value, include_positive, dtype,
                                   exclude, reduction, checks)
    if unit_norm:
        with torch.no_grad():
            lohi = _norm_range([x for x, _ in unit_norm])
        _raise_unless_checks_pass(unit_norm, lohi)
    # The weighted sum of negatives that the anchor's (and tau's) gradient needs is accumulated in
    # the forward pass, when a backward pass through them can follow.
    want_pn = torch.is_grad_enabled() and (anchor.requires_grad or tau_tensor is not None)
    lse = _InfoNCEFromEmbeddings.apply(anchor, positive, negatives, tau_tensor, tau_value, include_positive,
                                       chunk_bounds(k, chunk_size), dtype, want_pn, check_negatives_norm, exclude)
    return finite_loss(lse, reduction, dtype, tau_value)


# ---- public functions --------------------------------------------------------------------------

@without_autocast
def info_nce_from_similarities(s_pos, s_neg, tau, *, variant="standard", reduction="mean", chunk_size=None,
                               accumulate=None):
    """InfoNCE from similarities (book eq. ``notation-infonce``).

    Args:
        s_pos: (B,) similarities ``s(x, x+)`` of anchor and positive (cosines, in [-1, 1] for
            embeddings on the sphere; any finite reals are accepted here).
        s_neg: (B, k) similarities ``s(x, x_j-)`` of anchor and its k >= 1 negatives.
        tau: temperature, finite and > 0 (a float, or a 0-d tensor for a learnable temperature);
            ``1/tau`` must not exceed the largest number of the accumulation dtype (float32:
            ``tau >= 2.94e-39``).
        variant: ``"standard"`` (positive in the denominator) or ``"decoupled"`` (left out).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        chunk_size: process negatives in chunks of this many (running log-sum-exp); ``None``
            processes all k at once. Apart from the input ``s_neg`` itself (and its gradient),
            at most ``B x chunk_size`` logits are held, forward and backward.
        accumulate: dtype of the logits and sums: ``None`` (default:
            ``promote(input dtype, float32)``), ``torch.float32`` or ``torch.float64``. Float32
            accumulation is accurate to about ``eps32 (1 + max|z|)`` relative (``z`` the centred
            logits, up to ``2/tau`` for cosines); ``torch.float64`` gives float32 similarities
            the float64 result (to about 1e-15 relative), which the book's numerics guarantee
            (1e-6 relative for every tau in [1e-4, 1e2]) rests on below ``tau`` of about 0.2
            (book: "Input validation and failure modes").
    Returns:
        Loss in nats: a scalar for "mean"/"sum", shape (B,) for "none". Dtype
        ``promote(s_pos.dtype, float32)``, or ``accumulate`` when given (also under
        ``torch.autocast``, which the loss switches off for itself). With all similarities equal
        the standard loss is exactly ``log(k+1)`` (chance level) and the decoupled one
        ``log k``. Differentiable in ``s_pos``, ``s_neg`` and a tensor ``tau``, to any order
        (second derivatives materialise the (B, k) logits).
    Raises:
        TypeError: non-tensor or non-floating inputs. ValueError: tau not in (0, inf); ranks or
        batch sizes disagree (both shapes are named); k < 1; empty batch; NaN/inf entries;
        unknown variant, reduction or accumulate dtype. OverflowError: ``1/tau`` or the loss
        beyond the range of the accumulation dtype (e.g. ``tau = 1e-40`` in float32).
    Source: van den Oord et al. (2018), eq. 4; decoupled variant: Yeh et al. (2022).

    Examples:
        >>> import torch
        >>> s_pos, s_neg = torch.tensor([0.2]), torch.tensor([[0.2, 0.2, 0.2]])
        >>> round(float(info_nce_from_similarities(s_pos, s_neg, 0.1)), 6)  # log(k + 1), k = 3
        1.386294
        >>> round(float(info_nce_from_similarities(s_pos, s_neg, 0.1, variant="decoupled")), 6)  # log k
        1.098612
    """
    check_choice(variant, "variant", VARIANTS)
    check_choice(reduction, "reduction", REDUCTIONS)
    chunk_size = check_chunk_size(chunk_size)
    check_float_tensor(s_pos, "s_pos")
    check_float_tensor(s_neg, "s_neg")
    accumulate = check_accumulate(accumulate, s_pos.device)
    if s_pos.dim() != 1:
        raise ValueError(f"s_pos must have shape (B,), got shape {tuple(s_pos.shape)}")
    if s_neg.dim() != 2 or s_neg.shape[0] != s_pos.shape[0]:
        raise ValueError(
            f"s_neg must have shape (B, k) with B = len(s_pos); got s_pos {tuple(s_pos.shape)}, "
            f"s_neg {tuple(s_neg.shape)}"
        )
    if s_pos.shape[0] == 0:
        raise ValueError("empty batch: s_pos has B = 0 rows; InfoNCE needs at least one anchor")
    if s_neg.shape[1] < 1:
        raise ValueError(f"k (number of negatives) must be >= 1, got s_neg of shape {tuple(s_neg.shape)}")
    tau_value, tau_tensor = split_tau(tau)
    dtype = torch.promote_types(torch.promote_types(s_pos.dtype, s_neg.dtype), torch.float32)
    dtype = dtype if accumulate is None else accumulate
    inverse_temperature(tau_value, dtype)
    include_positive = variant == "standard"
    B, k = s_neg.shape
    if use_fused(B, k, chunk_size):
        lse = _fused_similarity_lse(s_pos, s_neg, tau_value if tau_tensor is None else tau_tensor,
                                    include_positive, dtype)
    else:
        lse = _InfoNCEFromSimilarities.apply(s_pos, s_neg, tau_tensor, tau_value, include_positive,
                                             chunk_bounds(k, chunk_size), dtype)
    return finite_loss(lse, reduction, dtype, tau_value)


@without_autocast
def info_nce(anchor, positive, negatives, tau, *, variant="standard", reduction="mean", chunk_size=None,
             require_unit_norm=True, accumulate=None):
    """InfoNCE loss with k negatives (book eq. ``notation-infonce``), from embeddings.

    Args:
        anchor: (B, d) embeddings ``phi(x)`` on the unit sphere.
        positive: (B, d) embeddings ``phi(x+)``.
        negatives: (B, k, d) negatives per anchor, or (k, d) negatives shared by all anchors
            (in-batch or memory-bank practice; across processes, gather them with
            :func:`infonce_book.losses.gather_with_grad`); k >= 1.
        tau: temperature, finite and > 0 (float or 0-d tensor; a tensor that requires grad gets
            its gradient); ``1/tau`` must not exceed the largest number of the accumulation
            dtype (float32: ``tau >= 2.94e-39``).
        variant: ``"standard"`` or ``"decoupled"`` (positive left out of the denominator).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        chunk_size: score negatives in chunks of this many with a running log-sum-exp, so at
            most ``B x chunk_size`` similarities are held at once, in the forward and in the
            backward pass (which recomputes them; ``None``: all k at once). Each chunk is one
            matrix multiply; on a CPU a chunk of ``B x chunk_size`` about 1 MB (so
            ``chunk_size`` near ``2**18 / B``) keeps it in cache. When one chunk holds all k
            and ``B k <= 2^16``, a fused path is taken (one matrix multiply and a softmax; it
            keeps the (B, k) softmax, 2^16 entries at most, for the backward pass).
        require_unit_norm: check that all rows have norm 1 (the theory lives on the sphere);
            the negatives are checked chunk by chunk as they are scored, which also proves their
            entries finite.
        accumulate: dtype of the similarities, logits and sums: ``None`` (default:
            ``promote(input dtype, float32)``), ``torch.float32`` or ``torch.float64``
            (float32 embeddings scored in float64: exact to about 1e-15 relative, about twice
            the time on a CPU). Float32 accumulation is accurate to about ``eps32 (1 + 2/tau)``
            relative (loss; gradients normwise), and its gradients lose about ``eps32 sqrt(k)``
            more at large k; the book's guarantee of 1e-6 relative to float64 for every tau in
            [1e-4, 1e2] and k up to 10^6 holds with ``accumulate=torch.float64`` (needed below
            tau of about 0.2, and for the gradients at k beyond about 10^5; book: "Input
            validation and failure modes").
    Returns:
        Loss in nats: scalar for "mean"/"sum", (B,) for "none"; dtype ``accumulate`` (default
        ``promote(dtype, float32)``, also under ``torch.autocast``, which the loss switches off
        for itself). Differentiable in the three embeddings and a tensor ``tau``, to any order;
        first derivatives of the chunked path keep only the inputs and a few (B,) and (B, d)
        tensors; a backward pass with ``create_graph=True`` (second derivatives) materialises
        the (B, k) logits.
    Raises:
        TypeError: non-tensor or integer inputs. ValueError: tau not in (0, inf); shapes disagree
        (names both shapes); k < 1; empty batch; NaN/inf entries; rows not of unit norm;
        unknown variant, reduction or accumulate dtype. OverflowError: ``1/tau`` or the loss
        beyond the range of the accumulation dtype.
    Source: van den Oord et al. (2018), eq. 4; decoupled variant: Yeh et al. (2022).

    Examples:
        >>> import torch
        >>> x = torch.nn.functional.normalize(torch.tensor([[1.0, 2.0]]), dim=-1)
        >>> round(float(info_nce(x, x, torch.cat([x, x]), 0.5)), 6)  # all similarities equal: log(k + 1)
        1.098612
    """
    check_choice(variant, "variant", VARIANTS)
    check_choice(reduction, "reduction", REDUCTIONS)
    chunk_size = check_chunk_size(chunk_size)
    check_bool(require_unit_norm, "require_unit_norm")
    for name, t in (("anchor", anchor), ("positive", positive), ("negatives", negatives)):
        check_float_tensor(t, name, finite=not require_unit_norm)  # else the norm check covers it
    accumulate = check_accumulate(accumulate, anchor.device)
    if anchor.dim() != 2:
        raise ValueError(f"anchor must have shape (B, d), got shape {tuple(anchor.shape)}")
    if positive.shape != anchor.shape:
        raise ValueError(
            f"positive must have the anchor's shape (B, d); got anchor {tuple(anchor.shape)}, "
            f"positive {tuple(positive.shape)}"
        )
    B, d = anchor.shape
    if B == 0:
        raise ValueError("empty batch: anchor has B = 0 rows; InfoNCE needs at least one anchor")
    if negatives.dim() == 3:
        if negatives.shape[0] != B or negatives.shape[2] != d:
            raise ValueError(
                f"negatives of rank 3 must have shape (B, k, d) = ({B}, k, {d}); got anchor "
                f"{tuple(anchor.shape)}, negatives {tuple(negatives.shape)}"
            )
    elif negatives.dim() == 2:
        if negatives.shape[1] != d:
            raise ValueError(
                f"shared negatives must have shape (k, d) with d = {d}; got anchor "
                f"{tuple(anchor.shape)}, negatives {tuple(negatives.shape)}"
            )
    else:
        raise ValueError(f"negatives must have shape (B, k, d) or (k, d), got shape {tuple(negatives.shape)}")
    k = negatives.shape[-2]
    if k < 1:
        raise ValueError(f"k (number of negatives) must be >= 1, got negatives of shape {tuple(negatives.shape)}")
    tau_value, tau_tensor = split_tau(tau)
    if accumulate is None:
        dtype = torch.promote_types(torch.promote_types(anchor.dtype, positive.dtype), negatives.dtype)
        dtype = torch.promote_types(dtype, torch.float32)
    else:
        dtype = accumulate
    # With require_unit_norm the negatives are checked chunk by chunk as they are scored (a
    # separate pass over a (k, d) matrix costs about as much as scoring it against a small batch).
    unit_norm = ((anchor, "anchor"), (positive, "positive")) if require_unit_norm else ()
    return embedding_loss(anchor, positive, negatives, tau_value, tau_tensor, variant == "standard", chunk_size,
                          dtype, reduction, unit_norm, require_unit_norm)
