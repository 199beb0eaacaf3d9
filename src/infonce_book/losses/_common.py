"""Machinery shared by the InfoNCE losses: argument handling, the running log-sum-exp (with and
without autograd), the fused path for small problems, and the guards against autocast and
overflow.

The loss of one row is ``lse = log(c + sum_j e^{z_j})`` over centred logits ``z_j`` (``c = 1``
standard: the positive's own term ``e^0``; ``c = 0`` decoupled). It is always kept as a shift
``m`` (0 or a logit) and a remainder ``r = log(c e^{-m} + sum_j e^{z_j - m})``, never as a sum
of exponentials that could overflow.
"""

from __future__ import annotations

import contextlib
import functools
import itertools

import torch

from ..utils.validation import check_tau

VARIANTS = ("standard", "decoupled")
REDUCTIONS = ("mean", "sum", "none")
ACCUMULATE_DTYPES = (torch.float32, torch.float64)

#: The fused path (the whole (B, k) logit matrix at once) is taken when all negatives fit in one
#: chunk and ``B * k`` is at most this: for small problems the fixed cost per call of the chunked
#: path (its running log-sum-exp and recomputing backward pass) exceeds the work itself.
FUSED_MAX_LOGITS = 2**16

_NEG_INF = float("-inf")


# ---- autocast ----------------------------------------------------------------------------------

def autocast_enabled(device_type: str) -> bool:
    """Whether autocast is on for ``device_type`` ("cpu", "cuda", ...)."""
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4 has one query per device type
        if device_type == "cpu":
            return torch.is_autocast_cpu_enabled()
        return device_type == "cuda" and torch.is_autocast_enabled()


def autocast_off(device_type: str):
    """A context that switches autocast off for ``device_type`` if it is on (else does nothing)."""
    if autocast_enabled(device_type):
        return torch.autocast(device_type, enabled=False)
    return contextlib.nullcontext()


def _device_type(args, kwargs):
    for x in itertools.chain(args, kwargs.values()):
        if isinstance(x, torch.Tensor):
            return x.device.type
    return None


def without_autocast(fn):
    """Run the loss ``fn`` with autocast switched off for the device of its first tensor argument.

    Under ``torch.autocast`` the matrix multiplies of the loss would otherwise run in float16 or
    bfloat16 (or fail on mixed dtypes); the loss chooses its own dtypes (module docstring of
    :mod:`infonce_book.losses.explicit`), so float32 inputs give the float32 result."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        device_type = _device_type(args, kwargs)
        if device_type is not None and autocast_enabled(device_type):
            with torch.autocast(device_type, enabled=False):
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)

    return wrapper


# ---- arguments ---------------------------------------------------------------------------------

def split_tau(tau):
    """``(value, tensor)``: the validated float, and the 0-d tensor to differentiate (or None)."""
    if isinstance(tau, torch.Tensor):
        value = check_tau(tau.detach())
        return value, (tau.reshape(()) if tau.requires_grad else None)
    return check_tau(tau), None


def inverse_temperature(tau: float, dtype: torch.dtype) -> float:
    """``beta = 1/tau``; raise OverflowError if it exceeds the largest number of ``dtype`` (then
    no logit ``s/tau`` of a nonzero similarity can be represented)."""
    beta = 1.0 / tau
    big = torch.finfo(dtype).max
    if not beta <= big:
        hint = "" if dtype == torch.float64 else " or accumulate=torch.float64"
        raise OverflowError(f"tau={tau!r} is too small for {dtype}: 1/tau = {beta:.3g} exceeds its largest number "
                            f"{big:.3g}; use a larger tau{hint}")
    return beta


def check_finite_loss(lse: torch.Tensor, dtype: torch.dtype, tau: float) -> None:
    """Raise OverflowError unless every per-row loss is finite.

    The inputs are checked finite and ``1/tau`` representable before, so a loss that is not
    finite means that it (or the logits it is made of) lies beyond the range of ``dtype``: that
    is reported, never returned as inf or NaN."""
    if not bool(torch.isfinite(lse.detach()).all()):
        hint = "a larger tau" if dtype == torch.float64 else "accumulate=torch.float64 or a larger tau"
        raise OverflowError(f"the InfoNCE loss overflows {dtype} at tau={tau!r}: its logits (s_j - s+)/tau reach "
                            f"beyond the largest number {torch.finfo(dtype).max:.3g} (inputs far from the unit "
                            f"sphere, or tau too small); use {hint}")


def check_chunk_size(chunk_size):
    if chunk_size is None:
        return None
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be None or an integer >= 1, got chunk_size={chunk_size!r}")
    return chunk_size


def check_accumulate(accumulate, device):
    if accumulate is None:
        return None
    if accumulate not in ACCUMULATE_DTYPES:
        raise ValueError(f"accumulate must be None, torch.float32 or torch.float64, got accumulate={accumulate!r}")
    if accumulate == torch.float64 and device.type == "mps":
        raise ValueError("accumulate=torch.float64 is not available on the MPS device (it has no float64); "
                         "use accumulate=None or torch.float32")
    return accumulate


def chunk_bounds(k: int, chunk_size: int | None):
    step = k if chunk_size is None else chunk_size
    return [(lo, min(lo + step, k)) for lo in range(0, k, step)]


def use_fused(B: int, k: int, chunk_size: int | None) -> bool:
    """Whether the fused path is taken: one chunk holds all ``k`` and ``B * k`` is small."""
    return (chunk_size is None or k <= chunk_size) and B * k <= FUSED_MAX_LOGITS


def reduce(loss: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def finite_loss(lse: torch.Tensor, reduction: str, dtype: torch.dtype, tau: float) -> torch.Tensor:
    """The reduced loss of the per-row losses ``lse``, raising OverflowError unless it is
    finite: rows beyond the range of ``dtype``, or a sum beyond it. A mean whose sum overflows
    although every row is finite is formed from the rows divided by B first (its true value is
    within the range)."""
    check_finite_loss(lse, dtype, tau)
    out = reduce(lse, reduction)
    return out if reduction == "none" else finite_reduction(out, lse, reduction, dtype, tau)


def finite_reduction(out, lse, reduction, dtype, tau, *, known_finite=None):
    """``out`` (the mean or sum of finite rows ``lse``) if it is finite (``known_finite``: that
    is already known, or None to check); otherwise the mean formed without overflow, or an
    OverflowError for a sum."""
    if known_finite if known_finite is not None else bool(torch.isfinite(out.detach())):
        return out
    if reduction == "mean":
        out = (lse / lse.shape[0]).sum()
    check_finite_loss(out, dtype, tau)
    return out


# ---- temperature scaling with a NaN-free gradient ----------------------------------------------

class _ScaleByTemperature(torch.autograd.Function):
    """``x / tau`` (``divide``) or ``x * (1/tau)``, for a tensor ``tau`` that needs a gradient.

    Plain autograd would form the gradient in ``tau`` elementwise as ``-g x / tau^2``: at small
    tau ``x / tau^2`` overflows where ``g = 0`` (a softmax weight that underflowed), giving
    ``0 * inf = NaN``. Here it is ``-((sum g x) beta) beta`` with ``beta = 1/tau`` finite (checked
    by :func:`inverse_temperature`): 0 where the true value is 0, inf only where it overflows.
    The backward pass is made of differentiable operations, so second derivatives are right."""

    @staticmethod
    def forward(ctx, x, tau, divide):
        ctx.save_for_backward(x, tau)
        return x / tau if divide else x * tau.reciprocal()

    @staticmethod
    def backward(ctx, g):
        x, tau = ctx.saved_tensors
        beta = tau.reciprocal()
        grad_x = g * beta if ctx.needs_input_grad[0] else None
        grad_tau = -(((g * x).sum() * beta) * beta) if ctx.needs_input_grad[1] else None
        return grad_x, grad_tau, None


def scale_by_temperature(x: torch.Tensor, tau, *, divide: bool) -> torch.Tensor:
    """``x / tau`` or ``x * (1/tau)`` for a float or a 0-d tensor ``tau`` (cast to ``x.dtype``)."""
    if isinstance(tau, torch.Tensor):
        return _ScaleByTemperature.apply(x, tau.to(x.dtype), divide)
    return x / tau if divide else x * (1.0 / tau)


def centred_logits(s_neg: torch.Tensor, s_pos: torch.Tensor, tau, dtype) -> torch.Tensor:
    """``z = (s_neg - s_pos) / tau`` in ``dtype`` (``tau`` a float or a 0-d tensor).

    The difference and the division are formed in float64 (the difference of two float32
    numbers is exact in float64), then rounded once to ``dtype``: at tau = 1e-4 a float32
    difference alone would put an absolute error of about 1e4 * 6e-8 in every logit.
    """
    wide = torch.float32 if s_neg.device.type == "mps" else torch.float64  # MPS has no float64
    z = scale_by_temperature(s_neg.to(wide) - s_pos.to(wide).unsqueeze(-1), tau, divide=True)
    return z.to(dtype)


# ---- log-sum-exp: one differentiable block, a differentiable running one, a plain running one --

def lse_plain(y: torch.Tensor, offset: torch.Tensor | None, include_positive: bool) -> torch.Tensor:
    """``log(c + sum_j e^{y_j - offset})`` over the last dimension with plain torch operations
    (``offset``: (B,), or None for 0; ``-inf`` entries of ``y`` are left out).

    The shift ``M`` (the largest ``y``, and at least ``offset`` in the standard variant) is
    detached: the value does not depend on it, so autograd differentiates it to any order. The
    standard value is ``m + log1p(expm1(-m) + sum_j e^{y_j - M})`` with ``m = M - offset >= 0``:
    exact in relative terms when the positive is far ahead (the loss is then tiny).
    """
    M = y.detach().amax(dim=-1)
    if include_positive:
        M = M.clamp_min(0.0) if offset is None else torch.maximum(M, offset.detach())
    else:
        M = torch.where(M == _NEG_INF, 0.0, M)  # a row with no finite logit: its sum is 0
    acc = torch.exp(y - M.unsqueeze(-1)).sum(dim=-1)
    m = M if offset is None else M - offset
    if include_positive:
        return m + torch.log1p(torch.expm1(-m) + acc)
    return m + torch.log(acc)


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

    def __init__(self, include_positive: bool):
        self.include_positive = include_positive
        self.m = None
        self.acc = None

    def update(self, z: torch.Tensor) -> None:
        chunk_max = z.detach().amax(dim=-1)
        if self.include_positive:
            chunk_max = torch.clamp_min(chunk_max, 0.0)  # the shift covers the e^0 term too
        new_m = chunk_max if self.m is None else torch.maximum(self.m, chunk_max)
        shift = new_m if self.include_positive else torch.where(new_m == _NEG_INF, 0.0, new_m)
        term = torch.exp(z - shift.unsqueeze(-1)).sum(dim=-1)
        if self.acc is None:
            self.acc = term
        else:
            old = self.m if self.include_positive else torch.where(self.m == _NEG_INF, 0.0, self.m)
            alpha = torch.exp(old - shift)
            if not self.include_positive:
                alpha = torch.where(self.m == _NEG_INF, 0.0, alpha)  # acc was 0 there
            self.acc = self.acc * alpha + term
        self.m = new_m

    def value(self) -> torch.Tensor:
        if self.include_positive:
            return self.m + torch.log1p(torch.expm1(-self.m) + self.acc)
        shift = torch.where(self.m == _NEG_INF, 0.0, self.m)
        return shift + torch.log(self.acc)


class LogSumExpState:
    """Running ``log(c + sum_j e^{z_j})`` over chunks, without autograd (``c`` as in
    :class:`RunningLogSumExp`), of centred logits ``z = y - offset`` given as chunks of ``y``
    (``offset``: (B,), or None for ``z = y``). :meth:`add` overwrites the chunk it is given.

    The state is kept in the units of ``y``: a shift ``M`` (the largest ``y`` so far, and at
    least ``offset`` in the standard variant, whose positive has ``z = 0``) and
    ``acc = sum_j e^{y_j - M}``; :meth:`finish` returns ``m = M - offset``. In the decoupled
    variant a row with no finite ``y`` yet (all left out, or underflowed) has ``M = -inf``; its
    shift is then 0 and its ``acc`` 0, and the rescaling factor of earlier sums is 0."""

    __slots__ = ("include_positive", "offset", "M", "acc")

    def __init__(self, include_positive: bool, offset: torch.Tensor | None = None):
        self.include_positive = include_positive
        self.offset = offset
        self.M = None
        self.acc = None

    def _shift(self, M):
        return M if self.include_positive else torch.where(M == _NEG_INF, 0.0, M)

    def add(self, y: torch.Tensor):
        """Take in a (B, c) chunk. Returns ``(w, alpha)``: ``w`` is ``y`` overwritten by
        ``e^{y_j - M}`` with the new shift ``M``, and ``alpha = e^{M_old - M}`` (None for the
        first chunk) rescales any sum the caller keeps over earlier chunks."""
        chunk_max = y.amax(dim=-1)
        if self.include_positive:
            chunk_max = chunk_max.clamp_min_(0.0) if self.offset is None else torch.maximum(chunk_max, self.offset)
        new_M = chunk_max if self.M is None else torch.maximum(self.M, chunk_max)
        shift = self._shift(new_M)
        w = y.sub_(shift.unsqueeze(-1)).exp_()
        term = w.sum(dim=-1)
        alpha = None
        if self.acc is None:
            self.acc = term
        else:
            alpha = torch.exp(self._shift(self.M) - shift)
            if not self.include_positive:
                alpha = torch.where(self.M == _NEG_INF, 0.0, alpha)
            self.acc.mul_(alpha).add_(term)
        self.M = new_M
        return w, alpha

    def finish(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(m, r)`` with ``lse = m + r``: the shift ``m`` (0 or a centred logit) and
        ``r = log(c e^{-m} + sum_j e^{z_j - m})``, kept apart so that the backward pass forms
        ``p_j = e^{(z_j - m) - r}`` without subtracting two large numbers."""
        shift = self._shift(self.M)
        m = shift if self.offset is None else shift - self.offset
        if self.include_positive:
            return m, torch.log1p(torch.expm1(-m) + self.acc)
        return m, torch.log(self.acc)


def sum_of_weights(lse: torch.Tensor, include_positive: bool) -> torch.Tensor:
    """``sum_j p_j`` over the negatives: ``1 - e^{-lse}`` (standard; the positive has weight
    ``e^{-lse}``) or exactly 1 (decoupled)."""
    if include_positive:
        return -torch.expm1(-lse)
    return torch.ones_like(lse)


def grad_like(grad, t):
    """A gradient in the dtype of the input ``t`` (low-precision inputs get theirs rounded)."""
    return None if grad is None else grad.to(t.dtype)


def row_factor(grad: torch.Tensor, beta: float):
    """``(f, late)`` for a backward pass: ``f = grad * beta`` per row and ``late = 1``, or, where
    that product overflows, ``f = grad`` and ``late = beta`` to be applied to the finished
    gradients (so that a weight that underflowed to 0 never meets an infinite factor)."""
    f = grad * beta
    if bool(torch.isfinite(f).all()):
        return f, 1.0
    return grad, beta


def differentiable_backward(recompute, inputs, needs, grad):
    """First derivatives as a differentiable graph, for a double backward (``create_graph``).

    ``recompute(*inputs)`` is the per-row loss written with plain torch operations (it
    materialises the logits); its vector-Jacobian product with ``grad`` is taken with
    ``create_graph=True``, so autograd can differentiate the result again. ``needs``: which of
    ``inputs`` need a gradient; returns one gradient (or None) per input."""
    with torch.enable_grad():
        # One alias per input: the same tensor may fill two slots (the in-batch forms pass the
        # candidates as positives and as negatives), and each slot needs its own gradient.
        inputs = [x.view_as(x) if need else x for x, need in zip(inputs, needs)]
        wanted = [x for x, need in zip(inputs, needs) if need]
        out = recompute(*inputs)
        grads = torch.autograd.grad(out, wanted, grad, create_graph=True, allow_unused=True)
    it = iter(grads)
    return tuple(next(it) if need else None for need in needs)

