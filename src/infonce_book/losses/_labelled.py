"""The in-batch forms with ``labels`` and/or extra ``negatives`` (and SupCon's setup): argument
checks, the gathering of candidates and labels across processes, the temperature, and the call of
the row-tiled kernel :mod:`._masked`.
"""

from __future__ import annotations

from typing import Any, Literal, overload

import torch

from ..utils.validation import check_float_tensor
from ._common import (
    accumulation_dtype,
    finite_loss,
    fold_scale,
    fold_temperature,
    inverse_temperature,
    scale_factor,
    scale_stretch,
    values_checked,
)
from ._gather import all_gather_with_grad, local_offset
from ._logsumexp import combine_stretched, safe_reduce
from ._masked import single_positive_rows, supcon_rows, symmetric_label_rows
from ._norm_checks import check_unit_norm
from ._pairwise import pairwise_tile
from ._variant import Variant

__all__ = ["check_extra_negatives", "check_labels", "gather_labels", "masked_in_batch", "scaled_anchors"]


@overload
def check_labels(labels: Any, B: int, device: torch.device, required: Literal[True]) -> torch.Tensor: ...
@overload
def check_labels(labels: Any, B: int, device: torch.device, required: bool = False) -> torch.Tensor | None: ...
def check_labels(labels: Any, B: int, device: torch.device, required: bool = False) -> torch.Tensor | None:
    """``labels`` checked: None (unless ``required``) or an integer tensor of shape (B,) on ``device``."""
    if labels is None:
        if required:
            raise TypeError("labels is required: an integer tensor of shape (B,), one class per pair")
        return None
    if not isinstance(labels, torch.Tensor) or labels.dtype.is_floating_point or labels.dtype.is_complex \
            or labels.dtype == torch.bool:
        raise TypeError(f"labels must be an integer tensor of shape (B,), got "
                        f"{labels.dtype if isinstance(labels, torch.Tensor) else type(labels).__name__}")
    if labels.shape != (B,):
        raise ValueError(f"labels must have shape (B,) = ({B},), one per pair; got shape {tuple(labels.shape)}")
    if labels.device != device:
        raise ValueError(f"labels must be on the embeddings' device {device}, got {labels.device}")
    return labels


def check_extra_negatives(negatives: Any, B: int, d: int) -> torch.Tensor | None:
    """``negatives`` checked: None, (k, d) shared or (B, k, d) per pair, floating point."""
    if negatives is None:
        return None
    check_float_tensor(negatives, "negatives", finite=False)
    n: torch.Tensor = negatives  # (a floating-point tensor: checked)
    if n.dim() == 2 and n.shape[1] == d:
        return n
    if n.dim() == 3 and n.shape[0] == B and n.shape[2] == d:
        return n
    raise ValueError(f"negatives (extra hard negatives) must have shape (k, d) = (k, {d}), shared by every "
                     f"anchor, or (B, k, d) = ({B}, k, {d}), one set per pair; got shape {tuple(n.shape)}")


def gather_labels(labels: torch.Tensor, group: Any) -> torch.Tensor:
    """``cat`` of every process's ``labels`` (no gradient; same shapes on every process)."""
    import torch.distributed as dist  # optional: some torch builds lack it (as in ._gather)

    parts = [torch.empty_like(labels) for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, labels.contiguous(), group=group)
    return torch.cat(parts)


def scaled_anchors(x: torch.Tensor, tau_value: float | None, tau_tensor: torch.Tensor | None,
                   scale: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor:
    """``x / tau`` in ``dtype``: times ``exp(scale)``, divided by a tensor tau (differentiable), or
    times the float ``1/tau`` (checked representable)."""
    if scale is not None:
        return fold_scale(x, scale_factor(scale, dtype), dtype)
    if tau_value is None or tau_tensor is not None:
        assert tau_tensor is not None
        if tau_value is not None:
            inverse_temperature(tau_value, dtype)
        return fold_temperature(x, tau_tensor, dtype)
    return x.to(dtype) * inverse_temperature(tau_value, dtype)


def masked_in_batch(form: str, z1: torch.Tensor, z2: torch.Tensor, labels: Any, negatives: Any,
                    tau_value: float | None, tau_tensor: torch.Tensor | None, scale: torch.Tensor | None, *,
                    symmetric: bool, variant: Variant, reduction: str, chunk_size: int | None, require_unit_norm: bool,
                    accumulate: torch.dtype | None, gather: bool, group: Any,
                    score_dtype: torch.dtype | None = None) -> torch.Tensor:
    """CLIP's (``form="clip"``) or NT-Xent's (``"nt_xent"``) loss with ``labels`` (candidates of
    the anchor's label left out of its negatives) and extra ``negatives`` (scored beside the
    in-batch ones: for CLIP in the rows' direction, ``z1`` as anchors; for NT-Xent by both views of
    a pair); the shapes of ``z1``, ``z2`` are checked by the caller."""
    B, d = z1.shape
    labels = check_labels(labels, B, z1.device)
    negatives = check_extra_negatives(negatives, B, d)
    dtype = accumulation_dtype(accumulate, z1, z2, *(() if negatives is None else (negatives,)))
    checked = values_checked()
    if require_unit_norm and checked:
        for x, name in ((z1, "z1"), (z2, "z2"), (negatives, "negatives")):
            if x is not None:
                check_unit_norm(x, name)
    stretch = None if scale is None else scale_stretch(scale, dtype)
    parts = stretch is not None and variant.linear_rows  # (n, 3) rows: see _masked.single_positive_rows
    if form == "clip":
        c1, c2, offset = z1, z2, 0
        cand_labels = labels
        if gather:
            c1, c2 = all_gather_with_grad(z1, group), all_gather_with_grad(z2, group)
            offset = local_offset(B, group)
            cand_labels = None if labels is None else gather_labels(labels, group)
        pos = offset + torch.arange(B, device=z1.device)
        tile = pairwise_tile(B, c2.shape[0] + (0 if negatives is None else negatives.shape[-2]), chunk_size)
        a1 = scaled_anchors(z1, tau_value, tau_tensor, scale, dtype)
        if symmetric and not gather and negatives is None and labels is not None and tile >= B:
            # one product and one mask for both directions (the rows' tiles would be one anyway)
            rows, cols = symmetric_label_rows(a1, z2.to(dtype), labels, variant=variant, score_dtype=score_dtype,
                                              stretch=stretch, parts=parts)
            _no_negative(torch.cat([rows, cols]), variant, checked)
            return _reduce_labelled((rows * 0.5 + cols * 0.5), reduction, dtype, tau_value, parts, stretch)
        rows = single_positive_rows(a1, c2.to(dtype), pos, self_index=None, row_labels=labels,
                                    cand_labels=cand_labels, extra=None if negatives is None else negatives.to(dtype),
                                    variant=variant, tile=tile, score_dtype=score_dtype,
                                    stretch=stretch, parts=parts)
        if symmetric:
            a2 = scaled_anchors(z2, tau_value, tau_tensor, scale, dtype)
            cols = single_positive_rows(a2, c1.to(dtype), pos, self_index=None, row_labels=labels,
                                        cand_labels=cand_labels, extra=None, variant=variant,
                                        tile=pairwise_tile(B, c1.shape[0], chunk_size), score_dtype=score_dtype,
                                        stretch=stretch, parts=parts)
            _no_negative(torch.cat([rows, cols]), variant, checked)
            rows = rows * 0.5 + cols * 0.5  # (each half first: the sum of two finite rows may overflow)
        else:
            _no_negative(rows, variant, checked)
    else:
        views = torch.cat([z1, z2])
        n = 2 * B
        view_labels = None if labels is None else torch.cat([labels, labels])
        cands, offset, cand_labels = views, 0, view_labels
        if gather:
            cands, offset = all_gather_with_grad(views, group), local_offset(n, group)
            cand_labels = None if view_labels is None else gather_labels(view_labels, group)
        own = torch.arange(n, device=z1.device)
        extra = None
        if negatives is not None:
            extra = (negatives if negatives.dim() == 2 else torch.cat([negatives, negatives])).to(dtype)
        a = scaled_anchors(views, tau_value, tau_tensor, scale, dtype)
        rows = single_positive_rows(a, cands.to(dtype), (own + B) % n + offset, self_index=own + offset,
                                    row_labels=view_labels, cand_labels=cand_labels, extra=extra,
                                    variant=variant,
                                    tile=pairwise_tile(n, cands.shape[0] + (0 if extra is None else extra.shape[-2]),
                                                       chunk_size), score_dtype=score_dtype, stretch=stretch,
                                    parts=parts)
        _no_negative(rows, variant, checked)
    return _reduce_labelled(rows, reduction, dtype, tau_value, parts, stretch)


def _reduce_labelled(rows: torch.Tensor, reduction: str, dtype: torch.dtype, tau_value: float | None, parts: bool,
                     stretch: torch.Tensor | None) -> torch.Tensor:
    """The reduced loss of the rows (OverflowError with value checks where it is not finite); with
    ``parts``, decoupled rows past the scale's cap as (loss, unstretched loss, largest logit) per
    row, combined without inf - inf (:func:`._logsumexp.combine_stretched`)."""
    if not parts:
        return finite_loss(rows, reduction, dtype, 1.0 if tau_value is None else tau_value)
    assert stretch is not None
    loss, base, top = (rows[:, i].contiguous() for i in range(3))  # (contiguous: summed as without parts)
    out = finite_loss(loss, reduction, dtype, 1.0 if tau_value is None else tau_value)
    return combine_stretched(out, lambda x: safe_reduce(x, reduction), base, top, stretch)


def _no_negative(rows: torch.Tensor, variant: Variant, checked: bool) -> None:
    """ValueError where a decoupled row has no negative left (its loss ``log 0``): every candidate
    shares its label, or the batch has one pair."""
    if rows.dim() == 2:  # (n, 3) parts: the loss is the first column
        rows = rows[:, 0].contiguous()
    if not variant.allows_no_negative and checked and bool(torch.isneginf(rows.detach()).any()):
        raise ValueError("variant='decoupled' needs at least one negative per anchor, but every candidate of some "
                         "anchor shares its label (or the batch has one pair): its loss log 0 is undefined; use "
                         "variant='standard' (that row's loss is then 0) or larger batches")


def supcon_views(z1: torch.Tensor, z2: torch.Tensor, labels: torch.Tensor, negatives: torch.Tensor | None,
                 tau_value: float | None, tau_tensor: torch.Tensor | None, scale: torch.Tensor | None, *,
                 reduction: str, chunk_size: int | None, require_unit_norm: bool, accumulate: torch.dtype | None,
                 gather: bool, group: Any) -> torch.Tensor:
    """SupCon's ``L_out`` over the 2B views (module :mod:`infonce_book.losses.supervised`)."""
    B, d = z1.shape
    negatives = check_extra_negatives(negatives, B, d)
    dtype = accumulation_dtype(accumulate, z1, z2, *(() if negatives is None else (negatives,)))
    if require_unit_norm and values_checked():
        for x, name in ((z1, "z1"), (z2, "z2"), (negatives, "negatives")):
            if x is not None:
                check_unit_norm(x, name)
    views, n = torch.cat([z1, z2]), 2 * B
    view_labels = torch.cat([labels, labels])
    cands, offset, cand_labels = views, 0, view_labels
    if gather:
        cands, offset = all_gather_with_grad(views, group), local_offset(n, group)
        cand_labels = gather_labels(view_labels, group)
    extra = None
    if negatives is not None:
        extra = (negatives if negatives.dim() == 2 else torch.cat([negatives, negatives])).to(dtype)
    a = scaled_anchors(views, tau_value, tau_tensor, scale, dtype)
    own = torch.arange(n, device=z1.device)
    rows = supcon_rows(a, cands.to(dtype), own + offset, view_labels, cand_labels, extra,
                       pairwise_tile(n, cands.shape[0] + (0 if extra is None else extra.shape[-2]), chunk_size),
                       None if scale is None else scale_stretch(scale, dtype))
    return finite_loss(rows, reduction, dtype, 1.0 if tau_value is None else tau_value)
