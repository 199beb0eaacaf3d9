"""Argument checks shared by the public functions (validate once, at the boundary)."""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

#: The bounds of a confidence level for :func:`check_scalar`: ``check_scalar(level, "level", **CONFIDENCE_LEVEL)``.
CONFIDENCE_LEVEL = {"gt": 0, "lt": 1, "why": "a confidence level"}


def _interval(gt, ge, lt, le) -> str:
    """``(0, inf)``, ``[0, 1)``, ... for the bounds of :func:`check_scalar`."""
    low = f"({gt:g}" if gt is not None else f"[{ge:g}" if ge is not None else "(-inf"
    high = f"{lt:g})" if lt is not None else f"{le:g}]" if le is not None else "inf)"
    return f"{low}, {high}"


def check_scalar(x, name: str, *, gt=None, ge=None, lt=None, le=None, integer: bool = False, why: str = ""):
    """Return ``x`` as a float (an int with ``integer=True``); raise unless it is a number in the
    interval that the bounds give (in the style of scikit-learn's ``check_scalar``).

    Args:
        x: the value to check (a Python or NumPy number; ``bool`` is refused).
        name: the argument's name, used in the message.
        gt, ge: lower bound, strict (``gt``) or not (``ge``); at most one. ``None``: no bound.
        lt, le: upper bound, strict (``lt``) or not (``le``); at most one.
        integer: require an integer (``numbers.Integral``) and return an ``int``; otherwise a
            real number, which must be finite, returned as a ``float``.
        why: what the value means, added to the message in brackets ("a confidence level").
    Returns:
        ``float(x)``, or ``int(x)`` with ``integer=True``.
    Raises:
        TypeError: ``x`` is not a number of the required kind (the message gives the accepted
            range and the value).
        ValueError: ``x`` is NaN, infinite, or outside the range (the message names the argument
            and gives the accepted range and the value).

    Examples:
        >>> check_scalar(0.5, "tau", gt=0)
        0.5
        >>> check_scalar(3, "n_boot", ge=2, integer=True)
        3
        >>> check_scalar(1.5, "level", **CONFIDENCE_LEVEL)
        Traceback (most recent call last):
        ...
        ValueError: level (a confidence level) must be in (0, 1), got level=1.5
    """
    if gt is not None and ge is not None or lt is not None and le is not None:
        raise ValueError("check_scalar: give at most one lower bound (gt or ge) and one upper bound (lt or le)")
    what = f"{name} ({why})" if why else name
    if integer:
        if lt is None and le is None and (gt is not None or ge is not None):
            where = f"> {gt:g}" if gt is not None else f">= {ge:g}"
        else:
            where = f"in {_interval(gt, ge, lt, le)}"
        if isinstance(x, bool) or not isinstance(x, numbers.Integral):
            raise TypeError(f"{what} must be an integer {where}, got {x!r}")
        value = int(x)
        shown = f"{value}"
        where = f"an integer {where}"
    else:
        where = f"in {_interval(gt, ge, lt, le)}"
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise TypeError(f"{what} must be a real number {where}, got {x!r}")
        value = float(x)
        shown = f"{value!r}"
        if not math.isfinite(value):
            raise ValueError(f"{what} must be a finite real number {where}, got {name}={shown}")
    inside = ((gt is None or value > gt) and (ge is None or value >= ge)
              and (lt is None or value < lt) and (le is None or value <= le))
    if not inside:
        raise ValueError(f"{what} must be {where}, got {name}={shown}")
    return value


def check_tau(tau) -> float:
    """Return ``tau`` as a float; raise if it is not a finite number > 0 (a Python number, or a
    one-element floating-point tensor)."""
    if isinstance(tau, torch.Tensor):
        if tau.numel() != 1:
            raise ValueError(f"tau must be a scalar, got a tensor of shape {tuple(tau.shape)}")
        if not torch.is_floating_point(tau):
            raise TypeError(f"tau must be a real number in (0, inf); a tensor tau must be floating-point "
                            f"(it can be learned), got dtype {tau.dtype}")
        tau = tau.item()
    return check_scalar(tau, "tau", gt=0)


def check_k(k, name: str = "k", meaning: str = "number of negatives") -> int:
    """Return ``k`` as an int; raise if it is not an integer >= 1 (an integral float such as
    ``4.0`` is accepted)."""
    if isinstance(k, numbers.Real) and not isinstance(k, (bool, numbers.Integral)):
        if math.isfinite(float(k)) and float(k).is_integer():
            k = int(k)
    return check_scalar(k, name, ge=1, integer=True, why=meaning if name == "k" else "")


def check_seed(seed, name: str = "seed") -> int:
    """Return ``seed`` as an int; raise unless it is an integer >= 0 (TypeError for a
    non-integer, ValueError for a negative one)."""
    return check_scalar(seed, name, ge=0, integer=True)


def check_bool(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {name}={value!r}")
    return value


def check_choice(value, name: str, choices) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {name}={value!r}")
    return value


def check_float_tensor(x, name: str, *, finite: bool = True) -> torch.Tensor:
    """Raise unless ``x`` is a floating-point tensor with only finite entries (the finiteness
    check is skipped with ``finite=False``, for a caller that checks it otherwise)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if finite and x.numel() and not _all_finite(x):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return x


def _all_finite(x: torch.Tensor) -> bool:
    """``isfinite(x).all()`` in one summation pass: a NaN or an infinite entry makes the sum NaN
    or infinite, so a finite sum proves every entry finite; only a sum that is not finite (an
    offending entry, or an overflow of the sum itself) is checked entry by entry."""
    wide = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    if bool(torch.isfinite(x.detach().sum(dtype=wide))):
        return True
    return bool(torch.isfinite(x).all())


def unit_norm_tolerance(dtype: torch.dtype) -> float:
    """Largest accepted ``|norm - 1|`` of a row: 1e-2 for float16/bfloat16, 1e-4 otherwise."""
    return 1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-4


def norm_deviation(x: torch.Tensor) -> torch.Tensor:
    """``max |norm - 1|`` over the rows (last dimension) of ``x``, as a 0-d float32 tensor (NaN or
    infinite where an entry is)."""
    return (torch.linalg.vector_norm(x.detach().float(), dim=-1) - 1.0).abs().max()


def raise_unless_unit_norm(worst: float, x: torch.Tensor, name: str) -> None:
    """Raise the error of :func:`check_unit_norm` for a measured ``worst = max |norm - 1|``."""
    if not math.isfinite(worst) and not _all_finite(x):
        raise ValueError(f"{name} contains NaN or infinite entries")
    tol = unit_norm_tolerance(x.dtype)
    if not worst <= tol:
        raise ValueError(
            f"{name} must have unit-norm rows (embeddings on the sphere S^(d-1)); the largest "
            f"deviation |norm - 1| is {worst:.3g} > {tol:g}. Normalise first, e.g. "
            f"torch.nn.functional.normalize({name}, dim=-1)"
        )


def check_unit_norm(x: torch.Tensor, name: str) -> None:
    """Raise unless every row (last dimension) of ``x`` has Euclidean norm 1.

    The tolerance follows the dtype (:func:`unit_norm_tolerance`, absolute, on the norm). A NaN
    or infinite entry makes its row's norm non-finite: that is reported as such (so a passing
    check also proves every entry finite).
    """
    if x.numel() == 0:
        return
    raise_unless_unit_norm(float(norm_deviation(x)), x, name)


def exp_or_raise(log_value, name: str, tau: float, hint: str = ""):
    """``exp(log_value)`` (a float for a number, an array for an array), or OverflowError naming
    the quantity and tau where float64 cannot hold it (an ``inf`` would say nothing)."""
    if np.ndim(log_value) == 0:
        worst = float(log_value)
        if worst > 709.78:
            raise OverflowError(f"{name} = exp({worst:.6g}) overflows float64 at tau={tau!r}{hint}")
        return math.exp(worst)
    worst = float(np.max(log_value))
    if worst > 709.78:
        raise OverflowError(f"{name} = exp({worst:.6g}) overflows float64 at tau={tau!r}{hint}")
    return np.exp(log_value)
