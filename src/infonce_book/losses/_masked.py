"""The in-batch losses with labels (false negatives left out), extra hard negatives, and SupCon's
several positives per anchor: one row-tiled kernel over masked logits, in plain autograd.

Row ``i`` has anchor ``A_i`` and candidates ``C_j`` (logits ``y_ij = <A_i, C_j> / tau``, formed
``tile`` rows at a time), and optionally extra negatives ``E`` ((k, d) shared, or (n, k, d) one set
per row; logits ``<A_i, E_l> / tau``). A candidate is left out of row ``i``'s negatives when it is
the row's positive, the anchor itself (NT-Xent, SupCon) or has the row's label (``labels``: a
false negative). With one positive per row (:func:`single_positive_rows`)::

    R_i = log sum_{j negative} e^{y_ij} - y_{i,pos(i)};   standard: softplus(R_i), decoupled: R_i

(the softplus form keeps a tiny loss exact in relative terms, as the unlabelled kernel does). A
row left with no negative (every candidate shares its label) has the standard loss
``log(e^{y+}/e^{y+}) = 0`` with zero gradient; the decoupled one is undefined (``log 0``).

SupCon's "outside" average (:func:`supcon_rows`, Khosla et al. 2020, eq. 2): the positives
``P(i)`` are the candidates with the row's label other than the anchor itself, and::

    l_i = log sum_{j != i} e^{y_ij} - (1/|P(i)|) sum_{p in P(i)} y_ip

Memory: with ``tile < n`` and a backward pass to follow, each tile is recomputed in the backward
pass (activation checkpointing), so that at most ``tile x (m + k)`` logits are held at a time.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils.checkpoint import checkpoint

from ._logsumexp import finite_shift, stretched
from ._variant import Variant

__all__ = ["label_mask", "single_positive_rows", "supcon_rows"]

_NEG_INF = float("-inf")


def label_mask(row_labels: torch.Tensor | None, cand_labels: torch.Tensor | None, lo: int,
               hi: int) -> torch.Tensor | None:
    """(hi - lo, m) bool: candidate ``j`` has the label of row ``i`` (None without labels)."""
    if row_labels is None or cand_labels is None:
        return None
    return row_labels[lo:hi, None] == cand_labels[None, :]


def _tiles(n: int, tile: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + tile, n)) for lo in range(0, n, tile)]


def _extra_logits(a: torch.Tensor, extra: torch.Tensor | None, lo: int, hi: int) -> torch.Tensor | None:
    if extra is None:
        return None
    if extra.dim() == 2:
        return torch.mm(a, extra.T)
    return torch.einsum("nd,nkd->nk", a, extra[lo:hi])


def _safe_lse(y: torch.Tensor, keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log sum_{keep} e^y per row, whether the row keeps any)``; rows keeping nothing get
    ``-inf`` with a zero (not NaN) gradient."""
    has = keep.any(dim=1)
    masked = torch.where(keep, y, _NEG_INF)
    safe = torch.where(has.unsqueeze(-1), masked, torch.zeros((), dtype=y.dtype, device=y.device))
    lse = torch.logsumexp(safe, dim=1)
    return torch.where(has, lse, torch.full_like(lse, _NEG_INF)), has


def _run_tiles(fn: Callable[..., torch.Tensor], n: int, tile: int,
               tensors: tuple[torch.Tensor | None, ...]) -> torch.Tensor:
    """``cat(fn(lo, hi, *tensors))`` over the row tiles, each recomputed in the backward pass when
    there is more than one tile and a gradient to take."""
    bounds = _tiles(n, tile)
    grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)
    if len(bounds) == 1 or not grad:
        return torch.cat([fn(lo, hi, *tensors) for lo, hi in bounds])
    return torch.cat([checkpoint(fn, lo, hi, *tensors, use_reentrant=False) for lo, hi in bounds])


def single_positive_rows(a_beta: torch.Tensor, c: torch.Tensor, pos: torch.Tensor, *, self_index: torch.Tensor | None,
                         row_labels: torch.Tensor | None, cand_labels: torch.Tensor | None,
                         extra: torch.Tensor | None, variant: Variant, tile: int,
                         score_dtype: torch.dtype | None = None, stretch: torch.Tensor | None = None,
                         parts: bool = False) -> torch.Tensor:
    """(n,) per-row losses (module docstring) of anchors ``a_beta`` (already divided by tau, in
    the accumulation dtype) against candidates ``c`` ((m, d)), positive ``pos`` ((n,) column
    indices), the anchor's own column ``self_index`` ((n,) or None) left out too; ``stretch``: the
    part of a ``logit_scale`` past its cap (:func:`._logsumexp.stretched`), or None; ``parts`` (with
    a stretch, decoupled): (n, 3), each row's loss, its unstretched value and its largest centred
    logit (for :func:`._logsumexp.combine_stretched`)."""
    n, m = a_beta.shape[0], c.shape[0]

    def rows(lo: int, hi: int, a_: torch.Tensor, c_: torch.Tensor, e_: torch.Tensor | None) -> torch.Tensor:
        if score_dtype is None:
            y = torch.mm(a_[lo:hi], c_.T)
        else:  # opt-in low-precision scoring: the product in score_dtype, the rest in a_'s dtype
            y = torch.mm(a_[lo:hi].to(score_dtype), c_.T.to(score_dtype)).to(a_.dtype)
        cols = torch.arange(m, device=y.device)
        p = pos[lo:hi]
        keep = cols[None, :] != p[:, None]
        if self_index is not None:
            keep &= cols[None, :] != self_index[lo:hi, None]
        same = label_mask(row_labels, cand_labels, lo, hi)
        if same is not None:
            keep &= ~same
        s = y.gather(1, p[:, None]).squeeze(-1)
        ye = _extra_logits(a_[lo:hi], e_, lo, hi)
        if ye is not None:
            y = torch.cat([y, ye], dim=1)
            keep = torch.cat([keep, torch.ones_like(ye, dtype=torch.bool)], dim=1)
        lse, _ = _safe_lse(y, keep)
        r = lse - s
        if stretch is not None:
            top = finite_shift(torch.where(keep, y, _NEG_INF).amax(dim=1) - s)
            if parts:
                return torch.stack([stretched(r, top, stretch), r, top], dim=1)
            r = stretched(r, top, stretch)
        return variant.row_loss(r)

    return _run_tiles(rows, n, tile, (a_beta, c, extra))


def symmetric_label_rows(a_beta: torch.Tensor, c: torch.Tensor, labels: torch.Tensor, *, variant: Variant,
                         score_dtype: torch.dtype | None = None, stretch: torch.Tensor | None = None,
                         parts: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """``(rows, columns)``: CLIP's labelled loss in both directions from one (n, n) product, for
    anchors ``a_beta`` (already divided by tau) against their own pairs ``c`` (no gathered
    candidates, no extra negatives; the positives on the diagonal).

    Candidate ``j`` is a negative of row ``i`` (and ``i`` of column ``j``) when their labels
    differ: the same-label relation is symmetric, so one masked matrix serves both directions,
    and the positive (its own label) is left out with the false negatives. A row is left with no
    negative only when every label is equal, and then every row and column is (their standard
    loss 0, with zero gradient; decoupled ``-inf``). ``stretch`` and ``parts`` as in
    :func:`single_positive_rows` (``parts``: (n, 3) each)."""
    if score_dtype is None:
        y = torch.mm(a_beta, c.T)
    else:  # opt-in low-precision scoring: the product in score_dtype, the rest in a_beta's dtype
        y = torch.mm(a_beta.to(score_dtype), c.T.to(score_dtype)).to(a_beta.dtype)
    s = y.diagonal()
    keep = labels[:, None] != labels[None, :]
    masked = y.masked_fill(~keep, _NEG_INF)
    has = keep.any()  # (all rows have a negative, or none has)
    safe = torch.where(has, masked, torch.zeros((), dtype=y.dtype, device=y.device))
    out = []
    for dim in (1, 0):
        r = torch.where(has, torch.logsumexp(safe, dim=dim), _NEG_INF) - s
        if stretch is not None:
            top = finite_shift(masked.amax(dim=dim) - s)
            if parts:
                out.append(torch.stack([stretched(r, top, stretch), r, top], dim=1))
                continue
            r = stretched(r, top, stretch)
        out.append(variant.row_loss(r))
    return out[0], out[1]


def supcon_rows(a_beta: torch.Tensor, c: torch.Tensor, self_index: torch.Tensor, row_labels: torch.Tensor,
                cand_labels: torch.Tensor, extra: torch.Tensor | None, tile: int,
                stretch: torch.Tensor | None = None) -> torch.Tensor:
    """(n,) SupCon losses ``L_out`` per anchor (module docstring); every anchor must have at
    least one positive (the caller checks: the other view always is one); ``stretch`` as in
    :func:`single_positive_rows`."""
    n, m = a_beta.shape[0], c.shape[0]

    def rows(lo: int, hi: int, a_: torch.Tensor, c_: torch.Tensor, e_: torch.Tensor | None) -> torch.Tensor:
        y = torch.mm(a_[lo:hi], c_.T)
        cols = torch.arange(m, device=y.device)
        not_self = cols[None, :] != self_index[lo:hi, None]
        positive = (row_labels[lo:hi, None] == cand_labels[None, :]) & not_self
        count = positive.sum(dim=1)
        mean_pos = torch.where(positive, y, torch.zeros((), dtype=y.dtype, device=y.device)).sum(dim=1) / count
        keep = not_self
        ye = _extra_logits(a_[lo:hi], e_, lo, hi)
        if ye is not None:
            y = torch.cat([y, ye], dim=1)
            keep = torch.cat([keep, torch.ones_like(ye, dtype=torch.bool)], dim=1)
        lse, _ = _safe_lse(y, keep)
        if stretch is not None:
            return stretched(lse - mean_pos, finite_shift(torch.where(keep, y, _NEG_INF).amax(dim=1) - mean_pos),
                             stretch)
        return lse - mean_pos

    return _run_tiles(rows, n, tile, (a_beta, c, extra))
