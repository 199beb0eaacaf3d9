"""The InfoNCE loss, in log space (book: notation page, eq. ``notation-infonce``).

For one tuple (anchor ``x``, positive ``x+``, negatives ``x_1- ... x_k-``) with similarities
``s+ = <phi(x), phi(x+)>`` and ``s_j = <phi(x), phi(x_j-)>`` and inverse temperature
``beta = 1/tau``::

    standard  : l_k = -beta s+ + log( e^{beta s+} + sum_j e^{beta s_j} )
    decoupled : l_k = -beta s+ + log(               sum_j e^{beta s_j} )

Both are computed from the *centred logits* ``z_j = beta (s_j - s+)``:
``standard = log(1 + sum_j e^{z_j})`` and ``decoupled = log sum_j e^{z_j}``. The differences
``s_j - s+`` are formed (in float64, where the difference of two float32 numbers is exact) before
the division by ``tau``, so no large logits are subtracted (which loses all precision at small
``tau``), and the ``log1p`` form keeps relative precision when the loss is tiny. Nothing is clamped. Low-precision inputs (float16, bfloat16) are computed in
float32; the result has dtype ``promote(input, float32)``.

Negatives can be processed in chunks of ``chunk_size`` with a running log-sum-exp, so that at no
point more than ``B x chunk_size`` similarities are held.
"""

from __future__ import annotations

from typing import Iterable

import torch

from ._validation import check_choice, check_float_tensor, check_tau, check_unit_norm

VARIANTS = ("standard", "decoupled")
REDUCTIONS = ("mean", "sum", "none")


def _tau_value(tau):
    """Validate tau; keep a tensor (for a learnable temperature) or return a float."""
    if isinstance(tau, torch.Tensor):
        check_tau(tau.detach())
        return tau.reshape(())
    return check_tau(tau)


def _reduce(loss: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _centred_logits(s_neg: torch.Tensor, s_pos: torch.Tensor, tau, dtype) -> torch.Tensor:
    """``z = (s_neg - s_pos) / tau`` in ``dtype``.

    The difference and the division are formed in float64 (the difference of two float32
    numbers is exact in float64), then rounded once to ``dtype``: at tau = 1e-4 a float32
    difference alone would put an absolute error of about 1e4 * 6e-8 in every logit.
    """
    wide = torch.float32 if s_neg.device.type == "mps" else torch.float64  # MPS has no float64
    z = (s_neg.to(wide) - s_pos.to(wide).unsqueeze(-1)) / tau
    return z.to(dtype)


class _RunningLogSumExp:
    """Running ``log(c + sum_j e^{z_j})`` over chunks of centred logits ``z`` (shape (B, chunk)).

    ``c = 1`` for the standard variant (the positive's own term, ``e^0``) and ``c = 0`` for the
    decoupled one. The state is a shift ``m`` (detached: the result does not depend on it) and
    ``acc = sum_j e^{z_j - m}``; at the end the standard value is ``m + log1p(expm1(-m) + acc)``,
    exact in relative terms when all ``z_j <= 0`` (then ``m = 0``).
    """

    def __init__(self, include_positive: bool):
        self.include_positive = include_positive
        self.m = None
        self.acc = None

    def update(self, z: torch.Tensor) -> None:
        chunk_max = z.detach().amax(dim=-1)
        if self.include_positive:
            chunk_max = torch.clamp_min(chunk_max, 0.0)  # the shift covers the e^0 term too
        if self.m is None:
            new_m = chunk_max
            self.acc = torch.exp(z - new_m.unsqueeze(-1)).sum(dim=-1)
        else:
            new_m = torch.maximum(self.m, chunk_max)
            self.acc = self.acc * torch.exp(self.m - new_m) + torch.exp(z - new_m.unsqueeze(-1)).sum(dim=-1)
        self.m = new_m

    def value(self) -> torch.Tensor:
        if self.include_positive:
            return self.m + torch.log1p(torch.expm1(-self.m) + self.acc)
        return self.m + torch.log(self.acc)


def _loss_from_centred_chunks(chunks: Iterable[torch.Tensor], variant: str) -> torch.Tensor:
    state = _RunningLogSumExp(include_positive=(variant == "standard"))
    for z in chunks:
        state.update(z)
    return state.value()


def info_nce_streaming(s_pos, s_neg_chunks, tau, *, variant="standard", reduction="mean"):
    """InfoNCE from similarities that arrive in chunks of negatives (running log-sum-exp).

    Args:
        s_pos: (B,) similarities of anchor and positive.
        s_neg_chunks: an iterable of (B, m_i) tensors, the similarities of each anchor with the
            next m_i negatives; at least one negative in all. Only one chunk is held at a time.
        tau, variant, reduction: as in :func:`info_nce_from_similarities`.
    Returns:
        As :func:`info_nce_from_similarities` over the concatenated chunks (same value).
    Raises:
        ValueError: tau not in (0, inf); a chunk whose shape is not (B, m); no negatives;
        NaN/inf entries; unknown variant or reduction.
    """
    check_choice(variant, "variant", VARIANTS)
    check_choice(reduction, "reduction", REDUCTIONS)
    check_float_tensor(s_pos, "s_pos")
    if s_pos.dim() != 1 or s_pos.shape[0] == 0:
        raise ValueError(f"s_pos must have shape (B,) with B >= 1, got shape {tuple(s_pos.shape)}")
    tau = _tau_value(tau)
    dtype = torch.promote_types(s_pos.dtype, torch.float32)
    s_pos = s_pos.to(dtype)
    state = _RunningLogSumExp(include_positive=(variant == "standard"))
    k = 0
    for chunk in s_neg_chunks:
        check_float_tensor(chunk, "s_neg chunk")
        if chunk.dim() != 2 or chunk.shape[0] != s_pos.shape[0]:
            raise ValueError(f"each s_neg chunk must have shape (B, m) with B = {s_pos.shape[0]}, "
                             f"got shape {tuple(chunk.shape)}")
        if chunk.shape[1] == 0:
            continue
        k += chunk.shape[1]
        state.update(_centred_logits(chunk, s_pos, tau, dtype))
    if k < 1:
        raise ValueError("k (number of negatives) must be >= 1, got no negatives in s_neg_chunks")
    return _reduce(state.value(), reduction)


def _chunk_bounds(k: int, chunk_size: int | None):
    step = k if chunk_size is None else chunk_size
    return [(lo, min(lo + step, k)) for lo in range(0, k, step)]


def _check_chunk_size(chunk_size):
    if chunk_size is None:
        return None
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be None or an integer >= 1, got chunk_size={chunk_size!r}")
    return chunk_size


def info_nce_from_similarities(s_pos, s_neg, tau, *, variant="standard", reduction="mean", chunk_size=None):
    """InfoNCE from similarities (book eq. ``notation-infonce``).

    Args:
        s_pos: (B,) similarities ``s(x, x+)`` of anchor and positive (cosines, in [-1, 1] for
            embeddings on the sphere; any finite reals are accepted here).
        s_neg: (B, k) similarities ``s(x, x_j-)`` of anchor and its k >= 1 negatives.
        tau: temperature, finite and > 0 (a float, or a 0-d tensor for a learnable temperature).
        variant: ``"standard"`` (positive in the denominator) or ``"decoupled"`` (left out).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        chunk_size: process negatives in chunks of this many (running log-sum-exp); ``None``
            processes all k at once.
    Returns:
        Loss in nats: a scalar for "mean"/"sum", shape (B,) for "none". Dtype
        ``promote(s_pos.dtype, float32)``. With all similarities equal the standard loss is
        exactly ``log(k+1)`` (chance level) and the decoupled one ``log k``.
    Raises:
        TypeError: non-tensor or non-floating inputs. ValueError: tau not in (0, inf); ranks or
        batch sizes disagree (both shapes are named); k < 1; empty batch; NaN/inf entries;
        unknown variant or reduction.
    Source: van den Oord et al. (2018), eq. 4; decoupled variant: Yeh et al. (2022).
    """
    check_choice(variant, "variant", VARIANTS)
    check_choice(reduction, "reduction", REDUCTIONS)
    chunk_size = _check_chunk_size(chunk_size)
    check_float_tensor(s_pos, "s_pos")
    check_float_tensor(s_neg, "s_neg")
    if s_pos.dim() != 1:
        raise ValueError(f"s_pos must have shape (B,), got shape {tuple(s_pos.shape)}")
    if s_neg.dim() != 2 or s_neg.shape[0] != s_pos.shape[0]:
        raise ValueError(
            f"s_neg must have shape (B, k) with B = len(s_pos); got s_pos {tuple(s_pos.shape)}, "
            f"s_neg {tuple(s_neg.shape)}"
        )
    if s_pos.shape[0] == 0:
        raise ValueError("empty batch: s_pos has B = 0 rows; InfoNCE needs at least one anchor")
    if s_neg.shape[1] < 1:
        raise ValueError(f"k (number of negatives) must be >= 1, got s_neg of shape {tuple(s_neg.shape)}")
    tau = _tau_value(tau)
    dtype = torch.promote_types(torch.promote_types(s_pos.dtype, s_neg.dtype), torch.float32)
    s_pos = s_pos.to(dtype)
    s_neg = s_neg.to(dtype)
    k = s_neg.shape[1]
    chunks = (_centred_logits(s_neg[:, lo:hi], s_pos, tau, dtype) for lo, hi in _chunk_bounds(k, chunk_size))
    return _reduce(_loss_from_centred_chunks(chunks, variant), reduction)


def info_nce(anchor, positive, negatives, tau, *, variant="standard", reduction="mean", chunk_size=None,
             require_unit_norm=True):
    """InfoNCE loss with k negatives (book eq. ``notation-infonce``), from embeddings.

    Args:
        anchor: (B, d) embeddings ``phi(x)`` on the unit sphere.
        positive: (B, d) embeddings ``phi(x+)``.
        negatives: (B, k, d) negatives per anchor, or (k, d) negatives shared by all anchors;
            k >= 1.
        tau: temperature, finite and > 0 (float or 0-d tensor).
        variant: ``"standard"`` or ``"decoupled"`` (positive left out of the denominator).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        chunk_size: score negatives in chunks of this many with a running log-sum-exp, so at
            most ``B x chunk_size`` similarities are held at once (``None``: all at once).
        require_unit_norm: check that all rows have norm 1 (the theory lives on the sphere).
    Returns:
        Loss in nats: scalar for "mean"/"sum", (B,) for "none"; dtype ``promote(dtype, float32)``.
    Raises:
        TypeError: non-tensor or integer inputs. ValueError: tau not in (0, inf); shapes disagree
        (names both shapes); k < 1; empty batch; NaN/inf entries; rows not of unit norm;
        unknown variant or reduction.
    Source: van den Oord et al. (2018), eq. 4; decoupled variant: Yeh et al. (2022).
    """
    check_choice(variant, "variant", VARIANTS)
    check_choice(reduction, "reduction", REDUCTIONS)
    chunk_size = _check_chunk_size(chunk_size)
    for name, t in (("anchor", anchor), ("positive", positive), ("negatives", negatives)):
        check_float_tensor(t, name)
    if anchor.dim() != 2:
        raise ValueError(f"anchor must have shape (B, d), got shape {tuple(anchor.shape)}")
    if positive.shape != anchor.shape:
        raise ValueError(
            f"positive must have the anchor's shape (B, d); got anchor {tuple(anchor.shape)}, "
            f"positive {tuple(positive.shape)}"
        )
    B, d = anchor.shape
    if B == 0:
        raise ValueError("empty batch: anchor has B = 0 rows; InfoNCE needs at least one anchor")
    if negatives.dim() == 3:
        if negatives.shape[0] != B or negatives.shape[2] != d:
            raise ValueError(
                f"negatives of rank 3 must have shape (B, k, d) = ({B}, k, {d}); got anchor "
                f"{tuple(anchor.shape)}, negatives {tuple(negatives.shape)}"
            )
        shared = False
    elif negatives.dim() == 2:
        if negatives.shape[1] != d:
            raise ValueError(
                f"shared negatives must have shape (k, d) with d = {d}; got anchor "
                f"{tuple(anchor.shape)}, negatives {tuple(negatives.shape)}"
            )
        shared = True
    else:
        raise ValueError(f"negatives must have shape (B, k, d) or (k, d), got shape {tuple(negatives.shape)}")
    k = negatives.shape[-2]
    if k < 1:
        raise ValueError(f"k (number of negatives) must be >= 1, got negatives of shape {tuple(negatives.shape)}")
    if require_unit_norm:
        check_unit_norm(anchor, "anchor")
        check_unit_norm(positive, "positive")
        check_unit_norm(negatives, "negatives")
    tau = _tau_value(tau)
    dtype = torch.promote_types(anchor.dtype, torch.float32)
    a = anchor.to(dtype)
    s_pos = (a * positive.to(dtype)).sum(dim=-1)

    def chunks():
        for lo, hi in _chunk_bounds(k, chunk_size):
            if shared:
                s = a @ negatives[lo:hi].to(dtype).T
            else:
                s = torch.einsum("bd,bkd->bk", a, negatives[:, lo:hi].to(dtype))
            yield _centred_logits(s, s_pos, tau, dtype)

    return _reduce(_loss_from_centred_chunks(chunks(), variant), reduction)
