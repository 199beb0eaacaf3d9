"""The InfoNCE loss, in log space (book: notation page, eq. ``notation-infonce``).

For one tuple (anchor ``x``, positive ``x+``, negatives ``x_1- ... x_k-``) with similarities
``s+ = <phi(x), phi(x+)>`` and ``s_j = <phi(x), phi(x_j-)>`` and inverse temperature
``beta = 1/tau``::

    standard  : l_k = -beta s+ + log( e^{beta s+} + sum_j e^{beta s_j} )
    decoupled : l_k = -beta s+ + log(               sum_j e^{beta s_j} )

Both are computed from the *centred logits* ``z_j = beta (s_j - s+)``:
``standard = log(1 + sum_j e^{z_j})`` and ``decoupled = log sum_j e^{z_j}``. Nothing is clamped.
Low-precision inputs (float16, bfloat16) are computed in float32; the result has dtype
``promote(input, float32)`` unless an ``accumulate`` dtype is asked for. Under
``torch.autocast`` the loss switches autocast off for itself: float32 inputs give the float32
result and gradients.

Negatives are processed in chunks of ``chunk_size`` with a running log-sum-exp, so that at no
point more than ``B x chunk_size`` similarities are held, in the forward *and* the backward pass:
:func:`info_nce` and :func:`info_nce_from_similarities` are custom autograd functions that save
their inputs and per-row quantities only (the log-sum-exp, and for :func:`info_nce` the (B, d)
softmax-weighted sum of negatives, accumulated in the forward pass as in an online softmax), and
recompute chunk by chunk the softmax weights ``p_j = e^{z_j - lse}`` that the backward pass
needs for a (B, k)-sized gradient (the gradient of ``l_k`` in ``s_j`` is ``beta p_j``, in
``s+`` it is ``-beta sum_j p_j``, in ``tau`` it is ``-(1/tau) sum_j p_j z_j``).

Small problems (all k negatives in one chunk and ``B k <= 2^16``) take a *fused* path instead:
for embeddings one matrix multiply that forms the centred logits and one softmax kernel, with
the argument checks read in the same synchronisation as the loss (it keeps the (B, k) softmax
for the backward pass); for similarities plain torch operations. Their fixed cost per call is
what matters at that size.

Second derivatives (``create_graph=True``, as in gradient penalties) are right:
:func:`info_nce_streaming` and the fused path from similarities are plain autograd, and the
custom functions' backward pass, when a graph of it is asked for, recomputes the loss with
plain torch operations (materialising the (B, k) logits) and differentiates that.

Overflow: a result beyond the range of its dtype is an ``OverflowError``, never ``inf`` or
``NaN``: ``1/tau`` must be representable in the accumulation dtype (float32: ``tau >= 2.94e-39``),
and a loss whose logits overflow (inputs far off the sphere) is reported as such. Gradients are
formed so that a weight that underflowed to 0 never meets an overflowed factor (no ``0 * inf``).

Where the logits are formed:

* :func:`info_nce_from_similarities` and :func:`info_nce_streaming` take similarities as given
  and form ``s_j - s+`` in float64 (where the difference of two float32 numbers is exact) before
  the division by ``tau``, then round once: the result is exact to about ``eps * max|z|``
  relative to those similarities, even at ``tau = 1e-4``.
* :func:`info_nce` forms ``z = <beta a, n_j> - <beta a, p>`` with one matrix multiply per chunk
  (the bias folded into it) in the accumulation dtype. In float32 the similarities themselves
  are rounded by the matrix multiply (absolute error about ``eps32 * sqrt(d)``), so forming the
  difference in float64 would not make the result closer to a float64 reference; the error in
  ``z`` is about ``eps32 * beta`` either way. ``accumulate=torch.float64`` computes everything
  from float32 embeddings in float64 instead (exact to about ``1e-15``, at several times the
  cost on a CPU, more on most GPUs).

Value checks and the device (``check_values``, every loss function): by default
(``check_values=None``: on in eager mode, off while ``torch.compile`` traces the call, the
compile-friendly default; ``True`` or ``False`` force either) the inputs are checked finite and on
the unit sphere, a tensor ``tau``
finite and > 0, and the loss finite, and a failing check raises at the call that caused it. These
checks read values back to the host: nothing to wait for on a CPU, one synchronisation per call on
a GPU (the fused path reads all of its checks together with the loss). The default is on because
a NaN input or an overflowing loss is then an error naming its cause, rather than NaN parameters
some steps later. ``check_values=False`` reads no value on the host (nothing waits for the device):
a NaN or infinite input gives a NaN loss, an overflow an ``inf``, rows off the sphere are scored
as given, and a tensor ``tau`` is divided into the anchors (or similarities) on the device, so
that the kernels run at temperature 1 on the same logits (the same loss, rounded differently by
about one unit in the last place; its value is never read, and a tau <= 0 is not detected). With
``gather=True`` the processes' shapes are then not compared first (a mismatch fails inside the
collective, or hangs it). Checks of shapes, dtypes and options read no device value and always
run. ``meta`` tensors (shape inference) have no values: their value checks are skipped
(``check_values`` has no effect) and the result has the right shape and dtype.

Edges: with no negative the standard loss of a row is ``log(e^0) = 0`` exactly, with zero
gradient: :func:`info_nce` and :func:`info_nce_from_similarities` with ``k = 0`` (and
:func:`info_nce_streaming` with no negatives) return it (the decoupled variant, ``log 0``,
raises). The same holds for the in-batch forms at ``B = 1`` (:mod:`.in_batch`), the last, partial
batch of an epoch.

``torch.compile``: values and gradients equal the eager ones (tested with
``backend="aot_eager"``). The default (``check_values=None``) reads nothing on the host while
compiling, as ``check_values=False`` does. With ``check_values=True`` every value read on the host
is a graph break (several per call: the checks, a tensor ``tau``'s value, the loss's finiteness).
Without value checks and with a float or a tensor ``tau``, the fused and the chunked paths of every
form, and the pairwise kernel of the local in-batch forms (materialised and by row tiles, its
custom autograd function included), compile without a graph break (measured with ``torch._dynamo.explain`` on inputs that need
gradients), except on the first call of the fused path for a new dtype and device, whose backward
pass caches a constant zero (a side effect that breaks the graph once); ``gather=True`` (the
collectives) was not measured.

This module holds the public functions and their argument checks; the kernels are private
modules: :mod:`._similarity` (from similarities), :mod:`._chunked` and :mod:`._fused` (from
embeddings, chosen by :mod:`._embedding`), the log-sum-exp forms in :mod:`._logsumexp`.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from ..utils.validation import check_bool, check_float_tensor
from ._common import (
    ACCUMULATE_DTYPES,
    REDUCTIONS,
    accumulation_dtype,
    check_accumulate,
    check_batch,
    check_negatives,
    check_options,
    finite_loss,
    fold_scale,
    fold_temperature,
    inverse_temperature,
    resolve_variant,
    scale_factor,
    scale_stretch,
    split_tau,
    temperature_of,
    values_checked,
    without_autocast,
    zero_loss,
)
from ._embedding import embedding_loss
from ._logsumexp import RunningLogSumExp, centred_logits
from ._norm_checks import check_unit_norm
from ._similarity import similarity_loss
from ._variant import VARIANTS

__all__ = ["ACCUMULATE_DTYPES", "REDUCTIONS", "VARIANTS", "info_nce", "info_nce_from_similarities",
           "info_nce_streaming"]


@without_autocast
def info_nce_streaming(s_pos: torch.Tensor, s_neg_chunks: Iterable[torch.Tensor], tau: float | torch.Tensor, *,
                       variant: str = "standard", reduction: str = "mean", accumulate: torch.dtype | None = None,
                       check_values: bool | None = None) -> torch.Tensor:
    """InfoNCE from similarities that arrive in chunks of negatives (running log-sum-exp).

    Args:
        s_pos: (B,) similarities of anchor and positive.
        s_neg_chunks: an iterable of (B, m_i) tensors, the similarities of each anchor with the
            next m_i negatives; at least one negative in all. Only one chunk is held at a time.
        tau, variant, reduction, accumulate, check_values: as in :func:`info_nce_from_similarities`.
    Returns:
        As :func:`info_nce_from_similarities` over the concatenated chunks (same value; no
        negative in all: 0 in the standard variant).
        Differentiable by plain autograd (to any order), which keeps one (B, m_i) tensor per
        chunk for the backward pass (chunks that were consumed cannot be recomputed): for a
        backward pass that holds at most ``B x chunk_size`` similarities, score embeddings with
        :func:`info_nce` and ``chunk_size``. Without gradients only one chunk is held.
    Raises:
        TypeError: non-tensor, non-floating or non-iterable inputs. ValueError: tau not in
        (0, inf); a chunk whose shape is not (B, m); no negatives (decoupled); NaN/inf entries; unknown
        variant, reduction or accumulate dtype. OverflowError: ``1/tau`` or the loss beyond the
        range of the accumulation dtype.

    Examples:
        >>> import torch
        >>> s_pos = torch.tensor([0.5])
        >>> chunks = [torch.tensor([[0.5, 0.5]]), torch.tensor([[0.5]])]
        >>> round(float(info_nce_streaming(s_pos, chunks, 0.1)), 6)  # log(k + 1), k = 3
        1.386294
    """
    check_options(variant, reduction)
    variant = resolve_variant(variant)
    checked = values_checked()
    check_float_tensor(s_pos, "s_pos", finite=checked)
    if s_pos.dim() != 1 or s_pos.shape[0] == 0:
        raise ValueError(f"s_pos must have shape (B,) with B >= 1, got shape {tuple(s_pos.shape)}")
    if isinstance(s_neg_chunks, torch.Tensor) or not hasattr(s_neg_chunks, "__iter__"):
        raise TypeError(f"s_neg_chunks must be an iterable of (B, m) tensors (e.g. a list or a generator), "
                        f"got {type(s_neg_chunks).__name__}")
    tau_value, tau_tensor = split_tau(tau)
    if tau_tensor is None:
        assert tau_value is not None  # (split_tau: a float, a tensor, or both)
        tau = tau_value
    else:
        tau = tau_tensor
    dtype = accumulation_dtype(check_accumulate(accumulate, s_pos.device), s_pos)
    if tau_value is not None:
        inverse_temperature(tau_value, dtype)
    s_pos_given, s_pos = s_pos, s_pos.to(dtype)
    state = RunningLogSumExp(variant)
    k = 0
    for chunk in s_neg_chunks:
        check_float_tensor(chunk, "s_neg chunk", finite=checked)
        if chunk.dim() != 2 or chunk.shape[0] != s_pos.shape[0]:
            raise ValueError(f"each s_neg chunk must have shape (B, m) with B = {s_pos.shape[0]}, "
                             f"got shape {tuple(chunk.shape)}")
        if chunk.shape[1] == 0:
            continue
        k += chunk.shape[1]
        state.update(centred_logits(chunk, s_pos, tau, dtype))
    if k < 1:
        if variant.allows_no_negative:  # log(e^0) = 0 in every row
            return zero_loss(s_pos.shape[0], dtype, reduction, s_pos_given, tau_tensor)
        raise ValueError("k (number of negatives) must be >= 1 in the decoupled variant (its loss log 0 is "
                         "undefined), got no negatives in s_neg_chunks")
    return finite_loss(state.value(), reduction, dtype, tau_value)


@without_autocast
def info_nce_from_similarities(s_pos: torch.Tensor, s_neg: torch.Tensor, tau: float | torch.Tensor, *,
                               variant: str = "standard", reduction: str = "mean", chunk_size: int | None = None,
                               accumulate: torch.dtype | None = None, check_values: bool | None = None) -> torch.Tensor:
    """InfoNCE from similarities (book eq. ``notation-infonce``).

    Args:
        s_pos: (B,) similarities ``s(x, x+)`` of anchor and positive (cosines, in [-1, 1] for
            embeddings on the sphere; any finite reals are accepted here).
        s_neg: (B, k) similarities ``s(x, x_j-)`` of anchor and its k negatives (k >= 1; k = 0
            only in the standard variant, whose loss is then 0).
        tau: temperature, finite and > 0 (a float, or a 0-d tensor for a learnable temperature);
            ``1/tau`` must not exceed the largest number of the accumulation dtype (float32:
            ``tau >= 2.94e-39``).
        variant: ``"standard"`` (positive in the denominator) or ``"decoupled"`` (left out).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        chunk_size: process negatives in chunks of this many (running log-sum-exp); ``None``
            processes all k at once. Apart from the input ``s_neg`` itself (and its gradient),
            at most ``B x chunk_size`` logits are held, forward and backward.
        accumulate: dtype of the logits and sums: ``None`` (default:
            ``promote(input dtype, float32)``), ``torch.float32`` or ``torch.float64``. Float32
            accumulation is accurate to about ``eps32 (1 + max|z|)`` relative (``z`` the centred
            logits, up to ``2/tau`` for cosines); ``torch.float64`` gives float32 similarities
            the float64 result (to about 1e-15 relative), which the book's numerics guarantee
            (1e-6 relative for every tau in [1e-4, 1e2]) rests on below ``tau`` of about 0.2
            (book: "Input validation and failure modes").
        check_values: run the checks that read values on the host (finite inputs, a valid
            tensor ``tau``, a finite loss; default None: on in eager mode, off under
            ``torch.compile``); False reads none, so nothing waits
            for the device (module docstring, "Value checks"; a tensor ``tau`` is then divided
            into the similarities, in float64).
    Returns:
        Loss in nats: a scalar for "mean"/"sum", shape (B,) for "none". Dtype
        ``promote(s_pos.dtype, float32)``, or ``accumulate`` when given (also under
        ``torch.autocast``, which the loss switches off for itself). With all similarities equal
        the standard loss is exactly ``log(k+1)`` (chance level) and the decoupled one
        ``log k``. Differentiable in ``s_pos``, ``s_neg`` and a tensor ``tau``, to any order
        (second derivatives materialise the (B, k) logits).
    Raises:
        TypeError: non-tensor or non-floating inputs. ValueError: tau not in (0, inf); ranks or
        batch sizes disagree (both shapes are named); k < 1 (decoupled); empty batch; NaN/inf entries;
        unknown variant, reduction or accumulate dtype. OverflowError: ``1/tau`` or the loss
        beyond the range of the accumulation dtype (e.g. ``tau = 1e-40`` in float32).
    Source: van den Oord et al. (2018), eq. 4; decoupled variant: Yeh et al. (2022).

    Examples:
        >>> import torch
        >>> s_pos, s_neg = torch.tensor([0.2]), torch.tensor([[0.2, 0.2, 0.2]])
        >>> round(float(info_nce_from_similarities(s_pos, s_neg, 0.1)), 6)  # log(k + 1), k = 3
        1.386294
        >>> round(float(info_nce_from_similarities(s_pos, s_neg, 0.1, variant="decoupled")), 6)  # log k
        1.098612
    """
    chunk_size = check_options(variant, reduction, chunk_size)
    variant = resolve_variant(variant)
    checked = values_checked()
    check_float_tensor(s_pos, "s_pos", finite=checked)
    check_float_tensor(s_neg, "s_neg", finite=checked)
    accumulate = check_accumulate(accumulate, s_pos.device)
    if s_pos.dim() != 1:
        raise ValueError(f"s_pos must have shape (B,), got shape {tuple(s_pos.shape)}")
    if s_neg.dim() != 2 or s_neg.shape[0] != s_pos.shape[0]:
        raise ValueError(
            f"s_neg must have shape (B, k) with B = len(s_pos); got s_pos {tuple(s_pos.shape)}, "
            f"s_neg {tuple(s_neg.shape)}"
        )
    check_batch(s_pos.shape[0], "s_pos")
    if not variant.allows_no_negative or s_neg.shape[1]:
        check_negatives(s_neg.shape[1], "s_neg", s_neg.shape)
    tau_value, tau_tensor = split_tau(tau)
    dtype = accumulation_dtype(accumulate, s_pos, s_neg)
    if s_neg.shape[1] == 0:  # standard variant, no negative: log(e^0) = 0 in every row
        return zero_loss(s_pos.shape[0], dtype, reduction, s_pos, s_neg, tau_tensor)
    if tau_value is None:  # a tensor tau, not read: the similarities divided by it on the device
        assert tau_tensor is not None  # (split_tau: a float, a tensor, or both)
        wide = torch.float32 if s_pos.device.type == "mps" else torch.float64
        s_pos, s_neg = fold_temperature(s_pos, tau_tensor, wide), fold_temperature(s_neg, tau_tensor, wide)
        tau_value, tau_tensor = 1.0, None
    return similarity_loss(s_pos, s_neg, tau_value, tau_tensor, variant, chunk_size, dtype, reduction)


@without_autocast
def info_nce(anchor: torch.Tensor, positive: torch.Tensor, negatives: torch.Tensor,
             tau: float | torch.Tensor | None = None, *, variant: str = "standard", reduction: str = "mean",
             chunk_size: int | None = None, require_unit_norm: bool = True, accumulate: torch.dtype | None = None,
             check_values: bool | None = None, logit_scale: torch.Tensor | None = None) -> torch.Tensor:
    """InfoNCE loss with k negatives (book eq. ``notation-infonce``), from embeddings.

    Args:
        anchor: (B, d) embeddings ``phi(x)`` on the unit sphere.
        positive: (B, d) embeddings ``phi(x+)``.
        negatives: (B, k, d) negatives per anchor, or (k, d) negatives shared by all anchors
            (in-batch or memory-bank practice; across processes, gather them with
            :func:`infonce_book.losses.gather_with_grad`); k >= 1 (k = 0 only in the standard
            variant, whose loss is then 0 with zero gradient).
        tau: temperature, finite and > 0 (float or 0-d tensor; a tensor that requires grad gets
            its gradient); ``1/tau`` must not exceed the largest number of the accumulation
            dtype (float32: ``tau >= 2.94e-39``).
        variant: ``"standard"`` or ``"decoupled"`` (positive left out of the denominator).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        chunk_size: score negatives in chunks of this many with a running log-sum-exp, so at
            most ``B x chunk_size`` similarities are held at once, in the forward and in the
            backward pass (which recomputes them; ``None``: all k at once). Each chunk is one
            matrix multiply; on a CPU a chunk of ``B x chunk_size`` about 1 MB (so
            ``chunk_size`` near ``2**18 / B``) keeps it in cache. When one chunk holds all k
            and ``B k <= 2^16``, a fused path is taken (one matrix multiply and a softmax; it
            keeps the (B, k) softmax, 2^16 entries at most, for the backward pass).
        require_unit_norm: check that all rows have norm 1 (the theory lives on the sphere);
            the negatives are checked chunk by chunk as they are scored, which also proves their
            entries finite.
        accumulate: dtype of the similarities, logits and sums: ``None`` (default:
            ``promote(input dtype, float32)``), ``torch.float32`` or ``torch.float64``
            (float32 embeddings scored in float64: exact to about 1e-15 relative, about twice
            the time on a CPU). Float32 accumulation is accurate to about ``eps32 (1 + 2/tau)``
            relative (loss; gradients normwise), and its gradients lose about ``eps32 sqrt(k)``
            more at large k; the book's guarantee of 1e-6 relative to float64 for every tau in
            [1e-4, 1e2] and k up to 10^6 holds with ``accumulate=torch.float64`` (needed below
            tau of about 0.2, and for the gradients at k beyond about 10^5; book: "Input
            validation and failure modes").
        check_values: run the checks that read values on the host (the unit norms or finite
            entries, a valid tensor ``tau``, a finite loss; default None: on in eager mode, off
            under ``torch.compile``); False reads none,
            so nothing waits for the device, and ``require_unit_norm`` is then not checked
            (module docstring, "Value checks").
    Returns:
        Loss in nats: scalar for "mean"/"sum", (B,) for "none"; dtype ``accumulate`` (default
        ``promote(dtype, float32)``, also under ``torch.autocast``, which the loss switches off
        for itself). Differentiable in the three embeddings and a tensor ``tau``, to any order;
        first derivatives of the chunked path keep only the inputs and a few (B,) and (B, d)
        tensors; a backward pass with ``create_graph=True`` (second derivatives) materialises
        the (B, k) logits.
    Raises:
        TypeError: non-tensor or integer inputs. ValueError: tau not in (0, inf); shapes disagree
        (names both shapes); k < 1 (decoupled); empty batch; NaN/inf entries; rows not of unit norm;
        unknown variant, reduction or accumulate dtype. OverflowError: ``1/tau`` or the loss
        beyond the range of the accumulation dtype.
    Source: van den Oord et al. (2018), eq. 4; decoupled variant: Yeh et al. (2022).

    Examples:
        >>> import torch
        >>> x = torch.nn.functional.normalize(torch.tensor([[1.0, 2.0]]), dim=-1)
        >>> round(float(info_nce(x, x, torch.cat([x, x]), 0.5)), 6)  # all similarities equal: log(k + 1)
        1.098612
    """
    chunk_size = check_options(variant, reduction, chunk_size)
    variant = resolve_variant(variant)
    check_bool(require_unit_norm, "require_unit_norm")
    checked = values_checked()
    for name, t in (("anchor", anchor), ("positive", positive), ("negatives", negatives)):
        check_float_tensor(t, name, finite=checked and not require_unit_norm)  # else the norm check covers it
    accumulate = check_accumulate(accumulate, anchor.device)
    _check_embedding_shapes(anchor, positive, negatives, allow_no_negative=variant.allows_no_negative)
    require_unit_norm = require_unit_norm and checked
    tau_value, tau_tensor, scale = temperature_of(tau, logit_scale)
    dtype = accumulation_dtype(accumulate, anchor, positive, negatives)
    if negatives.shape[-2] == 0:  # standard variant, no negative: log(e^0) = 0 in every row
        for x, name in ((anchor, "anchor"), (positive, "positive")) if require_unit_norm else ():
            check_unit_norm(x, name)
        return zero_loss(anchor.shape[0], dtype, reduction, anchor, positive, negatives,
                         tau_tensor if scale is None else scale)
    # With require_unit_norm the negatives are checked chunk by chunk as they are scored (a
    # separate pass over a (k, d) matrix costs about as much as scoring it against a small batch).
    unit_norm = ((anchor, "anchor"), (positive, "positive")) if require_unit_norm else ()
    stretch = None
    if scale is not None:  # CLIP's logit_scale: the anchors times exp(scale) (up to its cap), at temperature 1
        anchor, tau_value, tau_tensor = fold_scale(anchor, scale_factor(scale, dtype), dtype), 1.0, None
        stretch = scale_stretch(scale, dtype)
    elif tau_value is None:  # a tensor tau, not read: the anchors divided by it on the device
        assert tau_tensor is not None  # (temperature_of: a float, a tensor, or both, without a scale)
        anchor, tau_value, tau_tensor = fold_temperature(anchor, tau_tensor, dtype), 1.0, None
    return embedding_loss(anchor, positive, negatives, tau_value, tau_tensor, variant, chunk_size,
                          dtype, reduction, unit_norm, require_unit_norm, stretch=stretch)


def _check_embedding_shapes(anchor: torch.Tensor, positive: torch.Tensor, negatives: torch.Tensor,
                            allow_no_negative: bool = False) -> None:
    """ValueError unless ``anchor`` and ``positive`` are (B, d) with B >= 1 and ``negatives`` is
    (B, k, d) or (k, d) with k >= 1 (or k = 0 with ``allow_no_negative``; the messages name both
    shapes)."""
    if anchor.dim() != 2:
        raise ValueError(f"anchor must have shape (B, d), got shape {tuple(anchor.shape)}")
    if positive.shape != anchor.shape:
        raise ValueError(
            f"positive must have the anchor's shape (B, d); got anchor {tuple(anchor.shape)}, "
            f"positive {tuple(positive.shape)}"
        )
    B, d = anchor.shape
    check_batch(B, "anchor")
    if negatives.dim() == 3:
        if negatives.shape[0] != B or negatives.shape[2] != d:
            raise ValueError(
                f"negatives of rank 3 must have shape (B, k, d) = ({B}, k, {d}); got anchor "
                f"{tuple(anchor.shape)}, negatives {tuple(negatives.shape)}"
            )
    elif negatives.dim() == 2:
        if negatives.shape[1] != d:
            raise ValueError(
                f"shared negatives must have shape (k, d) with d = {d}; got anchor "
                f"{tuple(anchor.shape)}, negatives {tuple(negatives.shape)}"
            )
    else:
        raise ValueError(f"negatives must have shape (B, k, d) or (k, d), got shape {tuple(negatives.shape)}")
    if not allow_no_negative:
        check_negatives(negatives.shape[-2], "negatives", negatives.shape)
