"""The loss from embeddings whose shapes are validated, shared by :func:`infonce_book.losses.info_nce`
and the in-batch forms: the fused kernel (:mod:`._fused`) for small problems, the chunked one
(:mod:`._chunked`) otherwise, with the unit-norm checks of the inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ._chunked import InfoNCEFromEmbeddings
from ._common import chunk_bounds, finite_loss, inverse_temperature, reduce, use_fused
from ._fused import FusedInfoNCE
from ._logsumexp import combine_stretched, embedding_lse_plain, safe_reduce
from ._norm_checks import norm_range, raise_unless_checks_pass
from ._variant import Variant

__all__ = ["embedding_loss"]


def embedding_loss(anchor: torch.Tensor, positive: torch.Tensor, negatives: torch.Tensor, tau_value: float,
                   tau_tensor: torch.Tensor | None, variant: Variant, chunk_size: int | None, dtype: torch.dtype,
                   reduction: str, unit_norm: Sequence[tuple[torch.Tensor, str]] = (),
                   check_negatives_norm: bool = False, exclude: torch.Tensor | None = None,
                   stretch: torch.Tensor | None = None) -> torch.Tensor:
    """The reduced loss from embeddings whose shapes are validated: the fused path for small
    problems (:class:`._fused.FusedInfoNCE`), the chunked custom autograd function otherwise.

    ``unit_norm``: ``(tensor, name)`` pairs whose rows must have norm 1; ``check_negatives_norm``:
    check the negatives' norms too (chunk by chunk as they are scored, on the chunked path);
    ``exclude``: (B, e) column indices into shared negatives left out of each row (their logit
    ``-inf``; the in-batch forms' positives), or None; ``stretch``: the part of a ``logit_scale``
    above its cap (:func:`._common.scale_stretch`), or None. Raises ValueError for rows off the sphere
    (or non-finite entries) and OverflowError where ``1/tau`` or the loss leaves the range of
    ``dtype``."""
    inverse_temperature(tau_value, dtype)
    if anchor.device.type == "meta":  # shapes and dtypes only: the plain form, free on meta tensors
        tau = tau_value if tau_tensor is None else tau_tensor
        return reduce(embedding_lse_plain(anchor, positive, negatives, tau, variant, dtype, exclude,
                                          stretch), reduction)
    B, k = anchor.shape[0], negatives.shape[-2]
    if use_fused(B, k, chunk_size):
        checks = tuple(unit_norm) + (((negatives, "negatives"),) if check_negatives_norm else ())
        return FusedInfoNCE.apply(anchor, positive, negatives, tau_tensor, tau_value, variant, dtype,
                                  exclude, reduction, checks, stretch)
    if unit_norm:
        with torch.no_grad():
            lohi = norm_range([x for x, _ in unit_norm])
        raise_unless_checks_pass(unit_norm, lohi)
    # The weighted sum of negatives that the anchor's (and tau's) gradient needs is accumulated in
    # the forward pass, when a backward pass through them can follow.
    want_pn = torch.is_grad_enabled() and (anchor.requires_grad or tau_tensor is not None)
    parts = stretch is not None and variant.linear_rows  # (rows past the cap that may be +inf and -inf)
    lse = InfoNCEFromEmbeddings.apply(anchor, positive, negatives, tau_tensor, tau_value, variant,
                                      chunk_bounds(k, chunk_size), dtype, want_pn, check_negatives_norm, exclude,
                                      stretch, parts)
    if not parts:
        return finite_loss(lse, reduction, dtype, tau_value)
    assert stretch is not None  # (parts)
    loss, base, top = (lse[:, i].contiguous() for i in range(3))
    return combine_stretched(finite_loss(loss, reduction, dtype, tau_value), lambda x: safe_reduce(x, reduction),
                             base, top, stretch)
