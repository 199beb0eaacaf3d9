"""The InfoNCE losses as ``torch.nn`` modules, to hold in a model: :class:`InfoNCELoss` (explicit
negatives), :class:`InBatchInfoNCELoss` (CLIP's in-batch loss, both directions by default) and
:class:`NTXentLoss` (SimCLR's). Each calls its function (:func:`infonce_book.losses.info_nce`,
:func:`~infonce_book.losses.info_nce_in_batch`, :func:`~infonce_book.losses.nt_xent`) with the
options given at construction, so the values, gradients, errors and numerics are the functions'.

Temperature: fixed (``tau``, a float), or learnable with ``learn_temperature=True``, parametrised
as CLIP and open_clip do: the parameter ``logit_scale = log(1/tau)`` (so ``1/tau =
logit_scale.exp()``), initialised at ``log(1/tau)`` (CLIP: ``tau = 0.07``), and
``tau = exp(-logit_scale)`` passed to the function. Nothing clamps it; CLIP clamps the scale at
100 (``tau >= 0.01``) after each optimiser step, which reads, with a loss module ``criterion``::

    optimizer.step()
    with torch.no_grad():
        criterion.logit_scale.clamp_(0, math.log(100))

(open_clip clamps the same way). The parameter is part of ``state_dict`` and of
``criterion.parameters()``: give the optimiser ``[*model.parameters(), *criterion.parameters()]``.
With ``check_values=True`` (default) a learnable temperature's value is read on the host at every
call (it is checked finite and > 0, and the kernels take it as a number): on a GPU that is one
synchronisation per step; ``check_values=False`` reads nothing (module docstring of
:mod:`infonce_book.losses.explicit`, "Value checks").
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from ..utils.validation import check_bool, check_tau
from ._common import ACCUMULATE_DTYPES, check_options, check_score_dtype
from .explicit import info_nce
from .in_batch import info_nce_in_batch, nt_xent

__all__ = ["InBatchInfoNCELoss", "InfoNCELoss", "NTXentLoss"]

#: CLIP's initial temperature (Radford et al. 2021, section 2.5: ``logit_scale`` starts at log(1/0.07)).
CLIP_TAU = 0.07


class _TemperatureLoss(nn.Module):
    """What the three modules share: the temperature (fixed or learnable) and the options."""

    def __init__(self, tau: float, learn_temperature: bool, options: dict[str, Any]) -> None:
        super().__init__()
        tau = check_tau(tau)
        check_bool(learn_temperature, "learn_temperature")
        check_options(options["variant"], options["reduction"], options["chunk_size"])
        for flag in ("require_unit_norm", "check_values", "symmetric", "gather"):
            if flag in options and not (flag == "check_values" and options[flag] is None):
                check_bool(options[flag], flag)
        if options["accumulate"] is not None and options["accumulate"] not in ACCUMULATE_DTYPES:
            raise ValueError(f"accumulate must be None, torch.float32 or torch.float64, got "
                             f"accumulate={options['accumulate']!r}")
        self.options = options
        if learn_temperature:
            self.logit_scale = nn.Parameter(torch.tensor(math.log(1.0 / tau)))
        else:
            self.register_parameter("logit_scale", None)
            self.tau = tau

    @property
    def temperature(self) -> float | torch.Tensor:
        """The temperature passed to the loss: the float ``tau``, or ``exp(-logit_scale)`` (a 0-d
        tensor with gradient) when it is learned."""
        if self.logit_scale is None:
            return self.tau
        return torch.exp(-self.logit_scale)

    def temperature_kwargs(self) -> dict[str, Any]:
        """The temperature keyword for the loss function: ``{"tau": tau}`` when fixed, else
        ``{"logit_scale": logit_scale}`` (the functions fold ``exp(logit_scale)`` into the anchors,
        so the scale's gradient is never routed through ``tau = exp(-logit_scale)``: it stays finite
        wherever it is representable, e.g. at a scale of 46 to 88 in float32)."""
        if self.logit_scale is None:
            return {"tau": self.tau}
        return {"logit_scale": self.logit_scale}

    def extra_repr(self) -> str:
        tau = "learned (logit_scale)" if self.logit_scale is not None else repr(self.tau)
        shown = {k: v for k, v in self.options.items() if k != "group"}
        return ", ".join([f"tau={tau}", *(f"{k}={v!r}" for k, v in shown.items())])


class InfoNCELoss(_TemperatureLoss):
    """InfoNCE with explicit negatives, :func:`infonce_book.losses.info_nce` as a module.

    Args:
        tau: the temperature, finite and > 0 (default CLIP's 0.07); with
            ``learn_temperature=True`` the initial value of the learned one.
        learn_temperature: hold ``logit_scale = log(1/tau)`` as a parameter (module docstring:
            parametrisation, clamping).
        variant, reduction, chunk_size, require_unit_norm, accumulate, check_values: as in
            :func:`infonce_book.losses.info_nce` (checked here, ValueError/TypeError naming the
            option).
    Shapes (``forward(anchor, positive, negatives)``): anchor and positive (B, d); negatives
    (B, k, d) or (k, d) shared; output a scalar ("mean", "sum") or (B,) ("none"), in nats.
    Source: van den Oord et al. (2018), eq. 4; the parametrisation: Radford et al. (2021).

    Examples:
        >>> import torch
        >>> criterion = InfoNCELoss(0.5)
        >>> x = torch.nn.functional.normalize(torch.tensor([[1.0, 2.0]]), dim=-1)
        >>> round(float(criterion(x, x, torch.cat([x, x]))), 6)  # all similarities equal: log(k + 1)
        1.098612
    """

    def __init__(self, tau: float = CLIP_TAU, *, learn_temperature: bool = False, variant: str = "standard",
                 reduction: str = "mean", chunk_size: int | None = None, require_unit_norm: bool = True,
                 accumulate: torch.dtype | None = None, check_values: bool | None = None) -> None:
        super().__init__(tau, learn_temperature, dict(
            variant=variant, reduction=reduction, chunk_size=chunk_size, require_unit_norm=require_unit_norm,
            accumulate=accumulate, check_values=check_values))

    def forward(self, anchor: torch.Tensor, positive: torch.Tensor, negatives: torch.Tensor) -> torch.Tensor:
        """InfoNCE (:func:`infonce_book.losses.info_nce`) of (B, d) anchors and positives against
        ``negatives`` ((B, k, d) or (k, d) shared), all on the unit sphere, at this module's
        temperature: a scalar ("mean", "sum") or (B,) ("none"), in nats."""
        return info_nce(anchor, positive, negatives, **self.temperature_kwargs(), **self.options)


class InBatchInfoNCELoss(_TemperatureLoss):
    """CLIP's in-batch loss, :func:`infonce_book.losses.info_nce_in_batch` as a module; both
    directions averaged by default (``symmetric=True``), as CLIP trains (open_clip's ``ClipLoss``).

    Args:
        tau, learn_temperature: as in :class:`InfoNCELoss` (CLIP learns it:
            ``learn_temperature=True``).
        symmetric: average the rows (``z1`` anchors) and the columns (``z2`` anchors); default True.
        variant, reduction, chunk_size, require_unit_norm, accumulate, gather, group,
            check_values, score_dtype: as in :func:`infonce_book.losses.info_nce_in_batch`.
    Shapes (``forward(z1, z2)``): (B, d) each, on the unit sphere; output a scalar or (B,) in
    nats. ``B = 1`` (the last, partial batch of an epoch): 0 with zero gradient (standard).
    Source: Radford et al. (2021), Figure 3.

    Examples:
        >>> import torch
        >>> criterion = InBatchInfoNCELoss(learn_temperature=True)  # logit_scale = log(1/0.07)
        >>> z = torch.nn.functional.normalize(torch.ones(4, 3), dim=-1)  # all similarities equal
        >>> round(criterion(z, z).item(), 6)  # log B
        1.386294
    """

    def __init__(self, tau: float = CLIP_TAU, *, learn_temperature: bool = False, symmetric: bool = True,
                 variant: str = "standard", reduction: str = "mean", chunk_size: int | None = None,
                 require_unit_norm: bool = True, accumulate: torch.dtype | None = None, gather: bool = False,
                 group: Any = None, check_values: bool | None = None, score_dtype: torch.dtype | None = None) -> None:
        super().__init__(tau, learn_temperature, dict(
            symmetric=symmetric, variant=variant, reduction=reduction, chunk_size=chunk_size,
            require_unit_norm=require_unit_norm, accumulate=accumulate, gather=gather, group=group,
            check_values=check_values, score_dtype=check_score_dtype(score_dtype)))

    def forward(self, z1: torch.Tensor, z2: torch.Tensor, labels: torch.Tensor | None = None,
                negatives: torch.Tensor | None = None) -> torch.Tensor:
        """CLIP's in-batch loss (:func:`infonce_book.losses.info_nce_in_batch`) of the (B, d) pairs
        ``(z1_i, z2_i)`` on the unit sphere, both directions averaged unless the module was built
        with ``symmetric=False``; ``labels`` ((B,) integers): pairs of one label are never each
        other's negatives; ``negatives``: extra hard negatives for the ``z1`` anchors ((k, d) or
        (B, k, d)). Returns a scalar or (B,) in nats."""
        return info_nce_in_batch(z1, z2, **self.temperature_kwargs(), labels=labels, negatives=negatives,
                                 **self.options)


class NTXentLoss(_TemperatureLoss):
    """SimCLR's NT-Xent over the 2B views, :func:`infonce_book.losses.nt_xent` as a module.

    Args:
        tau, learn_temperature: as in :class:`InfoNCELoss`, default 0.5 (SimCLR fixes it, at 0.1
            to 1 depending on the batch size; lightly's default is 0.5).
        variant, reduction, chunk_size, require_unit_norm, accumulate, gather, group,
            check_values, score_dtype: as in :func:`infonce_book.losses.nt_xent`.
    Shapes (``forward(z1, z2)``): (B, d) each, the two views, on the unit sphere; output a
    scalar or (2B,) in nats. ``B = 1``: 0 with zero gradient (standard).
    Source: Chen et al. (2020), eq. 1.

    Examples:
        >>> import torch
        >>> z = torch.nn.functional.normalize(torch.ones(3, 2), dim=-1)  # all similarities equal
        >>> round(float(NTXentLoss()(z, z)), 6)  # log(2B - 1), B = 3
        1.609438
    """

    def __init__(self, tau: float = 0.5, *, learn_temperature: bool = False, variant: str = "standard",
                 reduction: str = "mean", chunk_size: int | None = None, require_unit_norm: bool = True,
                 accumulate: torch.dtype | None = None, gather: bool = False, group: Any = None,
                 check_values: bool | None = None, score_dtype: torch.dtype | None = None) -> None:
        super().__init__(tau, learn_temperature, dict(
            variant=variant, reduction=reduction, chunk_size=chunk_size, require_unit_norm=require_unit_norm,
            accumulate=accumulate, gather=gather, group=group, check_values=check_values,
            score_dtype=check_score_dtype(score_dtype)))

    def forward(self, z1: torch.Tensor, z2: torch.Tensor, labels: torch.Tensor | None = None,
                negatives: torch.Tensor | None = None) -> torch.Tensor:
        """SimCLR's NT-Xent (:func:`infonce_book.losses.nt_xent`) over the 2B views of the (B, d)
        pairs ``(z1_i, z2_i)`` on the unit sphere; ``labels`` ((B,) integers): views of one label
        are never each other's negatives; ``negatives``: extra hard negatives ((k, d) or
        (B, k, d)). Returns a scalar or (2B,) in nats."""
        return nt_xent(z1, z2, **self.temperature_kwargs(), labels=labels, negatives=negatives, **self.options)
