"""The InfoNCE loss, in log space (book: notation page, eq. ``notation-infonce``).

For one tuple (anchor ``x``, positive ``x+``, negatives ``x_1- ... x_k-``) with similarities
``s+ = <phi(x), phi(x+)>`` and ``s_j = <phi(x), phi(x_j-)>`` and inverse temperature
``beta = 1/tau``::

    standard  : l_k = -beta s+ + log( e^{beta s+} + sum_j e^{beta s_j} )
    decoupled : l_k = -beta s+ + log(               sum_j e^{beta s_j} )

Both are computed from the *centred logits* ``z_j = beta (s_j - s+)``:
``standard = log(1 + sum_j e^{z_j})`` and ``decoupled = log sum_j e^{z_j}``. Nothing is clamped.
Low-precision inputs (float16, bfloat16) are computed in float32; the result has dtype
``promote(input, float32)`` unless an ``accumulate`` dtype is asked for.

Negatives are processed in chunks of ``chunk_size`` with a running log-sum-exp, so that at no
point more than ``B x chunk_size`` similarities are held, in the forward *and* the backward pass:
:func:`info_nce` and :func:`info_nce_from_similarities` are custom autograd functions that save
their inputs and per-row quantities only (the log-sum-exp, and for :func:`info_nce` the (B, d)
softmax-weighted sum of negatives, accumulated in the forward pass as in an online softmax), and
recompute chunk by chunk the softmax weights ``p_j = e^{z_j - lse}`` that the backward pass
needs for a (B, k)-sized gradient (the gradient of ``l_k`` in ``s_j`` is ``beta p_j``, in
``s+`` it is ``-beta sum_j p_j``, in ``tau`` it is ``-(1/tau) sum_j p_j z_j``).

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

import torch

from ._validation import (check_bool, check_choice, check_float_tensor, check_tau, check_unit_norm,
                          norm_deviation, raise_unless_unit_norm)

VARIANTS = ("standard", "decoupled")
REDUCTIONS = ("mean", "sum", "none")
ACCUMULATE_DTYPES = (torch.float32, torch.float64)


def _tau_value(tau):
    """Validate tau; keep a tensor (for a learnable temperature) or return a float."""
    if isinstance(tau, torch.Tensor):
        check_tau(tau.detach())
        return tau.reshape(())
    return check_tau(tau)


def _reduce(loss: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _centred_logits(s_neg: torch.Tensor, s_pos: torch.Tensor, tau, dtype) -> torch.Tensor:
    """``z = (s_neg - s_pos) / tau`` in ``dtype``.

    The difference and the division are formed in float64 (the difference of two float32
    numbers is exact in float64), then rounded once to ``dtype``: at tau = 1e-4 a float32
    difference alone would put an absolute error of about 1e4 * 6e-8 in every logit.
    """
    wide = torch.float32 if s_neg.device.type == "mps" else torch.float64  # MPS has no float64
    z = (s_neg.to(wide) - s_pos.to(wide).unsqueeze(-1)) / tau
    return z.to(dtype)


class _RunningLogSumExp:
    """Running ``log(c + sum_j e^{z_j})`` over chunks of centred logits ``z`` (shape (B, chunk)).

    ``c = 1`` for the standard variant (the positive's own term, ``e^0``) and ``c = 0`` for the
    decoupled one. The state is a shift ``m`` (detached: the result does not depend on it) and
    ``acc = sum_j e^{z_j - m}``; at the end the standard value is ``m + log1p(expm1(-m) + acc)``,
    exact in relative terms when all ``z_j <= 0`` (then ``m = 0``).
    """

    def __init__(self, include_positive: bool):
        self.include_positive = include_positive
        self.m = None
        self.acc = None

    def update(self, z: torch.Tensor) -> None:
        chunk_max = z.detach().amax(dim=-1)
        if self.include_positive:
            chunk_max = torch.clamp_min(chunk_max, 0.0)  # the shift covers the e^0 term too
        if self.m is None:
            new_m = chunk_max
            self.acc = torch.exp(z - new_m.unsqueeze(-1)).sum(dim=-1)
        else:
            new_m = torch.maximum(self.m, chunk_max)
            self.acc = self.acc * torch.exp(self.m - new_m) + torch.exp(z - new_m.unsqueeze(-1)).sum(dim=-1)
        self.m = new_m

    def value(self) -> torch.Tensor:
        if self.include_positive:
            return self.m + torch.log1p(torch.expm1(-self.m) + self.acc)
        return self.m + torch.log(self.acc)


def info_nce_streaming(s_pos, s_neg_chunks, tau, *, variant="standard", reduction="mean", accumulate=None):
    """InfoNCE from similarities that arrive in chunks of negatives (running log-sum-exp).

    Args:
        s_pos: (B,) similarities of anchor and positive.
        s_neg_chunks: an iterable of (B, m_i) tensors, the similarities of each anchor with the
            next m_i negatives; at least one negative in all. Only one chunk is held at a time.
        tau, variant, reduction, accumulate: as in :func:`info_nce_from_similarities`.
    Returns:
        As :func:`info_nce_from_similarities` over the concatenated chunks (same value).
        Differentiable by plain autograd, which keeps one (B, m_i) tensor per chunk for the
        backward pass (chunks that were consumed cannot be recomputed): for a backward pass that
        holds at most ``B x chunk_size`` similarities, score embeddings with
        :func:`info_nce` and ``chunk_size``. Without gradients only one chunk is held.
    Raises:
        TypeError: non-tensor, non-floating or non-iterable inputs. ValueError: tau not in
        (0, inf); a chunk whose shape is not (B, m); no negatives; NaN/inf entries; unknown
        variant, reduction or accumulate dtype.
    """
    check_choice(variant, "variant", VARIANTS)
    check_choice(reduction, "reduction", REDUCTIONS)
    check_float_tensor(s_pos, "s_pos")
    if s_pos.dim() != 1 or s_pos.shape[0] == 0:
        raise ValueError(f"s_pos must have shape (B,) with B >= 1, got shape {tuple(s_pos.shape)}")
    if isinstance(s_neg_chunks, torch.Tensor) or not hasattr(s_neg_chunks, "__iter__"):
        raise TypeError(f"s_neg_chunks must be an iterable of (B, m) tensors (e.g. a list or a generator), "
                        f"got {type(s_neg_chunks).__name__}")
    tau = _tau_value(tau)
    accumulate = _check_accumulate(accumulate, s_pos.device)
    dtype = torch.promote_types(s_pos.dtype, torch.float32) if accumulate is None else accumulate
    s_pos = s_pos.to(dtype)
    state = _RunningLogSumExp(include_positive=(variant == "standard"))
    k = 0
    for chunk in s_neg_chunks:
        check_float_tensor(chunk, "s_neg chunk")
        if chunk.dim() != 2 or chunk.shape[0] != s_pos.shape[0]:
            raise ValueError(f"each s_neg chunk must have shape (B, m) with B = {s_pos.shape[0]}, "
                             f"got shape {tuple(chunk.shape)}")
        if chunk.shape[1] == 0:
            continue
        k += chunk.shape[1]
        state.update(_centred_logits(chunk, s_pos, tau, dtype))
    if k < 1:
        raise ValueError("k (number of negatives) must be >= 1, got no negatives in s_neg_chunks")
    return _reduce(state.value(), reduction)


def _chunk_bounds(k: int, chunk_size: int | None):
    step = k if chunk_size is None else chunk_size
    return [(lo, min(lo + step, k)) for lo in range(0, k, step)]


def _check_chunk_size(chunk_size):
    if chunk_size is None:
        return None
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be None or an integer >= 1, got chunk_size={chunk_size!r}")
    return chunk_size


def _check_accumulate(accumulate, device):
    if accumulate is None:
        return None
    if accumulate not in ACCUMULATE_DTYPES:
        raise ValueError(f"accumulate must be None, torch.float32 or torch.float64, got accumulate={accumulate!r}")
    if accumulate == torch.float64 and device.type == "mps":
        raise ValueError("accumulate=torch.float64 is not available on the MPS device (it has no float64); "
                         "use accumulate=None or torch.float32")
    return accumulate


class _LogSumExpState:
    """Running ``log(c + sum_j e^{z_j})`` over chunks, without autograd (``c`` as in
    :class:`_RunningLogSumExp`), of centred logits ``z = y - offset`` given as chunks of ``y``
    (``offset``: (B,), or None for ``z = y``). :meth:`add` overwrites the chunk it is given.

    The state is kept in the units of ``y``: a shift ``M`` (the largest ``y`` so far, and at
    least ``offset`` in the standard variant, whose positive has ``z = 0``) and
    ``acc = sum_j e^{y_j - M}``; :meth:`finish` returns ``m = M - offset``."""

    __slots__ = ("include_positive", "offset", "M", "acc")

    def __init__(self, include_positive: bool, offset: torch.Tensor | None = None):
        self.include_positive = include_positive
        self.offset = offset
        self.M = None
        self.acc = None

    def add(self, y: torch.Tensor):
        """Take in a (B, c) chunk. Returns ``(w, alpha)``: ``w`` is ``y`` overwritten by
        ``e^{y_j - M}`` with the new shift ``M``, and ``alpha = e^{M_old - M}`` (None for the
        first chunk) rescales any sum the caller keeps over earlier chunks."""
        chunk_max = y.amax(dim=-1)
        if self.include_positive:
            chunk_max = chunk_max.clamp_min_(0.0) if self.offset is None else torch.maximum(chunk_max, self.offset)
        new_M = chunk_max if self.M is None else torch.maximum(self.M, chunk_max)
        w = y.sub_(new_M.unsqueeze(-1)).exp_()
        term = w.sum(dim=-1)
        alpha = None
        if self.acc is None:
            self.acc = term
        else:
            alpha = torch.exp(self.M - new_M)
            self.acc.mul_(alpha).add_(term)
        self.M = new_M
        return w, alpha

    def finish(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(m, r)`` with ``lse = m + r``: the shift ``m`` (0 or a centred logit) and
        ``r = log(c e^{-m} + sum_j e^{z_j - m})``, kept apart so that the backward pass forms
        ``p_j = e^{(z_j - m) - r}`` without subtracting two large numbers."""
        m = self.M if self.offset is None else self.M - self.offset
        if self.include_positive:
            return m, torch.log1p(torch.expm1(-m) + self.acc)
        return m, torch.log(self.acc)


def _sum_of_weights(lse: torch.Tensor, include_positive: bool) -> torch.Tensor:
    """``sum_j p_j`` over the negatives: ``1 - e^{-lse}`` (standard; the positive has weight
    ``e^{-lse}``) or exactly 1 (decoupled)."""
    if include_positive:
        return -torch.expm1(-lse)
    return torch.ones_like(lse)


def _grad_like(grad, t):
    """A gradient in the dtype of the input ``t`` (low-precision inputs get theirs rounded)."""
    return None if grad is None else grad.to(t.dtype)


class _InfoNCEFromSimilarities(torch.autograd.Function):
    """Per-row ``lse = log(c + sum_j e^{z_j})``, ``z_j = (s_j - s+)/tau``, from similarities.

    Saves ``s_pos``, ``s_neg`` (the inputs) and ``lse = m + r`` as two (B,) tensors; the
    backward pass recomputes the weights chunk by chunk, so autograd holds no ``B x chunk``
    temporaries.
    """

    @staticmethod
    def forward(ctx, s_pos, s_neg, tau_tensor, tau, include_positive, bounds, dtype):
        state = _LogSumExpState(include_positive)
        for lo, hi in bounds:
            state.add(_centred_logits(s_neg[:, lo:hi], s_pos, tau, dtype))
        m, r = state.finish()
        ctx.save_for_backward(s_pos, s_neg, m, r)
        ctx.tau, ctx.include_positive, ctx.bounds, ctx.dtype = tau, include_positive, bounds, dtype
        return m + r

    @staticmethod
    def backward(ctx, grad):
        s_pos, s_neg, m, r = ctx.saved_tensors
        lse = m + r
        need_pos, need_neg, need_tau = ctx.needs_input_grad[:3]
        tau, dtype = ctx.tau, ctx.dtype
        g_beta = grad.to(dtype) / tau
        grad_pos = grad_neg = grad_tau = None
        if need_pos:
            grad_pos = -g_beta * _sum_of_weights(lse, ctx.include_positive)
        if need_neg or need_tau:
            grad_neg = torch.empty_like(s_neg) if need_neg else None
            pz = torch.zeros_like(lse)
            exp_neg_r = torch.exp(-r).unsqueeze(-1)
            for lo, hi in ctx.bounds:
                z = _centred_logits(s_neg[:, lo:hi], s_pos, tau, dtype)
                # p_j = e^{z_j - m} e^{-r}: the exponent stays small (r, up to log(k+1), is not
                # added to it before rounding), so large k costs no accuracy here.
                w = (z - m.unsqueeze(-1)).exp_().mul_(exp_neg_r)
                if need_tau:
                    pz += (w * z).sum(dim=-1)
                if need_neg:
                    grad_neg[:, lo:hi] = w.mul_(g_beta.unsqueeze(-1))
            if need_tau:
                grad_tau = -(grad.to(dtype) * pz).sum() / tau
        return (_grad_like(grad_pos, s_pos), grad_neg, None if grad_tau is None else grad_tau.reshape(()),
                None, None, None, None)


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
    chunk by chunk for it. No ``B x k`` tensor is saved.
    """

    @staticmethod
    def forward(ctx, anchor, positive, negatives, tau_tensor, tau, include_positive, bounds, dtype, want_pn,
                check_norm):
        shared = negatives.dim() == 2
        a_beta = anchor.to(dtype) * (1.0 / tau)
        s_pos_beta = (a_beta * positive.to(dtype)).sum(dim=-1)
        state = _LogSumExpState(include_positive, offset=s_pos_beta)
        buffer = _buffer(a_beta, bounds)
        pn = None
        worst = None  # max |norm - 1| over the negatives seen so far
        for lo, hi in bounds:
            raw = negatives[lo:hi] if shared else negatives[:, lo:hi]
            if check_norm:  # the chunk is then in cache for the matrix multiply
                dev = norm_deviation(raw)
                worst = dev if worst is None else torch.maximum(worst, dev)
            n = raw.to(dtype)
            w, alpha = state.add(_scaled_similarities(buffer, a_beta, n, shared))
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
        ctx.save_for_backward(anchor, positive, negatives, a_beta, s_pos_beta, m, r, pn)
        ctx.tau, ctx.include_positive, ctx.bounds, ctx.dtype = tau, include_positive, bounds, dtype
        return m + r

    @staticmethod
    def backward(ctx, grad):
        anchor, positive, negatives, a_beta, s_pos_beta, m, r, pn = ctx.saved_tensors
        need_a, need_p, need_n, need_tau = ctx.needs_input_grad[:4]
        tau, dtype = ctx.tau, ctx.dtype
        shared = negatives.dim() == 2
        a = anchor.to(dtype)
        g = grad.to(dtype)
        g_beta = g / tau
        sum_w = _sum_of_weights(m + r, ctx.include_positive)
        grad_a = grad_p = grad_n = grad_tau = None
        if need_n:
            # p_ij = e^{-r_i} w_ij with w_ij = e^{z_ij - m_i}: the row factor goes into ga.
            grad_n = torch.empty_like(negatives)
            ga = a * (g_beta * torch.exp(-r)).unsqueeze(-1)
            shift = (s_pos_beta + m).unsqueeze(-1)
            buffer = _buffer(a_beta, ctx.bounds)
            for lo, hi in ctx.bounds:
                n = _chunk(negatives, lo, hi, shared, dtype)
                w = _scaled_similarities(buffer, a_beta, n, shared).sub_(shift).exp_()  # w_ij, (B, c)
                if shared and grad_n.dtype == dtype:
                    torch.mm(w.T, ga, out=grad_n[lo:hi])
                elif shared:
                    grad_n[lo:hi] = w.T @ ga
                else:
                    grad_n[:, lo:hi] = w.unsqueeze(-1) * ga.unsqueeze(1)
        if need_a:
            grad_a = g_beta.unsqueeze(-1) * pn.addcmul(sum_w.unsqueeze(-1), positive.to(dtype), value=-1.0)
        if need_p:
            grad_p = -(g_beta * sum_w).unsqueeze(-1) * a
        if need_tau:
            pz = (a_beta * pn).sum(dim=-1) - sum_w * s_pos_beta
            grad_tau = (-(g * pz).sum() / tau).reshape(())
        return (_grad_like(grad_a, anchor), _grad_like(grad_p, positive), grad_n, grad_tau,
                None, None, None, None, None, None)


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


def _split_tau(tau):
    """``(value, tensor)``: the validated float, and the 0-d tensor to differentiate (or None)."""
    if isinstance(tau, torch.Tensor):
        value = check_tau(tau.detach())
        return value, (tau.reshape(()) if tau.requires_grad else None)
    return check_tau(tau), None


def info_nce_from_similarities(s_pos, s_neg, tau, *, variant="standard", reduction="mean", chunk_size=None,
                               accumulate=None):
    """InfoNCE from similarities (book eq. ``notation-infonce``).

    Args:
        s_pos: (B,) similarities ``s(x, x+)`` of anchor and positive (cosines, in [-1, 1] for
            embeddings on the sphere; any finite reals are accepted here).
        s_neg: (B, k) similarities ``s(x, x_j-)`` of anchor and its k >= 1 negatives.
        tau: temperature, finite and > 0 (a float, or a 0-d tensor for a learnable temperature).
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
        ``promote(s_pos.dtype, float32)``, or ``accumulate`` when given. With all similarities equal the standard loss is
        exactly ``log(k+1)`` (chance level) and the decoupled one ``log k``. Differentiable in
        ``s_pos``, ``s_neg`` and a tensor ``tau`` (first derivatives; no double backward).
    Raises:
        TypeError: non-tensor or non-floating inputs. ValueError: tau not in (0, inf); ranks or
        batch sizes disagree (both shapes are named); k < 1; empty batch; NaN/inf entries;
        unknown variant, reduction or accumulate dtype.
    Source: van den Oord et al. (2018), eq. 4; decoupled variant: Yeh et al. (2022).
    """
    check_choice(variant, "variant", VARIANTS)
    check_choice(reduction, "reduction", REDUCTIONS)
    chunk_size = _check_chunk_size(chunk_size)
    check_float_tensor(s_pos, "s_pos")
    check_float_tensor(s_neg, "s_neg")
    accumulate = _check_accumulate(accumulate, s_pos.device)
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
    tau_value, tau_tensor = _split_tau(tau)
    dtype = torch.promote_types(torch.promote_types(s_pos.dtype, s_neg.dtype), torch.float32)
    dtype = dtype if accumulate is None else accumulate
    bounds = _chunk_bounds(s_neg.shape[1], chunk_size)
    lse = _InfoNCEFromSimilarities.apply(s_pos, s_neg, tau_tensor, tau_value, variant == "standard", bounds, dtype)
    return _reduce(lse, reduction)


def info_nce(anchor, positive, negatives, tau, *, variant="standard", reduction="mean", chunk_size=None,
             require_unit_norm=True, accumulate=None):
    """InfoNCE loss with k negatives (book eq. ``notation-infonce``), from embeddings.

    Args:
        anchor: (B, d) embeddings ``phi(x)`` on the unit sphere.
        positive: (B, d) embeddings ``phi(x+)``.
        negatives: (B, k, d) negatives per anchor, or (k, d) negatives shared by all anchors
            (in-batch or memory-bank practice); k >= 1.
        tau: temperature, finite and > 0 (float or 0-d tensor; a tensor that requires grad gets
            its gradient).
        variant: ``"standard"`` or ``"decoupled"`` (positive left out of the denominator).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        chunk_size: score negatives in chunks of this many with a running log-sum-exp, so at
            most ``B x chunk_size`` similarities are held at once, in the forward and in the
            backward pass (which recomputes them; ``None``: all k at once). Each chunk is one
            matrix multiply; on a CPU a chunk of ``B x chunk_size`` about 1 MB (so
            ``chunk_size`` near ``2**18 / B``) keeps it in cache.
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
        ``promote(dtype, float32)``). Differentiable in the three embeddings and a tensor
        ``tau`` (first derivatives; no double backward). Autograd saves only the inputs and one
        ``(B,)`` tensor.
    Raises:
        TypeError: non-tensor or integer inputs. ValueError: tau not in (0, inf); shapes disagree
        (names both shapes); k < 1; empty batch; NaN/inf entries; rows not of unit norm;
        unknown variant, reduction or accumulate dtype.
    Source: van den Oord et al. (2018), eq. 4; decoupled variant: Yeh et al. (2022).
    """
    check_choice(variant, "variant", VARIANTS)
    check_choice(reduction, "reduction", REDUCTIONS)
    chunk_size = _check_chunk_size(chunk_size)
    check_bool(require_unit_norm, "require_unit_norm")
    for name, t in (("anchor", anchor), ("positive", positive), ("negatives", negatives)):
        check_float_tensor(t, name, finite=not require_unit_norm)  # else the norm check covers it
    accumulate = _check_accumulate(accumulate, anchor.device)
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
    if require_unit_norm:
        # The negatives are checked chunk by chunk as they are scored (a separate pass over a
        # (k, d) matrix costs about as much as scoring it against a small batch).
        check_unit_norm(anchor, "anchor")
        check_unit_norm(positive, "positive")
    tau_value, tau_tensor = _split_tau(tau)
    if accumulate is None:
        dtype = torch.promote_types(torch.promote_types(anchor.dtype, positive.dtype), negatives.dtype)
        dtype = torch.promote_types(dtype, torch.float32)
    else:
        dtype = accumulate
    # The weighted sum of negatives that the anchor's (and tau's) gradient needs is accumulated in
    # the forward pass, when a backward pass through them can follow.
    want_pn = torch.is_grad_enabled() and (anchor.requires_grad or tau_tensor is not None)
    # Under torch.autocast the loss still runs in `dtype` (as autocast runs cross_entropy in
    # float32): autocast would turn its matrix multiplies into bfloat16/float16 ones.
    with torch.autocast(anchor.device.type, enabled=False):
        lse = _InfoNCEFromEmbeddings.apply(anchor, positive, negatives, tau_tensor, tau_value,
                                           variant == "standard", _chunk_bounds(k, chunk_size), dtype,
                                           want_pn, require_unit_norm)
    return _reduce(lse, reduction)
