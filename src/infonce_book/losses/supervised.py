"""Supervised contrastive loss (SupCon, Khosla et al. 2020): several positives per anchor.

The ``2B`` views ``v = (z1_1, ..., z1_B, z2_1, ..., z2_B)`` carry the labels of their pairs. For
view ``i`` the positives ``P(i)`` are the other views with its label (its pair among them, so
``|P(i)| >= 1``), and the denominator runs over every view but itself, ``A(i)``. The published
form chosen is the "outside" average ``L_out`` (eq. 2 of the paper, the one it recommends and
trains with)::

    l_i = -(1/|P(i)|) sum_{p in P(i)} log( e^{s_ip/tau} / sum_{a in A(i)} e^{s_ia/tau} )
        = log sum_{a in A(i)} e^{s_ia/tau} - (1/|P(i)|) sum_{p in P(i)} s_ip / tau

and the loss is the mean of ``l_i`` over the ``2B`` views (``reduction="mean"``). With every label
distinct (one positive per view) it is NT-Xent (:func:`infonce_book.losses.nt_xent`) exactly.
"""

from __future__ import annotations

from typing import Any

import torch

from ..utils.validation import check_bool
from ._common import check_accumulate, check_options, temperature_of, without_autocast
from ._labelled import check_labels, supcon_views
from .in_batch import _validate_pairs
from .modules import _TemperatureLoss

__all__ = ["SupConLoss", "supcon"]


@without_autocast
def supcon(z1: torch.Tensor, z2: torch.Tensor, labels: torch.Tensor, tau: float | torch.Tensor | None = None, *,
           reduction: str = "mean", chunk_size: int | None = None, require_unit_norm: bool = True,
           accumulate: torch.dtype | None = None, gather: bool = False, group: Any = None,
           check_values: bool | None = None, negatives: torch.Tensor | None = None,
           logit_scale: torch.Tensor | None = None) -> torch.Tensor:
    """SupCon's ``L_out`` (module docstring) over the 2B views of B labelled pairs.

    Args:
        z1, z2: (B, d) two views of B examples, on the unit sphere.
        labels: (B,) integer class of each example (both views share it).
        tau: temperature, finite and > 0 (float or 0-d tensor; Khosla et al. train at 0.1), or
            None with ``logit_scale`` (a 0-d tensor ``log(1/tau)``, CLIP's parametrisation, whose
            gradient stays finite wherever it is representable).
        reduction: ``"mean"`` (over the 2B views), ``"sum"`` or ``"none"`` ((2B,)).
        chunk_size: at most this many views scored at a time (row tiles, each recomputed in the
            backward pass: ``chunk_size x 2B`` logits held); None: automatic
            (:func:`infonce_book.losses.info_nce_in_batch`).
        require_unit_norm, accumulate, check_values: as in :func:`infonce_book.losses.nt_xent`.
        gather: score the views of every process of ``group`` (``torch.distributed``), labels
            gathered alike; every process must call it alike.
        negatives: extra hard negatives beside the in-batch views, (k, d) shared or (B, k, d) per
            example (both views of an example score them); in every denominator, never positives.
    Returns:
        Loss in nats, scalar or (2B,); dtype ``promote(input, float32)`` or ``accumulate``.
        All similarities equal: ``log(2B - 1)`` per view. Differentiable in ``z1``, ``z2``,
        ``negatives`` and a tensor ``tau`` or ``logit_scale``.
    Raises:
        TypeError: non-tensor or non-integer labels, non-floating embeddings, no temperature.
        ValueError: shapes (named); labels not (B,); ``B = 0``; rows not of unit norm; tau not in
        (0, inf). OverflowError: ``1/tau`` or the loss beyond the accumulation dtype.
    Source: Khosla et al. (2020), "Supervised contrastive learning", eq. 2 (``L_out``).

    Examples:
        >>> import torch
        >>> z = torch.nn.functional.normalize(torch.ones(3, 2), dim=-1)  # all similarities equal
        >>> round(float(supcon(z, z, torch.tensor([0, 0, 1]), 0.1)), 6)  # log(2B - 1), B = 3
        1.609438
    """
    chunk_size = check_options("standard", reduction, chunk_size)
    check_bool(require_unit_norm, "require_unit_norm")
    check_bool(gather, "gather")
    _validate_pairs(z1, z2, require_unit_norm)
    labels = check_labels(labels, z1.shape[0], z1.device, required=True)
    accumulate = check_accumulate(accumulate, z1.device)
    tau_value, tau_tensor, scale = temperature_of(tau, logit_scale)
    return supcon_views(z1, z2, labels, negatives, tau_value, tau_tensor, scale, reduction=reduction,
                        chunk_size=chunk_size, require_unit_norm=require_unit_norm, accumulate=accumulate,
                        gather=gather, group=group)


class SupConLoss(_TemperatureLoss):
    """:func:`supcon` as a module, with a fixed or learned temperature (as the other loss modules,
    :class:`infonce_book.losses.InBatchInfoNCELoss`).

    Args:
        tau: the temperature (default 0.1, Khosla et al.'s); with ``learn_temperature=True`` the
            initial value of the learned one, held as ``logit_scale = log(1/tau)``.
        learn_temperature, reduction, chunk_size, require_unit_norm, accumulate, gather, group,
            check_values: as in :func:`supcon` and :class:`infonce_book.losses.InfoNCELoss`.
    Shapes (``forward(z1, z2, labels, negatives=None)``): (B, d) each, (B,) integer labels;
    output a scalar or (2B,) in nats.
    Source: Khosla et al. (2020), eq. 2.

    Examples:
        >>> import torch
        >>> z = torch.nn.functional.normalize(torch.ones(3, 2), dim=-1)
        >>> round(float(SupConLoss()(z, z, torch.tensor([0, 0, 1]))), 6)  # log(2B - 1)
        1.609438
    """

    def __init__(self, tau: float = 0.1, *, learn_temperature: bool = False, reduction: str = "mean",
                 chunk_size: int | None = None, require_unit_norm: bool = True,
                 accumulate: torch.dtype | None = None, gather: bool = False, group: Any = None,
                 check_values: bool | None = None) -> None:
        super().__init__(tau, learn_temperature, dict(
            variant="standard", reduction=reduction, chunk_size=chunk_size, require_unit_norm=require_unit_norm,
            accumulate=accumulate, gather=gather, group=group, check_values=check_values))
        del self.options["variant"]

    def forward(self, z1: torch.Tensor, z2: torch.Tensor, labels: torch.Tensor,
                negatives: torch.Tensor | None = None) -> torch.Tensor:
        """SupCon's loss (:func:`supcon`) of two (B, d) views with (B,) integer ``labels`` (and
        optional extra ``negatives``, (k, d) or (B, k, d)): a scalar or (2B,) in nats."""
        return supcon(z1, z2, labels, negatives=negatives, **self.temperature_kwargs(), **self.options)
