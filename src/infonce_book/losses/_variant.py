"""The loss variants, resolved in one place: :class:`Variant` carries what the kernels need of a
variant, so that they receive it and call its methods rather than branch on it.

A row's loss, with ``z_j`` its centred logits (``z_j = y_j - y+``) over the negatives, is
``log(c + sum_j e^{z_j})`` with ``c = 1`` (standard: the positive's own term ``e^0``) or ``c = 0``
(decoupled, Yeh et al. 2022: the positive left out of the denominator). Everything that differs
follows from ``c``:

* the loss from ``R = log sum_j e^{z_j}``: ``softplus(R)`` or ``R`` (:meth:`Variant.row_loss`);
* its derivative in ``R``, the weight of the negatives' softmax: ``sigmoid(R)`` or 1
  (:meth:`Variant.row_factor`, :meth:`Variant.row_factor_fused`, :meth:`Variant.sum_of_weights`);
* a running log-sum-exp's shift, which must cover ``e^0`` when ``c = 1`` and may be ``-inf`` (a row
  with no finite logit yet) when ``c = 0`` (:meth:`Variant.floor_shift`, :meth:`Variant.shift_of`,
  :meth:`Variant.rescale`, :meth:`Variant.log_total`);
* a row without negatives: ``log 1 = 0`` or the undefined ``log 0`` (:attr:`Variant.allows_no_negative`);
* whether the row loss is linear in ``R`` (unbounded below: :attr:`Variant.linear_rows`).

Adding a variant (another constant ``c``, or another row formula): a member here and its methods;
the kernels (:mod:`._logsumexp`, :mod:`._fused`, :mod:`._pairwise`, :mod:`._masked`, ...) need no
change, and the public ``variant=`` strings come from :data:`VARIANTS`.
"""

from __future__ import annotations

import enum

import torch

__all__ = ["VARIANTS", "Variant"]

_NEG_INF = float("-inf")


def _softplus(x: torch.Tensor) -> torch.Tensor:
    """``log(1 + e^x)``, exact in relative terms for very negative ``x``: torch's softplus is
    ``log1p(exp(x))`` below its threshold and ``x`` above it; at 40 the neglected ``e^{-x}`` is
    below float64's rounding of ``x``."""
    return torch.nn.functional.softplus(x, beta=1.0, threshold=40.0)


class Variant(str, enum.Enum):
    """The loss variants (a ``str``, so it compares equal to its name), with the behaviour that
    the kernels ask of them (module docstring)."""

    STANDARD = "standard"
    DECOUPLED = "decoupled"

    # ---- properties --------------------------------------------------------------------------

    @property
    def include_positive(self) -> bool:
        """Whether the positive's term ``e^0`` is in the denominator (``c = 1``)."""
        return self is Variant.STANDARD

    @property
    def allows_no_negative(self) -> bool:
        """Whether a row without negatives has a loss (standard: exactly 0) rather than the
        undefined ``log 0`` (decoupled raises)."""
        return self is Variant.STANDARD

    @property
    def linear_rows(self) -> bool:
        """Whether the row loss is ``R`` itself (decoupled): unbounded below, so that rows may
        overflow to +inf and -inf alike."""
        return self is Variant.DECOUPLED

    @property
    def weighted_rows(self) -> bool:
        """Whether the row factor of the backward pass depends on the row's value (standard:
        ``sigmoid(R)``; decoupled: 1)."""
        return self is Variant.STANDARD

    # ---- the row loss and its derivative -----------------------------------------------------

    def row_loss(self, r: torch.Tensor) -> torch.Tensor:
        """The loss of rows whose negatives have the centred log-sum-exp ``r``: ``softplus(r)``
        (standard) or ``r`` itself (decoupled; not a copy)."""
        return _softplus(r) if self.include_positive else r

    def row_factor(self, r: torch.Tensor, cg: torch.Tensor) -> torch.Tensor:
        """``d loss/d r`` times ``cg`` (0-d or broadcast against ``r``): ``sigmoid(r) cg``
        (standard) or ``cg`` expanded to ``r``'s shape (decoupled)."""
        if self.include_positive:
            return torch.sigmoid(r).mul_(cg)
        return cg.expand(r.shape)

    def row_factor_fused(self, lse: torch.Tensor | None, g: torch.Tensor, c: float, zero: torch.Tensor,
                         rows: int) -> torch.Tensor:
        """``c sigmoid(lse) g`` as one ``addcmul`` (standard; ``zero`` a 0-d zero) or ``g c``
        expanded to (rows, 1) (decoupled; ``lse`` unused, None)."""
        if self.include_positive:
            assert lse is not None
            return torch.addcmul(zero, torch.sigmoid(lse), g, value=c)
        return (g * c).expand(rows, 1)

    def sum_of_weights(self, lse: torch.Tensor) -> torch.Tensor:
        """``sum_j p_j`` over the negatives of rows with loss ``lse``: ``1 - e^{-lse}``
        (standard; the positive has weight ``e^{-lse}``) or exactly 1 (decoupled)."""
        if self.include_positive:
            return -torch.expm1(-lse)
        return torch.ones_like(lse)

    # ---- running log-sum-exps: the shift and the total ---------------------------------------

    def floor_shift(self, chunk_max: torch.Tensor, offset: torch.Tensor | None = None) -> torch.Tensor:
        """A shift that covers every term: ``chunk_max``, at least 0 (or ``offset``, the
        positive's uncentred logit) when the positive's ``e^0`` is a term (standard)."""
        if not self.include_positive:
            return chunk_max
        return chunk_max.clamp_min(0.0) if offset is None else torch.maximum(chunk_max, offset)

    def shift_of(self, m: torch.Tensor) -> torch.Tensor:
        """The shift to subtract: ``m`` (standard: finite, it covers ``e^0``), or 0 where ``m``
        is ``-inf`` (decoupled: a row with no finite logit, whose sum is 0)."""
        if self.include_positive:
            return m
        return torch.where(m == _NEG_INF, 0.0, m)

    def rescale(self, alpha: torch.Tensor, m_old: torch.Tensor) -> torch.Tensor:
        """The factor ``alpha = e^{shift_old - shift}`` for an earlier sum, 0 where that sum was
        over no finite logit (decoupled, ``m_old = -inf``: it was 0)."""
        if self.include_positive:
            return alpha
        return torch.where(m_old == _NEG_INF, 0.0, alpha)

    def log_total(self, m: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
        """``log(c e^{-m} + acc)``, the log-sum-exp less its shift ``m``: with ``c = 1``
        ``log1p(expm1(-m) + acc)`` (exact in relative terms when the loss is tiny), with ``c = 0``
        ``log(acc)``."""
        if self.include_positive:
            return torch.log1p(torch.expm1(-m) + acc)
        return torch.log(acc)

    def stretch_top(self, top: torch.Tensor) -> torch.Tensor:
        """The row's largest centred logit as a ``log(c + sum_j e^{z_j})`` sees it: at least 0
        when the positive's ``e^0`` is a term (standard)."""
        return top.clamp_min(0.0) if self.include_positive else top


VARIANTS = tuple(v.value for v in Variant)
