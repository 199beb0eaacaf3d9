"""Chapter 4, continuity of the loss: in the similarity vector (Proposition ``c4-prop-continuity``),
the Lipschitz constants in the parameters (Theorem ``c4-thm-lipschitz``), and in the embeddings
with the largest softmax weight and the tunable Donsker--Varadhan constant (Proposition
``c4-prop-embedding``, Corollaries ``c4-cor-embedding`` and ``c4-cor-dv``).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ...losses import VARIANTS
from ...utils.validation import check_choice, check_k, check_scalar, check_tau, exp_or_raise

CONTINUITY_KINDS = ("average", "max", "dv")


def _check_similarities(x, name: str, shape_hint: str) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        if not torch.is_floating_point(x):
            raise TypeError(f"{name} must be a floating-point array, got dtype {x.dtype}")
        x = x.detach().cpu().double().numpy()
    arr = np.asarray(x)
    if arr.dtype.kind not in "fc" and arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be a real array of shape {shape_hint}, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    if arr.size and (arr.min() < -1.0 - 1e-12 or arr.max() > 1.0 + 1e-12):
        raise ValueError(
            f"{name} must lie in [-1, 1] (similarities of embeddings in the unit ball), got values "
            f"in [{arr.min():.6g}, {arr.max():.6g}]")
    return arr


def continuity_bound(s_pos, s_neg, s_pos_new, s_neg_new, tau, *, kind: str = "average", gamma=None,
                     variant: str = "standard") -> np.ndarray:
    """Upper bound on ``|l(s') - l(s)|`` for two similarity vectors in ``[-1, 1]^{k+1}``.

    With ``beta = 1/tau``, ``h+ = s_pos_new - s_pos`` and ``h_j = s_neg_new[:, j] - s_neg[:, j]``:

    * ``"average"``: ``beta |h+| + beta e^{2 beta} / (k+1) sum_j |h_j|`` (standard variant;
      ``/k`` for the decoupled one) -- an average over the negatives;
    * ``"max"``: ``beta |h+| + beta max_j |h_j|``;
    * ``"dv"`` (Donsker--Varadhan): ``beta |h+| + (beta/gamma) [2 beta + log((1/k) sum_j e^{gamma |h_j|})]``
      for a given ``gamma > 0``; with ``gamma=None``, the minimum over a log-spaced grid of 49
      values of gamma in [1e-2, 1e4] together with the max bound (the gamma -> inf limit); each
      member of the family is a valid bound, so the minimum is one too.

    Args:
        s_pos, s_pos_new: (B,) similarities of anchor and positive before and after.
        s_neg, s_neg_new: (B, k) similarities of anchor and negatives before and after, k >= 1.
        tau: temperature in (0, inf). kind: "average", "max" or "dv". gamma: None or a float > 0
            (only for "dv"). variant: "standard" or "decoupled".
    Returns:
        float64 array (B,), in nats.
    Raises:
        TypeError: non-real input. ValueError: shapes disagree; entries outside [-1, 1] or not
        finite; tau or gamma out of range; unknown kind or variant; gamma given for a kind other
        than "dv".
    Source: book, Proposition ``c4-prop-continuity`` (our reconstruction of the paper's
    Proposition 4).
    """
    check_choice(kind, "kind", CONTINUITY_KINDS)
    check_choice(variant, "variant", VARIANTS)
    tau = check_tau(tau)
    beta = 1.0 / tau
    if gamma is not None:
        if kind != "dv":
            raise ValueError(f"gamma is only used with kind='dv', got kind={kind!r}, gamma={gamma!r}")
        gamma = check_scalar(gamma, "gamma", gt=0)  # None instead: the best of a grid
    sp = _check_similarities(s_pos, "s_pos", "(B,)")
    sn = _check_similarities(s_neg, "s_neg", "(B, k)")
    sp2 = _check_similarities(s_pos_new, "s_pos_new", "(B,)")
    sn2 = _check_similarities(s_neg_new, "s_neg_new", "(B, k)")
    if sp.ndim != 1 or sp.shape[0] == 0:
        raise ValueError(f"s_pos must have shape (B,) with B >= 1, got shape {sp.shape}")
    if sn.ndim != 2 or sn.shape[0] != sp.shape[0] or sn.shape[1] < 1:
        raise ValueError(f"s_neg must have shape (B, k) with B = len(s_pos) and k >= 1; got s_pos "
                         f"{sp.shape}, s_neg {sn.shape}")
    if sp2.shape != sp.shape or sn2.shape != sn.shape:
        raise ValueError(f"the new similarities must have the old shapes; got s_pos {sp.shape} -> "
                         f"{sp2.shape}, s_neg {sn.shape} -> {sn2.shape}")
    k = sn.shape[1]
    hp = np.abs(sp2 - sp)
    hn = np.abs(sn2 - sn)
    if kind == "average":
        denom = (k + 1) if variant == "standard" else k
        total = hn.sum(axis=1)
        # beta e^{2 beta} / denom * sum_j |h_j|, formed in log space (0 where no negative moved)
        with np.errstate(divide="ignore"):
            log_avg = math.log(beta) + 2.0 * beta - math.log(denom) + np.log(total)
        avg = exp_or_raise(np.where(total > 0, log_avg, -np.inf), "the average form's term "
                            "beta e^(2 beta)/(k+1) sum_j |h_j|", tau, "; kind='max' or 'dv' stays finite")
        return beta * hp + avg
    hmax = hn.max(axis=1)
    if kind == "max":
        return beta * (hp + hmax)
    gammas = np.array([gamma]) if gamma is not None else np.logspace(-2, 4, 49)
    # (1/g) log mean e^{g h} = hmax + (1/g) log mean e^{g (h - hmax)}: stable for large g.
    dv = np.stack([hmax + (2.0 * beta + np.log(np.mean(np.exp(g * (hn - hmax[:, None])), axis=1))) / g
                   for g in gammas], axis=1)
    best = dv.min(axis=1)
    if gamma is None:
        best = np.minimum(best, hmax)
    return beta * (hp + best)


def _real_array(x, name: str) -> np.ndarray:
    """``x`` as a float64 array; TypeError naming ``name`` if it is not real-valued."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiu" or arr.dtype == bool:
        raise TypeError(f"{name} must be a real array, got dtype {arr.dtype}")
    return arr.astype(np.float64)


def loss_lipschitz_constant(L_anchor, L_pos, L_neg, tau, *, kind: str = "average",
                            variant: str = "standard") -> np.ndarray:
    """Lipschitz constant of ``theta -> l_k(theta; z)`` for embeddings into the unit ball with
    ``|phi_theta(x) - phi_theta'(x)| <= L(x) |theta - theta'|`` (book, Theorem ``c4-thm-lipschitz``).

    * ``"average"``: ``beta (L(x) + L(x+)) + beta e^{2 beta} k/(k+1) (L(x) + (1/k) sum_j L(x_j))``
      (``k/(k+1)`` is 1 for the decoupled variant);
    * ``"max"``: ``beta (L(x) + L(x+)) + beta (L(x) + max_j L(x_j))``.

    Args:
        L_anchor, L_pos: (B,) parameter-Lipschitz constants of the anchor and positive (>= 0).
        L_neg: (B, k) those of the negatives. tau: temperature. kind: "average" or "max".
    Returns:
        float64 array (B,), in nats per unit of parameter distance.
    """
    check_choice(kind, "kind", ("average", "max"))
    check_choice(variant, "variant", VARIANTS)
    tau = check_tau(tau)
    beta = 1.0 / tau
    La, Lp, Ln = (_real_array(v, name) for v, name in ((L_anchor, "L_anchor"), (L_pos, "L_pos"), (L_neg, "L_neg")))
    if La.ndim != 1 or Lp.shape != La.shape or Ln.ndim != 2 or Ln.shape[0] != La.shape[0] or Ln.shape[1] < 1:
        raise ValueError(f"shapes must be L_anchor (B,), L_pos (B,), L_neg (B, k); got {La.shape}, "
                         f"{Lp.shape}, {Ln.shape}")
    for name, v in (("L_anchor", La), ("L_pos", Lp), ("L_neg", Ln)):
        if not np.all(np.isfinite(v)) or np.any(v < 0):
            bad = v[~np.isfinite(v) | (v < 0)].ravel()[0]
            raise ValueError(f"{name} must be finite and >= 0 (Lipschitz constants), got an entry {bad!r}")
    k = Ln.shape[1]
    if kind == "average":
        factor = k / (k + 1) if variant == "standard" else 1.0
        growth = float(exp_or_raise(2.0 * beta, "the softmax factor e^(2 beta)", tau, "; kind='max' stays finite"))
        out = beta * (La + Lp) + beta * growth * factor * (La + Ln.mean(axis=1))
        if not np.all(np.isfinite(out)):
            raise OverflowError(f"the average-form Lipschitz constant overflows float64 at tau={tau!r}")
        return out
    return beta * (La + Lp) + beta * (La + Ln.max(axis=1))


def max_negative_weight(k, tau, *, variant: str = "standard") -> float:
    """The largest softmax weight one negative can carry when every similarity lies in [-1, 1].

    Standard variant: ``p_max = e^{2 beta} / (e^{2 beta} + k)`` (softmax over the positive and k
    negatives); decoupled: ``q_max = e^{2 beta} / (e^{2 beta} + k - 1)`` (over the k negatives).
    Formed as ``1 / (1 + c e^{-2 beta})``: no overflow at any temperature.

    Args:
        k: number of negatives, an integer >= 1. tau: temperature in (0, inf).
        variant: "standard" or "decoupled".
    Returns:
        a float in (0, 1].
    Source: book, Proposition ``c4-prop-continuity`` (part 2).

    Examples:
        >>> round(max_negative_weight(16, 0.5), 6)  # e^4 / (e^4 + 16)
        0.773365
        >>> max_negative_weight(1, 1.0, variant="decoupled")
        1.0
    """
    check_choice(variant, "variant", VARIANTS)
    k = check_k(k)
    beta = 1.0 / check_tau(tau)
    others = k if variant == "standard" else k - 1
    return float(1.0 / (1.0 + others * math.exp(-2.0 * beta)))


def _lipschitz_inputs(L_anchor, L_positive, L_negatives):
    """Validated float64 arrays ``(B,), (B,), (B, k)`` of non-negative finite constants."""
    names = ("L_anchor", "L_positive", "L_negatives")
    La, Lp, Ln = (_real_array(v, name) for v, name in zip((L_anchor, L_positive, L_negatives), names))
    if La.ndim != 1 or Lp.shape != La.shape or Ln.ndim != 2 or Ln.shape[0] != La.shape[0] or Ln.shape[1] < 1:
        raise ValueError(f"shapes must be L_anchor (B,), L_positive (B,), L_negatives (B, k) with k >= 1; "
                         f"got {La.shape}, {Lp.shape}, {Ln.shape}")
    for name, v in zip(names, (La, Lp, Ln)):
        if not np.all(np.isfinite(v)) or np.any(v < 0):
            bad = v[~np.isfinite(v) | (v < 0)].ravel()[0]
            raise ValueError(f"{name} must be finite and >= 0 (Lipschitz constants), got an entry {bad!r}")
    return La, Lp, Ln


def embedding_lipschitz_constant(L_anchor, L_positive, L_negatives, tau, *,
                                 variant: str = "standard") -> np.ndarray:
    """Lipschitz constant of ``theta -> l_k(theta; z)`` obtained by differentiating in the embeddings.

    For embeddings into the closed unit ball with ``|phi_theta(x) - phi_theta'(x)| <= L(x)
    |theta - theta'|``, with ``beta = 1/tau``, ``p_max``/``q_max`` from :func:`max_negative_weight`
    and ``omega_k = min(1, k p_max)``:

    * standard: ``beta [omega_k (2 L(x) + L(x+)) + min(max_j L(x_j), p_max sum_j L(x_j))]``;
    * decoupled: ``beta [2 L(x) + L(x+) + min(max_j L(x_j), q_max sum_j L(x_j))]``.

    It is at most both constants of :func:`loss_lipschitz_constant` ("average" and "max") for
    every tuple, k and tau (book, Corollary ``c4-cor-embedding``). With ``L`` replaced by the
    distances ``|u' - u|``, ``|v_0' - v_0|``, ``|v_j' - v_j|`` between two points of the ball product,
    the same expression bounds ``|g(e') - g(e)|`` (Proposition ``c4-prop-embedding``, part 2).

    Args:
        L_anchor, L_positive: (B,) constants of the anchors and positives (>= 0).
        L_negatives: (B, k) those of the negatives, k >= 1. tau: temperature in (0, inf).
        variant: "standard" or "decoupled".
    Returns:
        float64 array (B,), in nats per unit of parameter distance.
    Raises:
        TypeError: non-real input. ValueError: shapes disagree, a negative or non-finite constant,
        tau out of range, unknown variant.
    Source: book, Corollary ``c4-cor-embedding``.

    Examples:
        >>> import numpy as np
        >>> float(embedding_lipschitz_constant(np.array([2.0]), np.array([2.0]), np.full((1, 16), 2.0), 0.5)[0])
        16.0
    """
    check_choice(variant, "variant", VARIANTS)
    beta = 1.0 / check_tau(tau)
    La, Lp, Ln = _lipschitz_inputs(L_anchor, L_positive, L_negatives)
    k = Ln.shape[1]
    pm = max_negative_weight(k, tau, variant=variant)
    own = min(1.0, k * pm) if variant == "standard" else 1.0
    negatives = np.minimum(Ln.max(axis=1), pm * Ln.sum(axis=1))
    return beta * (own * (2.0 * La + Lp) + negatives)


#: The gamma grid of :func:`tunable_lipschitz_constant` (any grid gives a valid constant).
TUNABLE_GAMMAS = np.logspace(-3, 4, 141)


def tunable_lipschitz_constant(L_anchor, L_positive, L_negatives, tau, *, gamma=None,
                               variant: str = "standard") -> np.ndarray:
    """The Donsker--Varadhan (tunable) Lipschitz constant of ``theta -> l_k(theta; z)``.

    For ``gamma > 0``, with ``omega_k`` as in :func:`embedding_lipschitz_constant` (1 for the
    decoupled variant) and ``q_max = max_negative_weight(k, tau, variant="decoupled")``,

    ``Lambda_gamma(z) = beta omega_k (2 L(x) + L(x+))
    + (beta/gamma) [log(k q_max) + log((1/k) sum_j e^{gamma L(x_j)})]``,

    with ``log(k q_max) <= min(2 beta, log k)``. Every member is a Lipschitz constant, so their
    infimum is one too: with ``gamma=None`` the result is
    ``min(embedding_lipschitz_constant(...), min over TUNABLE_GAMMAS of Lambda_gamma)``, computed
    tuple by tuple (gamma may depend on the tuple: no union bound is involved).

    Args:
        L_anchor, L_positive: (B,); L_negatives: (B, k). tau: temperature. gamma: None or a
        float > 0. variant: "standard" or "decoupled".
    Returns:
        float64 array (B,), in nats per unit of parameter distance.
    Source: book, Corollary ``c4-cor-dv``.
    """
    check_choice(variant, "variant", VARIANTS)
    beta = 1.0 / check_tau(tau)
    La, Lp, Ln = _lipschitz_inputs(L_anchor, L_positive, L_negatives)
    k = Ln.shape[1]
    own = min(1.0, k * max_negative_weight(k, tau)) if variant == "standard" else 1.0
    log_kq = math.log(k * max_negative_weight(k, tau, variant="decoupled"))
    lmax = Ln.max(axis=1)
    gammas = TUNABLE_GAMMAS if gamma is None else np.array([check_scalar(gamma, "gamma", gt=0)])
    best = np.full(La.shape, np.inf)
    for g in gammas:
        # (1/g) log mean e^{g L} = lmax + (1/g) log mean e^{g (L - lmax)}: no overflow
        lme = lmax + np.log(np.mean(np.exp(g * (Ln - lmax[:, None])), axis=1)) / g
        best = np.minimum(best, lme + log_kq / g)
    out = beta * (own * (2.0 * La + Lp) + best)
    if gamma is None:
        out = np.minimum(out, embedding_lipschitz_constant(La, Lp, Ln, tau, variant=variant))
    return out
