"""What the InfoNCE losses share before and after their kernels: the options and their checks
(variant, reduction, chunk size, accumulation dtype, temperature, batch and negatives counts), the
choice of chunks and of the fused path, the reduction with its overflow checks, and the guard
against autocast.

Value checks (``check_values``): the public functions set, for the length of a call, whether
checks that read device values back to the host run (:func:`value_checks`, read by
:func:`values_checked` in the checks of this module and of :mod:`._norm_checks`); they are off for
``meta`` tensors, which have no values.

The kernels live in modules of their own: :mod:`._similarity` (from similarities),
:mod:`._chunked` and :mod:`._fused` (from embeddings, chosen by :mod:`._embedding`), with the
log-sum-exp arithmetic in :mod:`._logsumexp` and the pieces of their backward passes in
:mod:`._backward`.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

import torch

from ..utils.validation import check_bool, check_choice, check_tau
from ._logsumexp import scale_by_temperature
from ._variant import VARIANTS, Variant


def resolve_variant(variant: str) -> Variant:
    """The :class:`._variant.Variant` named by ``variant`` (ValueError naming the choices otherwise):
    the object that the kernels receive and ask what the variant means."""
    check_choice(variant, "variant", VARIANTS)
    return Variant(variant)


REDUCTIONS = ("mean", "sum", "none")
ACCUMULATE_DTYPES = (torch.float32, torch.float64)

P = ParamSpec("P")
R = TypeVar("R")

#: The fused path (the whole (B, k) logit matrix at once) is taken when all negatives fit in one
#: chunk and ``B * k`` is at most this: for small problems the fixed cost per call of the chunked
#: path (its running log-sum-exp and recomputing backward pass) exceeds the work itself.
FUSED_MAX_LOGITS = 2**16


# ---- autocast ----------------------------------------------------------------------------------

def autocast_enabled(device_type: str) -> bool:
    """Whether autocast is on for ``device_type`` ("cpu", "cuda", ...; False for a device type
    without autocast, such as ``meta``)."""
    if device_type == "meta":  # no autocast there (torch raises "unknown device type for autocast")
        return False
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4 has one query per device type
        if device_type == "cpu":
            return torch.is_autocast_cpu_enabled()
        return device_type == "cuda" and torch.is_autocast_enabled()


def autocast_off(device_type: str) -> contextlib.AbstractContextManager[Any]:
    """A context that switches autocast off for ``device_type`` if it is on (else does nothing)."""
    if autocast_enabled(device_type):
        return torch.autocast(device_type, enabled=False)
    return contextlib.nullcontext()


def _device_type(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    for x in itertools.chain(args, kwargs.values()):
        if isinstance(x, torch.Tensor):
            return x.device.type
    return None


def checks_wanted(check_values: object) -> bool:
    """Whether value checks run for ``check_values``: True or False as given; None (the default)
    is True in eager mode and False while ``torch.compile`` traces the call, where every value
    read on the host would break the graph (the compile-friendly default). Anything else: TypeError."""
    if check_values is None:
        return not torch.compiler.is_compiling()
    return check_bool(check_values, "check_values")


def without_autocast(fn: Callable[P, R]) -> Callable[P, R]:
    """Run the loss ``fn`` with autocast switched off for the device of its first tensor argument,
    and value checks as its keyword ``check_values`` asks (:func:`checks_wanted`: by default on in
    eager mode, off under ``torch.compile``; off for ``meta`` tensors).

    Under ``torch.autocast`` the matrix multiplies of the loss would otherwise run in float16 or
    bfloat16 (or fail on mixed dtypes); the loss chooses its own dtypes (module docstring of
    :mod:`infonce_book.losses.explicit`), so float32 inputs give the float32 result."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        device_type = _device_type(args, kwargs)
        checked = checks_wanted(kwargs.get("check_values")) and device_type != "meta"
        with value_checks(checked):
            if device_type is not None and autocast_enabled(device_type):
                with torch.autocast(device_type, enabled=False):
                    return fn(*args, **kwargs)
            return fn(*args, **kwargs)

    return wrapper


# ---- value checks ------------------------------------------------------------------------------

_STATE = threading.local()


def values_checked() -> bool:
    """Whether the current loss call runs the checks that read device values on the host (the
    finiteness of inputs and of the loss, the unit norms, the value of a tensor ``tau``)."""
    return getattr(_STATE, "checked", True)


@contextlib.contextmanager
def value_checks(enabled: bool) -> Iterator[None]:
    """Value checks on or off for the length of the block (per thread; nested blocks restore the
    outer setting)."""
    outer = values_checked()
    _STATE.checked = enabled
    try:
        yield
    finally:
        _STATE.checked = outer


# ---- arguments ---------------------------------------------------------------------------------

def split_tau(tau: float | torch.Tensor) -> tuple[float | None, torch.Tensor | None]:
    """``(value, tensor)``: the validated float, and the 0-d tensor to differentiate (or None).

    Without value checks (:func:`values_checked`) a tensor ``tau`` is not read: ``(None, tau)``
    after its shape and dtype are checked (the caller folds it into the inputs, as in
    :func:`fold_temperature`)."""
    if isinstance(tau, torch.Tensor):
        if not values_checked():
            if tau.numel() != 1 or not torch.is_floating_point(tau):
                check_tau(tau)  # raises, naming the shape or dtype (without reading a value)
            return None, tau.reshape(())
        value = check_tau(tau.detach())
        return value, (tau.reshape(()) if tau.requires_grad else None)
    return check_tau(tau), None


def temperature_of(tau: float | torch.Tensor | None, logit_scale: torch.Tensor | None,
                   ) -> tuple[float | None, torch.Tensor | None, torch.Tensor | None]:
    """``(tau_value, tau_tensor, scale)``: the temperature given as ``tau`` (:func:`split_tau`;
    ``scale`` None) or as CLIP's ``logit_scale = log(1/tau)`` (a 0-d float tensor; then
    ``(None, None, logit_scale)``, its value checked finite with value checks). Exactly one of the
    two must be given (ValueError, TypeError)."""
    if logit_scale is None:
        if tau is None:
            raise TypeError("the temperature is missing: pass tau (a float or 0-d tensor > 0) or logit_scale "
                            "(a 0-d tensor, log(1/tau))")
        return (*split_tau(tau), None)
    if tau is not None:
        raise ValueError(f"pass tau or logit_scale, not both; got tau={tau!r} and a logit_scale")
    if not isinstance(logit_scale, torch.Tensor) or logit_scale.numel() != 1 or not torch.is_floating_point(
            logit_scale):
        raise TypeError(f"logit_scale must be a floating-point tensor with one element (log(1/tau), as CLIP's "
                        f"logit_scale), got {logit_scale!r}")
    if values_checked():
        value = float(logit_scale.detach())
        if not math.isfinite(value):
            raise ValueError(f"logit_scale must be finite (log(1/tau)), got logit_scale={value!r}")
    return None, None, logit_scale.reshape(())


#: The largest ``logit_scale`` folded into the anchors as it is, per accumulation dtype: ``exp`` of
#: it, and twice that (the difference of two logits of unit vectors), are finite. A larger scale
#: is folded as ``exp(cap)`` and the rest, ``stretch = exp(scale - cap)``, is applied to each row's
#: log-sum-exp by the kernels (:func:`._logsumexp.stretched`), so that no logit overflows before
#: the logits are centred (where ``exp(scale)`` itself overflows: inf times 0, inf minus inf).
SCALE_CAPS = {torch.float32: 87.0, torch.float64: 708.0}


def scale_factor(scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``exp(min(scale, cap))`` (``1/tau`` up to the cap of :data:`SCALE_CAPS`) as a 0-d tensor of
    ``dtype`` (:func:`scale_stretch` is the rest); with value checks, OverflowError where
    ``exp(scale)`` exceeds the largest number of ``dtype`` (its value was read by
    :func:`temperature_of`, the factor itself is not read again: an exp of a finite float is
    computed on the host). Below the cap it is ``exp(scale)``, bit for bit, with its gradient."""
    factor = torch.exp(scale.to(dtype).clamp(max=SCALE_CAPS.get(dtype, 87.0)))
    if values_checked():
        value = float(scale.detach())
        big = torch.finfo(dtype).max
        if value > math.log(big):
            hint = "" if dtype == torch.float64 else " or accumulate=torch.float64"
            raise OverflowError(f"logit_scale={value!r} is too large for {dtype}: 1/tau = exp(logit_scale) exceeds "
                                f"its largest number {big:.3g}; clamp the scale (CLIP: at log 100){hint}")
    return factor


def scale_stretch(scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``exp(max(scale - cap, 0))`` as a 0-d tensor of ``dtype``: the part of ``1/tau =
    exp(scale)`` above :func:`scale_factor`'s cap (exactly 1, with a zero gradient, below it),
    which the kernels apply to each row's centred log-sum-exp (:func:`._logsumexp.stretched`).
    Nothing is read on the host: the choice is made on the device.

    Its value is kept finite (at most ``exp(cap + 1)``, reached from a scale of ``2 cap + 1``, where
    every logit past the cap has long overflowed and a stretch of inf would meet a 0), its gradient
    is not cut there: the scale's gradient overflows where the true one does."""
    cap = SCALE_CAPS.get(dtype, 87.0)
    over = torch.relu(scale.to(dtype) - cap)
    over = over - (over - over.clamp(max=cap + 1.0)).detach()  # the value clamped, the gradient 1
    return torch.exp(over)


def fold_scale(x: torch.Tensor, factor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x exp(logit_scale)`` in ``dtype`` (``factor`` from :func:`scale_factor`): the kernels then
    run at temperature 1 on the scaled anchors, and the gradient in the scale,
    ``<grad x', x'>``, is never routed through ``tau = exp(-s)`` (whose own gradient overflows
    where ``1/tau`` nears the top of the range while the scale's gradient is representable)."""
    return x.to(dtype) * factor


def fold_temperature(x: torch.Tensor, tau_tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x / tau`` in ``dtype``, differentiable in both (``tau`` a 0-d tensor not read on the
    host): the kernels then run at temperature 1 on the scaled anchors or similarities, which is
    the same loss (``z_j = <a / tau, n_j> - <a / tau, p>``), rounded differently by about one
    unit in the last place."""
    return scale_by_temperature(x.to(dtype), tau_tensor, divide=True)


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


def check_finite_loss(lse: torch.Tensor, dtype: torch.dtype, tau: float | None) -> None:
    """Raise OverflowError unless every per-row loss is finite (nothing checked, nothing read,
    without value checks: :func:`values_checked`; ``tau``, for the message, is None only then: a
    tensor tau not read).

    The inputs are checked finite and ``1/tau`` representable before, so a loss that is not
    finite means that it (or the logits it is made of) lies beyond the range of ``dtype``: that
    is reported, never returned as inf or NaN."""
    if values_checked() and not bool(torch.isfinite(lse.detach()).all()):
        hint = "a larger tau" if dtype == torch.float64 else "accumulate=torch.float64 or a larger tau"
        raise OverflowError(f"the InfoNCE loss overflows {dtype} at tau={tau!r}: its logits (s_j - s+)/tau reach "
                            f"beyond the largest number {torch.finfo(dtype).max:.3g} (inputs far from the unit "
                            f"sphere, or tau too small); use {hint}")


def check_chunk_size(chunk_size: Any) -> int | None:
    if chunk_size is None:
        return None
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be None or an integer >= 1, got chunk_size={chunk_size!r}")
    return chunk_size


def check_accumulate(accumulate: Any, device: torch.device) -> torch.dtype | None:
    if accumulate is None:
        return None
    if accumulate not in ACCUMULATE_DTYPES:
        raise ValueError(f"accumulate must be None, torch.float32 or torch.float64, got accumulate={accumulate!r}")
    if accumulate == torch.float64 and device.type == "mps":
        raise ValueError("accumulate=torch.float64 is not available on the MPS device (it has no float64); "
                         "use accumulate=None or torch.float32")
    return cast(torch.dtype, accumulate)  # (one of ACCUMULATE_DTYPES)


#: The dtypes of the opt-in low-precision scoring (``score_dtype``).
SCORE_DTYPES = (torch.bfloat16, torch.float16)


def check_score_dtype(score_dtype: Any) -> torch.dtype | None:
    """``score_dtype`` checked: None (the products in the accumulation dtype, the default) or
    torch.bfloat16 / torch.float16 (the similarities' products in that dtype, the log-sum-exp and
    everything after in the accumulation dtype)."""
    if score_dtype is not None and score_dtype not in SCORE_DTYPES:
        raise ValueError(f"score_dtype must be None, torch.bfloat16 or torch.float16, got score_dtype={score_dtype!r}")
    return cast("torch.dtype | None", score_dtype)  # (None or one of SCORE_DTYPES)


def check_options(variant: Any, reduction: Any, chunk_size: Any = None) -> int | None:
    """Check ``variant`` and ``reduction`` (ValueError naming the choices) and ``chunk_size``, in
    this order; returns the chunk size (None or an integer >= 1)."""
    check_choice(variant, "variant", VARIANTS)
    check_choice(reduction, "reduction", REDUCTIONS)
    return check_chunk_size(chunk_size)


def accumulation_dtype(accumulate: torch.dtype | None, *tensors: torch.Tensor) -> torch.dtype:
    """The dtype the loss is computed in: ``accumulate`` when given (checked by
    :func:`check_accumulate`), else ``promote(dtypes of tensors..., float32)``."""
    if accumulate is not None:
        return accumulate
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    return torch.promote_types(dtype, torch.float32)


def check_batch(B: int, name: str) -> None:
    """ValueError for an empty batch (``B = 0`` rows of ``name``): InfoNCE needs an anchor."""
    if B == 0:
        raise ValueError(f"empty batch: {name} has B = 0 rows; InfoNCE needs at least one anchor")


def check_negatives(k: int, name: str, shape: Sequence[int]) -> None:
    """ValueError unless ``k >= 1`` (``name`` and ``shape``: the tensor that holds the negatives)."""
    if k < 1:
        raise ValueError(f"k (number of negatives) must be >= 1, got {name} of shape {tuple(shape)}")


def chunk_bounds(k: int, chunk_size: int | None) -> list[tuple[int, int]]:
    step = k if chunk_size is None else chunk_size
    return [(lo, min(lo + step, k)) for lo in range(0, k, step)]


def use_fused(B: int, k: int, chunk_size: int | None) -> bool:
    """Whether the fused path is taken: one chunk holds all ``k`` and ``B * k`` is small."""
    return (chunk_size is None or k <= chunk_size) and B * k <= FUSED_MAX_LOGITS


class _ZeroLoss(torch.autograd.Function):
    """``rows`` zeros of ``dtype``, with a zero gradient (exactly) for every input."""

    @staticmethod
    def forward(ctx: Any, rows: int, dtype: torch.dtype, *inputs: torch.Tensor) -> torch.Tensor:
        ctx.specs = [(x.shape, x.dtype, x.device) for x in inputs]
        return torch.zeros(rows, dtype=dtype, device=inputs[0].device)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        needs = ctx.needs_input_grad[2:]
        return (None, None, *(torch.zeros(shape, dtype=dt, device=dev) if need else None
                              for (shape, dt, dev), need in zip(ctx.specs, needs)))

    if TYPE_CHECKING:  # (torch leaves Function.apply unannotated: its signature here, for the callers)
        @classmethod
        def apply(cls, rows: int, dtype: torch.dtype, *inputs: torch.Tensor) -> torch.Tensor: ...


def zero_loss(rows: int, dtype: torch.dtype, reduction: str, *inputs: Any) -> torch.Tensor:
    """The loss of ``rows`` rows that have no negative in the standard variant: each row's
    ``log(e^0) = 0`` exactly, with a zero gradient in every input (tensors among ``inputs``;
    the first one gives the device), reduced."""
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    return reduce(_ZeroLoss.apply(rows, dtype, *tensors), reduction)


def reduce(loss: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def finite_loss(lse: torch.Tensor, reduction: str, dtype: torch.dtype, tau: float | None) -> torch.Tensor:
    """The reduced loss of the per-row losses ``lse``, raising OverflowError unless it is
    finite: rows beyond the range of ``dtype``, or a sum beyond it. A mean whose sum overflows
    although every row is finite is formed from the rows divided by B first (its true value is
    within the range)."""
    check_finite_loss(lse, dtype, tau)
    out = reduce(lse, reduction)
    return out if reduction == "none" else finite_reduction(out, lse, reduction, dtype, tau)


def finite_reduction(out: torch.Tensor, lse: torch.Tensor, reduction: str, dtype: torch.dtype, tau: float | None, *,
                     known_finite: bool | None = None) -> torch.Tensor:
    """``out`` (the mean or sum of finite rows ``lse``) if it is finite (``known_finite``: that
    is already known, or None to check); otherwise the mean formed without overflow, or an
    OverflowError for a sum; ``out`` unread without value checks: then a mean that is not finite is
    replaced, on the device, by the mean formed from the rows divided by B first)."""
    if not values_checked():
        if reduction == "mean" and out.dim() == 0:
            return torch.where(torch.isfinite(out), out, (lse / lse.shape[0]).sum())
        return out
    if known_finite if known_finite is not None else bool(torch.isfinite(out.detach())):
        return out
    if reduction == "mean":
        out = (lse / lse.shape[0]).sum()
    check_finite_loss(out, dtype, tau)
    return out
