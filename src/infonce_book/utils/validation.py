"""Argument checks shared by the public functions (validate once, at the boundary)."""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch


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
    if isinstance(tau, bool) or not isinstance(tau, numbers.Real):
        raise TypeError(f"tau must be a real number in (0, inf), got {tau!r}")
    tau = float(tau)
    if not math.isfinite(tau) or tau <= 0.0:
        raise ValueError(f"tau must be in (0, inf) (finite, > 0), got tau={tau!r}")
    return tau


def check_k(k, name: str = "k", meaning: str = "number of negatives") -> int:
    """Return ``k`` as an int; raise if it is not an integer >= 1."""
    what = f"{name} ({meaning})" if name == "k" else name
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        if isinstance(k, numbers.Real) and float(k).is_integer() and math.isfinite(float(k)):
            k = int(k)
        else:
            raise TypeError(f"{what} must be an integer >= 1, got {k!r}")
    k = int(k)
    if k < 1:
        raise ValueError(f"{what} must be an integer >= 1, got {name}={k}")
    return k


def check_positive(value, name: str) -> float:
    """Return ``value`` as a float; raise unless it is a finite real number > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in (0, inf), got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be in (0, inf) (finite, > 0), got {name}={value!r}")
    return value


def check_real(value, name: str) -> float:
    """Return ``value`` as a float; raise unless it is a finite real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a finite real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {name}={value!r}")
    return value


def check_level(level, name: str = "level") -> float:
    """Return a confidence level as a float; raise unless it is in the open interval (0, 1)."""
    if isinstance(level, bool) or not isinstance(level, numbers.Real):
        raise TypeError(f"{name} must be a number in (0, 1) (a confidence level), got {level!r}")
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"{name} must be in (0, 1) (a confidence level), got {name}={level!r}")
    return level


def check_seed(seed, name: str = "seed") -> int:
    """Return ``seed`` as an int; raise unless it is an integer >= 0."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= 0, got {seed!r}")
    if seed < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {name}={int(seed)}")
    return int(seed)


def check_bool(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {name}={value!r}")
    return value


def check_at_least(value, name: str, minimum: int, why: str = "") -> int:
    """Return ``value`` as an int; raise unless it is an integer >= ``minimum`` (``why`` is added
    to the message)."""
    why = f" ({why})" if why else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}{why}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}{why}, got {name}={int(value)}")
    return int(value)


def check_nonneg(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in [0, inf), got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0.0:
        raise ValueError(f"{name} must be in [0, inf) (finite, >= 0), got {name}={value!r}")
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
