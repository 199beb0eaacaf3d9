"""Centred logits and their log-sum-exp, the arithmetic of every InfoNCE kernel.

The loss of one row is ``lse = log(c + sum_j e^{z_j})`` over centred logits ``z_j`` (``c = 1``
standard: the positive's own term ``e^0``; ``c = 0`` decoupled). It is always kept as a shift
``m`` (0 or a logit) and a remainder ``r = log(c e^{-m} + sum_j e^{z_j - m})``, never as a sum
of exponentials that could overflow. Three forms: one block with plain torch operations
(:func:`lse_plain`, and the per-row losses from similarities and from embeddings built on it,
differentiable to any order), a running one differentiable by autograd
(:class:`RunningLogSumExp`) and a running one without autograd for the custom functions
(:class:`LogSumExpState`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from ._variant import Variant

__all__ = ["LogSumExpState", "RunningLogSumExp", "centred_logits", "embedding_lse_plain", "lse_plain",
           "scale_by_temperature", "similarity_lse_plain", "stretched"]

_NEG_INF = float("-inf")


# ---- temperature scaling with a NaN-free gradient ----------------------------------------------

class _ScaleByTemperature(torch.autograd.Function):
    """``x / tau`` (``divide``) or ``x * (1/tau)``, for a tensor ``tau`` that needs a gradient.

    Plain autograd would form the gradient in ``tau`` elementwise as ``-g x / tau^2``: at small
    tau ``x / tau^2`` overflows where ``g = 0`` (a softmax weight that underflowed), giving
    ``0 * inf = NaN``. Here it is ``-((sum g x) beta) beta`` with ``beta = 1/tau`` finite (checked
    by :func:`._common.inverse_temperature`): 0 where the true value is 0, inf only where it overflows.
    The backward pass is made of differentiable operations, so second derivatives are right."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, tau: torch.Tensor, divide: bool) -> torch.Tensor:
        ctx.save_for_backward(x, tau)
        return x / tau if divide else x * tau.reciprocal()

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None, None]:
        x, tau = ctx.saved_tensors
        beta = tau.reciprocal()
        grad_x = g * beta if ctx.needs_input_grad[0] else None
        grad_tau = -(((g * x).sum() * beta) * beta) if ctx.needs_input_grad[1] else None
        return grad_x, grad_tau, None

    if TYPE_CHECKING:  # (torch leaves Function.apply unannotated: its signature here, for the callers)
        @classmethod
        def apply(cls, x: torch.Tensor, tau: torch.Tensor, divide: bool) -> torch.Tensor: ...


def scale_by_temperature(x: torch.Tensor, tau: float | torch.Tensor, *, divide: bool) -> torch.Tensor:
    """``x / tau`` or ``x * (1/tau)`` for a float or a 0-d tensor ``tau`` (cast to ``x.dtype``)."""
    if isinstance(tau, torch.Tensor):
        return _ScaleByTemperature.apply(x, tau.to(x.dtype), divide)
    return x / tau if divide else x * (1.0 / tau)


def centred_logits(s_neg: torch.Tensor, s_pos: torch.Tensor, tau: float | torch.Tensor,
                   dtype: torch.dtype) -> torch.Tensor:
    """``z = (s_neg - s_pos) / tau`` in ``dtype`` (``tau`` a float or a 0-d tensor).

    The difference and the division are formed in float64 (the difference of two float32
    numbers is exact in float64), then rounded once to ``dtype``: at tau = 1e-4 a float32
    difference alone would put an absolute error of about 1e4 * 6e-8 in every logit.
    """
    wide = torch.float32 if s_neg.device.type == "mps" else torch.float64  # MPS has no float64
    z = scale_by_temperature(s_neg.to(wide) - s_pos.to(wide).unsqueeze(-1), tau, divide=True)
    return z.to(dtype)


# ---- log-sum-exp: one differentiable block, a differentiable running one, a plain running one --

def lse_plain(y: torch.Tensor, offset: torch.Tensor | None, variant: Variant,
              stretch: torch.Tensor | None = None) -> torch.Tensor:
    """``log(c + sum_j e^{y_j - offset})`` over the last dimension with plain torch operations
    (``offset``: (B,), or None for 0; ``-inf`` entries of ``y`` are left out).

    The shift ``M`` (the largest ``y``, and at least ``offset`` in the standard variant) is
    detached: the value does not depend on it, so autograd differentiates it to any order. The
    standard value is ``m + log1p(expm1(-m) + sum_j e^{y_j - M})`` with ``m = M - offset >= 0``:
    exact in relative terms when the positive is far ahead (the loss is then tiny). ``stretch``:
    the value at that many times the scale of ``y`` (:func:`stretched`).
    """
    M = y.detach().amax(dim=-1)
    # (a row with no finite logit in the decoupled variant: shift 0, its sum is 0)
    M = variant.shift_of(variant.floor_shift(M, None if offset is None else offset.detach()))
    acc = torch.exp(y - M.unsqueeze(-1)).sum(dim=-1)
    m = M if offset is None else M - offset
    out = m + variant.log_total(m, acc)
    if stretch is None:
        return out
    top = y.amax(dim=-1) if offset is None else y.amax(dim=-1) - offset  # differentiable: its gradient
    return stretched(out, variant.stretch_top(top), stretch)  # is the argmax's


def finite_shift(m: torch.Tensor) -> torch.Tensor:
    """``m`` with its infinite entries (rows without a finite logit) set to 0."""
    return torch.where(torch.isfinite(m), m, 0.0)


def stretched(r: torch.Tensor, m: torch.Tensor, stretch: torch.Tensor | None) -> torch.Tensor:
    """A row's centred log-sum-exp ``r`` at ``stretch`` times the scale it was computed at
    (:func:`._common.scale_stretch`; None or exactly 1: ``r`` itself, bit for bit).

    ``m`` is the row's largest centred logit (for the standard variant's ``log(1 + sum_j e^{z_j})``,
    at least 0). Past the cap every logit is ``e^87`` times a similarity difference (float32), so
    the terms below the largest have underflowed to 0 and ``r = m + log(count of the largest)``;
    at ``stretch`` times the scale that is ``r + (stretch - 1) m``: exact up to the underflowed
    terms, inf where the true value overflows, ``log(count)`` for rows whose largest logits tie
    with the positive. Infinite ``m`` (a row without a logit) leaves ``r`` as it is. Plain torch
    operations: differentiable (the custom kernels form the same gradients themselves)."""
    if stretch is None:
        return r
    return torch.where(stretch == 1, r, r + (stretch - 1) * finite_shift(m))


def safe_reduce(x: torch.Tensor, reduction: str) -> torch.Tensor:
    """``x`` reduced, a mean formed from the entries divided by their count first (no overflow of
    the sum where the mean is representable)."""
    if reduction == "mean":
        return (x / x.numel()).sum()
    return x.sum() if reduction == "sum" else x


def combine_stretched(out: torch.Tensor, combine: Callable[[torch.Tensor], torch.Tensor], base: torch.Tensor,
                      top: torch.Tensor, stretch: torch.Tensor) -> torch.Tensor:
    """``out`` (a linear ``combine`` -- a mean, a sum, the halves of two directions -- of decoupled
    rows :func:`stretched` from ``base`` with largest logits ``top``) where it is not NaN; where it is
    (rows that overflow to +inf and -inf: inf - inf), the same combination of the parts,
    ``combine(base) + (stretch - 1) combine(top)``, which overflows only where the true value does
    (``combine`` must not overflow where its result is representable: :func:`safe_reduce`).
    Differentiable; ``out`` bit for bit wherever it is a number."""
    alt = combine(base) + (stretch - 1) * combine(top)
    return torch.where(torch.isnan(out), alt, out)


def similarity_lse_plain(s_pos: torch.Tensor, s_neg: torch.Tensor, tau: float | torch.Tensor, variant: Variant,
                         dtype: torch.dtype) -> torch.Tensor:
    """Per-row loss from similarities ((B,) and (B, k)) with plain torch operations (any order of
    derivatives); ``tau`` a float or a 0-d tensor."""
    return lse_plain(centred_logits(s_neg, s_pos, tau, dtype), None, variant)


def embedding_lse_plain(anchor: torch.Tensor, positive: torch.Tensor, negatives: torch.Tensor,
                        tau: float | torch.Tensor, variant: Variant, dtype: torch.dtype,
                        exclude: torch.Tensor | None = None, stretch: torch.Tensor | None = None) -> torch.Tensor:
    """Per-row loss from embeddings with plain torch operations over the (B, k) logits (any order
    of derivatives); ``tau`` a float or a 0-d tensor; ``exclude``: (B, e) column indices into
    shared negatives left out of each row (their logit ``-inf``), or None."""
    a_beta = scale_by_temperature(anchor.to(dtype), tau, divide=False)
    s_pos_beta = (a_beta * positive.to(dtype)).sum(dim=-1)
    n = negatives.to(dtype)
    y = a_beta @ n.T if n.dim() == 2 else torch.bmm(a_beta.unsqueeze(1), n.transpose(1, 2)).squeeze(1)
    if exclude is not None:
        y = y.scatter(1, exclude, _NEG_INF)
    return lse_plain(y, s_pos_beta, variant, stretch)


class RunningLogSumExp:
    """Running ``log(c + sum_j e^{z_j})`` over chunks of centred logits ``z`` (shape (B, chunk)),
    differentiable by plain autograd.

    ``c = 1`` for the standard variant (the positive's own term, ``e^0``) and ``c = 0`` for the
    decoupled one. The state is a shift ``m`` (detached: the result does not depend on it) and
    ``acc = sum_j e^{z_j - m}``; at the end the standard value is ``m + log1p(expm1(-m) + acc)``,
    exact in relative terms when all ``z_j <= 0`` (then ``m = 0``). A row whose logits so far
    are all ``-inf`` (underflowed) keeps ``acc = 0`` with a finite shift, so no ``inf - inf``
    arises when a finite logit comes later.
    """

    def __init__(self, variant: Variant) -> None:
        self.variant = variant
        self.m: torch.Tensor | None = None
        self.acc: torch.Tensor | None = None

    def update(self, z: torch.Tensor) -> None:
        v = self.variant
        chunk_max = v.floor_shift(z.detach().amax(dim=-1))  # (standard: the shift covers e^0 too)
        new_m = chunk_max if self.m is None else torch.maximum(self.m, chunk_max)
        shift = v.shift_of(new_m)
        term = torch.exp(z - shift.unsqueeze(-1)).sum(dim=-1)
        if self.acc is None:
            self.acc = term
        else:
            assert self.m is not None  # (set with acc)
            alpha = v.rescale(torch.exp(v.shift_of(self.m) - shift), self.m)  # (0 where acc was 0)
            self.acc = self.acc * alpha + term
        self.m = new_m

    def value(self) -> torch.Tensor:
        assert self.m is not None and self.acc is not None, "no chunk added"
        shift = self.variant.shift_of(self.m)
        return shift + self.variant.log_total(shift, self.acc)


class LogSumExpState:
    """Running ``log(c + sum_j e^{z_j})`` over chunks, without autograd (``c`` as in
    :class:`RunningLogSumExp`), of centred logits ``z = y - offset`` given as chunks of ``y``
    (``offset``: (B,), or None for ``z = y``). :meth:`add` overwrites the chunk it is given.

    The state is kept in the units of ``y``: a shift ``M`` (the largest ``y`` so far, and at
    least ``offset`` in the standard variant, whose positive has ``z = 0``) and
    ``acc = sum_j e^{y_j - M}``; :meth:`finish` returns ``m = M - offset``. In the decoupled
    variant a row with no finite ``y`` yet (all left out, or underflowed) has ``M = -inf``; its
    shift is then 0 and its ``acc`` 0, and the rescaling factor of earlier sums is 0."""

    __slots__ = ("variant", "offset", "M", "acc")

    def __init__(self, variant: Variant, offset: torch.Tensor | None = None) -> None:
        self.variant = variant
        self.offset = offset
        self.M: torch.Tensor | None = None
        self.acc: torch.Tensor | None = None

    def add(self, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Take in a (B, c) chunk. Returns ``(w, alpha)``: ``w`` is ``y`` overwritten by
        ``e^{y_j - M}`` with the new shift ``M``, and ``alpha = e^{M_old - M}`` (None for the
        first chunk) rescales any sum the caller keeps over earlier chunks."""
        v = self.variant
        chunk_max = v.floor_shift(y.amax(dim=-1), self.offset)
        new_M = chunk_max if self.M is None else torch.maximum(self.M, chunk_max)
        shift = v.shift_of(new_M)
        w = y.sub_(shift.unsqueeze(-1)).exp_()
        term = w.sum(dim=-1)
        alpha: torch.Tensor | None = None
        if self.acc is None:
            self.acc = term
        else:
            assert self.M is not None  # (set with acc)
            alpha = v.rescale(torch.exp(v.shift_of(self.M) - shift), self.M)
            self.acc.mul_(alpha).add_(term)
        self.M = new_M
        return w, alpha

    def finish(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(m, r)`` with ``lse = m + r``: the shift ``m`` (0 or a centred logit) and
        ``r = log(c e^{-m} + sum_j e^{z_j - m})``, kept apart so that the backward pass forms
        ``p_j = e^{(z_j - m) - r}`` without subtracting two large numbers."""
        assert self.M is not None and self.acc is not None, "no chunk added"
        shift = self.variant.shift_of(self.M)
        m = shift if self.offset is None else shift - self.offset
        return m, self.variant.log_total(m, self.acc)
