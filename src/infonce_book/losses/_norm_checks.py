"""Unit-norm checks of the embedding kernels that cost no extra synchronisation: the smallest and
largest row norms as 0-d tensors, read together with the loss (:func:`raise_unless_checks_pass`),
and a failing check redone tensor by tensor for its message
(:func:`check_unit_norm`, whose tolerance accepts rows normalised in a lower precision).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ..utils.validation import norm_deviation
from ._common import values_checked

__all__ = ["UNIT_NORM_TOLERANCE", "check_unit_norm", "norm_range", "raise_unless_checks_pass", "raise_unless_unit_norm"]

#: Largest accepted ``|norm - 1|`` of an embedding row, whatever its dtype: rows normalised in
#: float16 or bfloat16 (e.g. under ``torch.autocast``) and then cast up with ``.float()`` keep
#: their low-precision rounding (``|norm - 1|`` up to about ``2^-8 = 3.9e-3`` for bfloat16) and are
#: on the sphere as far as their precision goes; an embedding that was never normalised is far
#: outside this band. (The loss scores the rows as given either way.)
UNIT_NORM_TOLERANCE = 1e-2


def check_unit_norm(x: torch.Tensor, name: str) -> None:
    """Raise ValueError unless every row (last dimension) of ``x`` has norm 1 to within
    :data:`UNIT_NORM_TOLERANCE` (a NaN or infinite entry is reported as such)."""
    if x.numel() == 0:
        return
    raise_unless_unit_norm(float(norm_deviation(x)), x, name)


def raise_unless_unit_norm(worst: float, x: torch.Tensor, name: str) -> None:
    """Raise the error of :func:`check_unit_norm` for a measured ``worst = max |norm - 1|`` of ``x``."""
    if not math.isfinite(worst) and not bool(torch.isfinite(x.detach()).all()):
        raise ValueError(f"{name} contains NaN or infinite entries")
    if not worst <= UNIT_NORM_TOLERANCE:
        raise ValueError(
            f"{name} must have unit-norm rows (embeddings on the sphere S^(d-1)); the largest deviation "
            f"|norm - 1| is {worst:.3g} > {UNIT_NORM_TOLERANCE:g}. Normalise first, e.g. "
            f"torch.nn.functional.normalize({name}, dim=-1) (rows normalised in float16 or bfloat16 and "
            f"cast up are accepted), or pass require_unit_norm=False to score the rows as given"
        )


def norm_range(tensors: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The smallest and largest row norm over ``tensors`` (a 0-d tensor each; no synchronisation;
    call without autograd, e.g. inside a custom function's forward pass)."""
    parts = [torch.linalg.vector_norm(x, dim=-1) for x in tensors]
    parts = [t if t.dim() == 1 else t.reshape(-1) for t in parts]
    common = parts[0].dtype
    if any(t.dtype != common for t in parts):
        parts = [t.to(torch.float64) for t in parts]
    return torch.aminmax(torch.cat(parts) if len(parts) > 1 else parts[0])


def raise_unless_checks_pass(checks: Sequence[tuple[torch.Tensor, str]], lohi: Sequence[torch.Tensor],
                             out: torch.Tensor | None = None) -> bool:
    """Read the norm range ``lohi`` of the tensors in ``checks`` and the sum of ``out`` (or None)
    in one synchronisation; raise as :func:`check_unit_norm` (redone tensor by tensor for the
    message) where a norm check fails. Returns whether ``out`` is finite (True without ``out``).
    Without value checks (:func:`._common.values_checked`) nothing is read: True."""
    if not values_checked():
        return True
    stats = list(lohi)
    if out is not None:
        stats.append(out.detach() if out.dim() == 0 else out.detach().sum())
    if not stats:
        return True
    values = _read_floats(stats)
    if checks:
        tol = UNIT_NORM_TOLERANCE
        if not (1.0 - tol <= values[0] and values[1] <= 1.0 + tol):  # also False for NaN
            for x, name in checks:
                check_unit_norm(x, name)
    return out is None or math.isfinite(values[-1])


def _read_floats(scalars: Sequence[torch.Tensor]) -> list[float]:
    """The values of 0-d tensors as floats, in one synchronisation: one transfer of their stack
    on an accelerator; ``item()`` each on the CPU, where there is nothing to wait for and a
    stack would be one more tensor operation."""
    if scalars[0].device.type == "cpu":
        return [x.item() for x in scalars]
    common = scalars[0].dtype
    return torch.stack([x if x.dtype == common else x.to(common) for x in scalars]).tolist()
