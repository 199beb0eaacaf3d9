"""In-batch InfoNCE, the forms practitioners train with: CLIP's (symmetric) loss and SimCLR's NT-Xent.

A batch of ``B`` positive pairs ``(z1_i, z2_i)`` serves as its own negatives:

* :func:`info_nce_in_batch` (CLIP, Radford et al. 2021): row ``i`` of the logits
  ``z1 z2^T / tau`` has its positive on the diagonal and the ``B - 1`` other columns as
  negatives; ``symmetric=True`` averages it with the same loss over the columns (``z2`` as
  anchors), as CLIP does.
* :func:`nt_xent` (SimCLR's normalised temperature-scaled cross entropy, Chen et al. 2020): the
  ``2B`` views ``z1_1 ... z1_B, z2_1 ... z2_B`` are each an anchor; a view's positive is its
  pair and its negatives are the other ``2B - 2`` views (itself excluded).

Both are :func:`infonce_book.losses.info_nce` with shared negatives in which the positive (and,
for NT-Xent, the anchor itself) is left out of each row's negatives (its logit set to ``-inf``
before the log-sum-exp, never subtracted afterwards): the same log-space arithmetic, chunking,
custom backward pass, fused path for small batches, accuracy, autocast and overflow behaviour,
and the same ``variant`` (``"decoupled"``: the positive left out of the denominator, Yeh et al.
2022) and ``reduction``, ``check_values``, ``meta`` tensors and ``torch.compile`` (module
docstring of :mod:`infonce_book.losses.explicit`). With ``gather=True`` the candidates of every
process of a ``torch.distributed`` group are scored (:func:`infonce_book.losses.gather_with_grad`).

A batch of one pair (``B = 1`` in all, as the last, partial batch of an epoch may be) has no
negative: its standard loss is exactly 0, with zero gradient; the decoupled variant raises.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from ..utils.validation import check_bool, check_float_tensor
from ._common import (
    accumulation_dtype,
    check_accumulate,
    check_chunk_size,
    check_options,
    check_score_dtype,
    finite_loss,
    fold_scale,
    fold_temperature,
    inverse_temperature,
    scale_factor,
    scale_stretch,
    temperature_of,
    values_checked,
    without_autocast,
    zero_loss,
)
from ._embedding import embedding_loss
from ._gather import all_gather_with_grad, local_offset
from ._labelled import masked_in_batch
from ._norm_checks import check_unit_norm
from ._pairwise import PairwiseInfoNCE, pairwise_tile
from ._variant import Variant

__all__ = ["info_nce_in_batch", "nt_xent"]


def _validate_pairs(z1: torch.Tensor, z2: torch.Tensor, require_unit_norm: bool) -> None:
    for name, t in (("z1", z1), ("z2", z2)):
        # (the norm check covers finiteness; neither reads a value without value checks)
        check_float_tensor(t, name, finite=values_checked() and not require_unit_norm)
    if z1.dim() != 2:
        raise ValueError(f"z1 must have shape (B, d), got shape {tuple(z1.shape)}")
    if z2.shape != z1.shape:
        raise ValueError(f"z2 must have the shape of z1, (B, d); got z1 {tuple(z1.shape)}, z2 {tuple(z2.shape)}")
    if z1.shape[0] == 0:
        raise ValueError("empty batch: z1 has B = 0 rows; in-batch InfoNCE needs at least two pairs")


def _check_options(variant: Any, reduction: Any, chunk_size: Any, require_unit_norm: Any, gather: Any,
                   ) -> tuple[int | None, Variant]:
    """``(chunk_size, variant)`` checked, in the order of the messages: variant, reduction,
    ``require_unit_norm``, ``gather``, chunk size."""
    check_options(variant, reduction)  # (variant first: its message names the choices)
    variant = Variant(variant)
    check_bool(require_unit_norm, "require_unit_norm")
    check_bool(gather, "gather")
    return check_chunk_size(chunk_size), variant


def _candidates(xs: tuple[torch.Tensor, ...], group: Any) -> tuple[list[torch.Tensor], int]:
    """``(candidates, offset)``: each of ``xs`` gathered from every process of ``group``, and the
    first row of this process's own slice."""
    return [all_gather_with_grad(x, group) for x in xs], local_offset(xs[0].shape[0], group)


def _anchors(xs: tuple[torch.Tensor, ...], tau_value: float | None, tau_tensor: torch.Tensor | None,
             dtype: torch.dtype, scale: torch.Tensor | None = None,
             ) -> tuple[list[torch.Tensor], float, torch.Tensor | None, torch.Tensor | None]:
    """``(anchors, tau_value, tau_tensor, stretch)``: ``xs`` and the temperature as given, or, for a
    tensor tau not read on the host (``tau_value`` None), ``xs`` divided by it on the device and
    tau 1; for a ``logit_scale`` (``scale``), ``xs`` times ``exp(scale)`` up to its cap, tau 1 and
    the rest of the scale as ``stretch`` (:func:`._common.fold_scale`,
    :func:`._common.scale_stretch`; None without a scale)."""
    if scale is not None:
        factor = scale_factor(scale, dtype)
        return [fold_scale(x, factor, dtype) for x in xs], 1.0, None, scale_stretch(scale, dtype)
    if tau_value is not None:
        return list(xs), tau_value, tau_tensor, None
    assert tau_tensor is not None  # (no float tau: a tensor one)
    return [fold_temperature(x, tau_tensor, dtype) for x in xs], 1.0, None, None


def _alias_when_compiling(x: torch.Tensor) -> torch.Tensor:
    """``x``, or a view of it under ``torch.compile``: the candidates are also the positives (or
    the anchors), and dynamo breaks the graph at a custom autograd function given one tensor
    twice; eager calls pass the tensor itself."""
    return x.view_as(x) if torch.compiler.is_compiling() else x


def _single_pair(variant: Variant, rows: int, dtype: torch.dtype, reduction: str, z1: torch.Tensor, z2: torch.Tensor,
                 tau_tensor: torch.Tensor | None, require_unit_norm: bool, what: str) -> torch.Tensor:
    """The loss of one pair in all (no negative): 0 per row in the standard variant, with zero
    gradient (after the unit-norm checks); ValueError for the decoupled one."""
    if not variant.allows_no_negative:
        raise ValueError(f"{what} with variant='decoupled' needs at least 2 pairs in all (a row without "
                         f"negatives has the undefined loss log 0), got B = 1")
    if require_unit_norm:
        check_unit_norm(z1, "z1")
        check_unit_norm(z2, "z2")
    return zero_loss(rows, dtype, reduction, z1, z2, tau_tensor)


@without_autocast
def info_nce_in_batch(z1: torch.Tensor, z2: torch.Tensor, tau: float | torch.Tensor | None = None, *,
                      symmetric: bool = True, variant: str = "standard", reduction: str = "mean",
                      chunk_size: int | None = None, require_unit_norm: bool = True,
                      accumulate: torch.dtype | None = None, gather: bool = False, group: Any = None,
                      check_values: bool | None = None, labels: torch.Tensor | None = None,
                      negatives: torch.Tensor | None = None, logit_scale: torch.Tensor | None = None,
                      score_dtype: torch.dtype | None = None) -> torch.Tensor:
    """In-batch InfoNCE over the logits ``z1 z2^T / tau`` (CLIP's loss; ``symmetric=True``: both
    directions averaged, as CLIP does).

    Row ``i`` is an anchor ``z1_i`` with positive ``z2_i`` and the other candidates ``z2_j``,
    ``j != i``, as negatives (``B - 1`` of them, or ``W B - 1`` with ``gather=True`` over ``W``
    processes): ``l_i = -s_ii / tau + log sum_j e^{s_ij / tau}`` (standard; the sum over all
    candidates, the positive included) or the same sum over ``j != i`` (decoupled). With
    ``symmetric=True`` the loss of pair ``i`` is ``(l_i + l'_i) / 2``, where ``l'_i`` is the same
    loss with ``z2_i`` as anchor against the candidates ``z1_j``.

    Args:
        z1, z2: (B, d) embeddings of the two sides of B positive pairs (images and texts, or two
            views), on the unit sphere (cosine similarities; normalise first).
        tau: temperature, finite and > 0 (float, or 0-d tensor for a learnable temperature: CLIP
            learns ``1/tau`` as ``logit_scale.exp()``; pass ``1 / logit_scale.exp()``).
        symmetric: average both directions (default True, as for
            :class:`infonce_book.losses.InBatchInfoNCELoss`: CLIP's loss is the symmetric one and
            both towers then learn to rank; one default for function and module, so that swapping
            one for the other never changes the loss); False: the rows alone (``z1`` anchors).
        variant: ``"standard"`` (the positive in the denominator: cross-entropy over the row) or
            ``"decoupled"`` (left out).
        reduction: ``"mean"`` (CLIP's value), ``"sum"`` or ``"none"`` ((B,), one loss per pair).
        chunk_size, require_unit_norm, accumulate: as in :func:`infonce_book.losses.info_nce`
            (the candidates are the negatives; ``chunk_size`` bounds the held logits to
            ``B x chunk_size``; without ``gather``, tiles of at most ``chunk_size`` rows, and
            tiles of ``2^21`` logits above ``2^22``: memory ``O(B d + B x tile)``, as Inf-CL).
        gather: score the candidates of every process of ``group`` (``torch.distributed``, with
            gradients back to their owners; :func:`infonce_book.losses.gather_with_grad`); the
            local rows are the anchors. Every process must call it alike. Each positive is then
            scored by its own product, as in :func:`~infonce_book.losses.info_nce`: a positive
            repeated among its row's candidates ties with it up to rounding only.
        group: the process group for ``gather`` (``None``: the default group).
        check_values: as in :func:`infonce_book.losses.info_nce` (default None: checks in eager
            mode, none under ``torch.compile``; False reads no value on the host, so nothing waits
            for the device).
        labels: (B,) integer class of each pair, or None: candidates with the anchor's label are
            left out of its negatives (false negatives), in both directions; a row left without
            negatives has loss 0 (standard) or raises (decoupled). Scored by a row-tiled kernel
            over masked logits (:mod:`._masked`; ``chunk_size`` bounds its tiles, ``gather``
            gathers the labels too; the class sizes are not read on the host).
        negatives: extra hard negatives beside the in-batch candidates, (k, d) shared or
            (B, k, d) per pair, on the unit sphere; scored for the ``z1`` anchors (rows).
        logit_scale: CLIP's ``log(1/tau)`` as a 0-d tensor, instead of ``tau``: folded into the
            anchors as ``exp(logit_scale)``, so its gradient stays finite wherever it is
            representable (through ``tau = exp(-s)`` it overflows from a scale of about 46 in
            float32). OverflowError (with value checks) where ``exp(logit_scale)`` exceeds the
            accumulation dtype; without them (``check_values=False``) a scale past 87 (float32;
            708 in float64) is folded up to that cap and the rest applied to each row's centred
            log-sum-exp: the loss is inf only where its true value overflows, never NaN.
        score_dtype: None (default) or torch.bfloat16 / torch.float16: opt-in low-precision
            scoring, the similarity products (forward and backward) in that dtype, the
            log-sum-exp and everything after in float32 (measured against float64 at B = 128 to
            3000, tau = 0.07-0.1: loss relative error 1e-4 to 1.1e-3, gradients about 2e-2
            normwise; a GPU's tensor cores make it faster, a CPU without bfloat16 units slower).
    Returns:
        Loss in nats (a scalar for "mean"/"sum", (B,) for "none"), dtype as in
        :func:`infonce_book.losses.info_nce`. All similarities equal: ``log B`` per row (standard)
        and ``log(B - 1)`` (decoupled); with ``gather``, ``log(W B)`` and ``log(W B - 1)``. One
        pair in all (``B = 1``): exactly 0, with zero gradient (standard).
        Differentiable in ``z1``, ``z2`` and a tensor ``tau``, to any order.
    Raises:
        TypeError: non-tensor or integer inputs, non-bool flags. ValueError: tau not in (0, inf);
        shapes not (B, d) alike (both named); ``B = 0``; fewer than 2 candidates in all with
        ``variant="decoupled"`` (no negative: ``B = 1``); NaN/inf entries; rows not of unit norm; unknown variant, reduction or
        accumulate dtype. OverflowError: ``1/tau`` or the loss beyond the accumulation dtype.
        RuntimeError: ``gather=True`` without an initialised process group.
    Source: Radford et al. (2021), "Learning transferable visual models from natural language
    supervision", Figure 3 (symmetric cross-entropy over ``I_e T_e^T * exp(t)``); decoupled
    variant: Yeh et al. (2022).

    Examples:
        >>> import torch
        >>> z = torch.nn.functional.normalize(torch.ones(4, 3), dim=-1)  # all similarities equal
        >>> round(float(info_nce_in_batch(z, z, 0.1)), 6)  # log B
        1.386294
        >>> round(float(info_nce_in_batch(z, z, 0.1, variant="decoupled")), 6)  # log(B - 1)
        1.098612
    """
    chunk_size, variant = _check_options(variant, reduction, chunk_size, require_unit_norm, gather)
    check_bool(symmetric, "symmetric")
    _validate_pairs(z1, z2, require_unit_norm)
    accumulate = check_accumulate(accumulate, z1.device)
    tau_value, tau_tensor, scale = temperature_of(tau, logit_scale)
    score_dtype = check_score_dtype(score_dtype)
    if labels is not None or negatives is not None or (gather and score_dtype is not None):
        return masked_in_batch("clip", z1, z2, labels, negatives, tau_value, tau_tensor, scale, symmetric=symmetric,
                               variant=variant, reduction=reduction, chunk_size=chunk_size,
                               require_unit_norm=require_unit_norm, accumulate=accumulate, gather=gather, group=group,
                               score_dtype=score_dtype)
    if not gather:
        return _pairwise(z1, z2, None, symmetric, variant, reduction, chunk_size, require_unit_norm, accumulate,
                         tau_value, tau_tensor, z1, z2, scale, score_dtype)
    (c1, c2), offset = _candidates((z1, z2), group)
    dtype, B = accumulation_dtype(accumulate, z1, z2), z1.shape[0]
    if c2.shape[0] < 2:
        return _single_pair(variant, B, dtype, reduction, z1, z2, tau_tensor if scale is None else scale,
                            require_unit_norm and values_checked(), "in-batch InfoNCE")
    (a1, a2), tau_value, tau_tensor, stretch = _anchors((z1, z2), tau_value, tau_tensor, dtype, scale)
    exclude = (offset + torch.arange(B, device=z1.device)).unsqueeze(-1)  # each row's own positive
    unit_norm = ((c1, "z1"), (c2, "z2")) if require_unit_norm and values_checked() else ()  # gathered: all raise alike
    # Past the scale's cap, rows of a decoupled loss may overflow to +inf and -inf: each half is then
    # reduced on its own, with the stretch applied to the reduced parts (:func:`.combine_stretched`).
    halves = reduction if symmetric and stretch is not None and variant.linear_rows else "none"
    rows = embedding_loss(a1, z2, c2, tau_value, tau_tensor, variant, chunk_size, dtype,
                          halves if symmetric else reduction, unit_norm, exclude=exclude, stretch=stretch)
    if not symmetric:
        return rows
    columns = embedding_loss(a2, z1, c1, tau_value, tau_tensor, variant, chunk_size, dtype, halves,
                             exclude=exclude, stretch=stretch)
    pairs = rows * 0.5 + columns * 0.5  # (each half first: the sum of two finite rows may overflow)
    return pairs if halves != "none" else finite_loss(pairs, reduction, dtype, tau_value)


@without_autocast
def nt_xent(z1: torch.Tensor, z2: torch.Tensor, tau: float | torch.Tensor | None = None, *,
            variant: str = "standard", reduction: str = "mean", chunk_size: int | None = None,
            require_unit_norm: bool = True, accumulate: torch.dtype | None = None, gather: bool = False,
            group: Any = None, check_values: bool | None = None, labels: torch.Tensor | None = None,
            negatives: torch.Tensor | None = None, logit_scale: torch.Tensor | None = None,
            score_dtype: torch.dtype | None = None) -> torch.Tensor:
    """SimCLR's NT-Xent loss over the ``2B`` views of ``B`` pairs.

    The views are ``v = (z1_1, ..., z1_B, z2_1, ..., z2_B)``. View ``i``'s positive is its pair
    (``i + B`` or ``i - B``) and its negatives are the other ``2B - 2`` views, itself excluded
    (``2 W B - 2`` with ``gather=True`` over ``W`` processes):
    ``l_i = -s_{i,pos}/tau + log sum_{j != i} e^{s_ij / tau}`` (standard: the positive in the
    sum) or the same sum over ``j`` neither ``i`` nor its positive (decoupled).

    Args:
        z1, z2: (B, d) embeddings of the two views of B examples, on the unit sphere (SimCLR's
            cosine similarity; normalise first).
        tau: temperature, finite and > 0 (float or 0-d tensor).
        variant: ``"standard"`` (SimCLR) or ``"decoupled"`` (the positive left out, Yeh et al.
            2022).
        reduction: ``"mean"`` (SimCLR's ``1/(2N) sum_k [l(2k-1, 2k) + l(2k, 2k-1)]``), ``"sum"``
            or ``"none"`` ((2B,), the views of ``z1`` first, then those of ``z2``).
        chunk_size, require_unit_norm, accumulate: as in :func:`infonce_book.losses.info_nce`
            (the 2B views are the candidates; ``chunk_size`` bounds the held logits to
            ``2B x chunk_size``; tiles as in :func:`info_nce_in_batch`).
        gather, group: as in :func:`info_nce_in_batch` (the local 2B views are the anchors,
            the views of every process the candidates).
        check_values: as in :func:`infonce_book.losses.info_nce` (default None: checks in eager
            mode, none under ``torch.compile``; False reads no value on the host, so nothing waits
            for the device).
        labels: (B,) integer class of each pair, or None: candidates with the anchor's label are
            left out of its negatives (false negatives; both views carry their pair's label); a view left without
            negatives has loss 0 (standard) or raises (decoupled). Scored by a row-tiled kernel
            over masked logits (:mod:`._masked`; ``chunk_size`` bounds its tiles, ``gather``
            gathers the labels too; the class sizes are not read on the host).
        negatives: extra hard negatives beside the in-batch candidates, (k, d) shared or
            (B, k, d) per pair (scored by both views of the pair), on the unit sphere.
        logit_scale: CLIP's ``log(1/tau)`` as a 0-d tensor, instead of ``tau``: folded into the
            anchors as ``exp(logit_scale)``, so its gradient stays finite wherever it is
            representable (through ``tau = exp(-s)`` it overflows from a scale of about 46 in
            float32). OverflowError (with value checks) where ``exp(logit_scale)`` exceeds the
            accumulation dtype; without them (``check_values=False``) a scale past 87 (float32;
            708 in float64) is folded up to that cap and the rest applied to each row's centred
            log-sum-exp: the loss is inf only where its true value overflows, never NaN.
        score_dtype: None (default) or torch.bfloat16 / torch.float16: opt-in low-precision
            scoring, the similarity products (forward and backward) in that dtype, the
            log-sum-exp and everything after in float32 (measured against float64 at B = 128 to
            3000, tau = 0.07-0.1: loss relative error 1e-4 to 1.1e-3, gradients about 2e-2
            normwise; a GPU's tensor cores make it faster, a CPU without bfloat16 units slower).
    Returns:
        Loss in nats (a scalar for "mean"/"sum", (2B,) for "none"). All similarities equal:
        ``log(2B - 1)`` per view (standard) and ``log(2B - 2)`` (decoupled). One pair in all
        (``B = 1``): exactly 0, with zero gradient (standard). Differentiable in
        ``z1``, ``z2`` and a tensor ``tau``, to any order.
    Raises:
        TypeError: non-tensor or integer inputs, non-bool flags. ValueError: tau not in (0, inf);
        shapes not (B, d) alike (both named); ``B = 0``; fewer than 2 pairs in all with
        ``variant="decoupled"`` (``B = 1``: no negative); NaN/inf entries; rows not of unit norm; unknown variant, reduction or
        accumulate dtype. OverflowError: ``1/tau`` or the loss beyond the accumulation dtype.
        RuntimeError: ``gather=True`` without an initialised process group.
    Source: Chen et al. (2020), "A simple framework for contrastive learning of visual
    representations", eq. 1 and Algorithm 1; decoupled variant: Yeh et al. (2022).

    Examples:
        >>> import torch
        >>> z = torch.nn.functional.normalize(torch.ones(3, 2), dim=-1)  # all similarities equal
        >>> round(float(nt_xent(z, z, 0.5)), 6)  # log(2B - 1), B = 3
        1.609438
    """
    chunk_size, variant = _check_options(variant, reduction, chunk_size, require_unit_norm, gather)
    _validate_pairs(z1, z2, require_unit_norm)
    accumulate = check_accumulate(accumulate, z1.device)
    tau_value, tau_tensor, scale = temperature_of(tau, logit_scale)
    score_dtype = check_score_dtype(score_dtype)
    if labels is not None or negatives is not None or (gather and score_dtype is not None):
        return masked_in_batch("nt_xent", z1, z2, labels, negatives, tau_value, tau_tensor, scale, symmetric=False,
                               variant=variant, reduction=reduction, chunk_size=chunk_size,
                               require_unit_norm=require_unit_norm, accumulate=accumulate, gather=gather, group=group,
                               score_dtype=score_dtype)
    B = z1.shape[0]
    views = torch.cat([z1, z2])
    if not gather:
        return _pairwise(views, views, B, False, variant, reduction, chunk_size, require_unit_norm, accumulate,
                         tau_value, tau_tensor, z1, z2, scale, score_dtype)
    pairs = torch.cat([z2, z1])
    (candidates,), offset = _candidates((views,), group)
    dtype = accumulation_dtype(accumulate, z1, z2)
    if candidates.shape[0] < 4:
        return _single_pair(variant, 2 * B, dtype, reduction, z1, z2, tau_tensor if scale is None else scale,
                            require_unit_norm and values_checked(), "nt_xent")
    (anchors,), tau_value, tau_tensor, stretch = _anchors((views,), tau_value, tau_tensor, dtype, scale)
    own = torch.arange(2 * B, device=z1.device)
    exclude = torch.stack([own + offset, (own + B) % (2 * B) + offset], dim=-1)  # itself and its positive
    # Checked on the gathered candidates, so that every process raises alike.
    unit_norm: tuple[tuple[torch.Tensor, str], ...] = ()
    if require_unit_norm and values_checked():
        unit_norm = ((candidates, "z1 and z2 (gathered)"),)
    return embedding_loss(anchors, pairs, candidates, tau_value, tau_tensor, variant, chunk_size,
                          dtype, reduction, unit_norm, exclude=exclude, stretch=stretch)


def _pairwise(a: torch.Tensor, c: torch.Tensor, half: int | None, columns: bool, variant: Variant, reduction: str,
              chunk_size: int | None, require_unit_norm: bool, accumulate: torch.dtype | None, tau_value: float | None,
              tau_tensor: torch.Tensor | None, z1: torch.Tensor, z2: torch.Tensor, scale: torch.Tensor | None = None,
              score_dtype: torch.dtype | None = None) -> torch.Tensor:
    """The local (``gather=False``) in-batch loss in one kernel over the logits ``a c^T / tau``
    (:class:`._pairwise.PairwiseInfoNCE`): CLIP's form (``half`` None: the positive of row i is
    column i) or NT-Xent's (``a = c`` the 2B views, ``half = B``: the positive of view i is view
    i + B mod 2B, and the view itself is left out too). One pair in all (``B = 1``, no negative)
    never reaches the kernel: :func:`_single_pair`. Without value checks the unit norms are not
    read and a tensor tau not read on the host is folded into ``a`` (:func:`_anchors`)."""
    dtype = accumulation_dtype(accumulate, z1, z2)
    checked = require_unit_norm and values_checked()
    if z1.shape[0] < 2:
        rows, what = (z1.shape[0], "in-batch InfoNCE") if half is None else (2 * z1.shape[0], "nt_xent")
        return _single_pair(variant, rows, dtype, reduction, z1, z2, tau_tensor if scale is None else scale,
                            checked, what)
    (a,), tau_value, tau_tensor, stretch = _anchors((a,), tau_value, tau_tensor, dtype, scale)
    c = _alias_when_compiling(c)  # (NT-Xent: the views are the anchors and the candidates)
    inverse_temperature(tau_value, dtype)
    n = a.shape[0]
    indices = _pair_indices.__wrapped__ if torch.compiler.is_compiling() else _pair_indices  # (dynamo: no cache)
    pos, exclude = indices(n, half, a.device)
    checks = ((z1, "z1"), (z2, "z2")) if checked else ()
    return PairwiseInfoNCE.apply(a, c, tau_tensor, tau_value, pos, exclude, columns, variant, dtype,
                                 reduction, checks, pairwise_tile(n, c.shape[0], chunk_size), score_dtype, stretch)


@functools.lru_cache(maxsize=16)
def _pair_indices(n: int, half: int | None, device: torch.device) -> tuple[torch.Tensor | None, torch.Tensor]:
    """``(pos, exclude)`` of :func:`_pairwise` (read-only index tensors, kept for the next call of
    the same shape: they are part of the fixed cost per call at small B)."""
    own = torch.arange(n, device=device)
    if half is None:
        return None, own.unsqueeze(-1)
    pos = (own + half) % n
    return pos, torch.stack([own, pos], dim=-1)
