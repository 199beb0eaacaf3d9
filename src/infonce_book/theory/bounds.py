"""Bounds of the book, as functions the chapters plot and the tests check.

C1 (book, Theorem ``c1-thm-rate``): for every embedding into the sphere, every anchor and every
k >= 1, with ``beta = 1/tau``, ``U = W+/mu``, ``V = W/mu`` and ``a = e^-beta / mu <= 1`` a lower
bound of ``T``:

    u1/k - (v2 + u2/k) / (2 a k)  <=  E[log T | x]  <=  log(1 + u1/k)  <=  u1/k   (standard)
         - v2 / (2 a k)           <=  E[log T | x]  <=  0                          (decoupled)

and, uniformly over embeddings, ``|L_k - log k - L_inf| <= C(tau)/k`` with
``C(tau) = max(e^{2 beta}, e^{4 beta} / 2)``.

The Lipschitz-of-log argument (Wang & Isola 2020, proof of Thm 1) bounds the same bias by
``e^beta E|S'/k - mu|`` with ``S' = W+ + sum_j W_j``, which is ``O(k^{-1/2})``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..losses import VARIANTS
from ..utils.validation import check_choice, check_k, check_scalar, check_tau, exp_or_raise


def _ks(k) -> np.ndarray:
    ks = np.atleast_1d(k)
    if ks.size == 0:
        raise ValueError("k must hold at least one number of negatives (an integer >= 1), got an empty array")
    return np.array([check_k(v) for v in ks], dtype=np.float64)


def bias_bounds(k, *, u1: float, u2: float, v2: float, a: float, variant: str = "standard"):
    """Lower and upper bounds on ``E[log T | x] = L_k - log k - L_inf`` (given x).

    Args:
        k: int or array of ints >= 1.
        u1, u2: ``E[U]``, ``E[U^2]`` for ``U = W+/mu``; v2: ``Var(W)/mu^2``.
        a: a lower bound on ``T`` in (0, 1] (``e^-beta/mu`` always qualifies).
        variant: ``"standard"`` or ``"decoupled"``.
    Returns:
        ``(lower, upper)``: float64 arrays of k's shape, in nats.
    Source: book, Theorem ``c1-thm-rate`` (ii); sympy form
    :func:`infonce_book.symbolic.nonasymptotic_bias_bounds`.
    """
    check_choice(variant, "variant", VARIANTS)
    a = check_scalar(a, "a", gt=0)
    if not a <= 1.0:
        raise ValueError(f"a must be in (0, 1] (a lower bound on T), got a={a!r}")
    u1, u2, v2 = check_scalar(u1, "u1", ge=0), check_scalar(u2, "u2", ge=0), check_scalar(v2, "v2", ge=0)
    if u2 < u1 * u1 * (1.0 - 1e-12):
        raise ValueError(f"u2 = E[U^2] must be >= u1^2 = E[U]^2 (moments of one law), got u1={u1!r}, u2={u2!r}")
    kk = _ks(k)
    if variant == "standard":
        lower = u1 / kk - (v2 / kk + u2 / kk**2) / (2.0 * a)
        upper = np.log1p(u1 / kk)
    else:
        lower = -(v2 / kk) / (2.0 * a)
        upper = np.zeros_like(kk)
    return lower, upper


def uniform_bias_constant(tau) -> float:
    """``C(tau)`` of Theorem ``c1-thm-rate`` (iii): ``|L_k - log k - L_inf| <= C(tau)/k`` for
    every embedding into the sphere, every Markov kernel and every k >= 1 (both variants).

    ``C(tau) = max(e^{2 beta}, e^{4 beta} / 2)``, ``beta = 1/tau``; raises OverflowError where it
    exceeds the float64 range (tau below about 0.0056).
    Source: book, Theorem ``c1-thm-rate`` (iii); sympy: :func:`infonce_book.symbolic.uniform_bias_constant`.
    """
    beta = 1.0 / check_tau(tau)
    log_c = max(2.0 * beta, 4.0 * beta - math.log(2.0))
    if log_c > 709.0:
        raise OverflowError(f"C(tau) = exp({log_c:.1f}) overflows float64 at tau={tau!r}")
    return float(math.exp(log_c))


def lipschitz_log_bound(k, *, tau: float, sigma: float, mean_w_pos: float) -> np.ndarray:
    """The ``O(k^{-1/2})`` bound from the Lipschitz continuity of log (Wang & Isola 2020's argument).

    Both ``S'/k`` and ``mu`` are at least ``e^-beta``, and log is ``e^beta``-Lipschitz on
    ``[e^-beta, inf)``, so
    ``|E log(S'/k) - log mu| <= e^beta (E|S/k - mu| + E W+/k) <= e^beta (sigma/sqrt(k) + E W+ / k)``.

    Args:
        k: int or array of ints >= 1. tau: temperature. sigma: sd of a negative weight W given x
            (``sinh(1/tau)`` is the worst case over embeddings). mean_w_pos: ``E[W+ | x]``
            (``e^{1/tau}`` is the worst case).
    Returns:
        float64 array of k's shape, in nats.
    """
    tau = check_tau(tau)
    beta = 1.0 / tau
    sigma, mean_w_pos = check_scalar(sigma, "sigma", ge=0), check_scalar(mean_w_pos, "mean_w_pos", ge=0)
    kk = _ks(k)
    factor = float(exp_or_raise(beta, "the Lipschitz constant e^beta of log", tau))
    out = factor * (sigma / np.sqrt(kk) + mean_w_pos / kk)
    if not np.all(np.isfinite(out)):
        raise OverflowError(f"the Lipschitz-of-log bound overflows float64 at tau={tau!r}")
    return out


def kl_softmax_bound(tau) -> float:
    """Uniform bound on ``KL(Q^phi_tau(x, .) || pi)`` for every embedding into the sphere and every x:
    ``min(1/(2 tau^2), 2/tau)`` nats (book, Theorem ``c3-thm-kl``). Pinsker then gives
    ``TV <= 1/(2 tau)``."""
    beta = 1.0 / check_tau(tau)
    return float(min(beta * beta / 2.0, 2.0 * beta))


def antipodal_kl(tau) -> float:
    """``KL(Q || pi)`` when the similarity is +-1 with probability 1/2 each (two antipodal
    clusters): ``beta tanh(beta) - log cosh(beta)``; it equals ``beta^2/2 + O(beta^4)``, so the
    bound ``beta^2/2`` is tight as tau -> infinity."""
    beta = 1.0 / check_tau(tau)
    log_cosh = beta + math.log1p(math.exp(-2.0 * beta)) - math.log(2.0)
    return float(beta * math.tanh(beta) - log_cosh)


# ---------------------------------------------------------------------------------------------
# C4: continuity of the loss in the similarity vector (book, Proposition ``c4-prop-continuity``).

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


def _real_array(x, name: str) -> np.ndarray:
    """``x`` as a float64 array; TypeError naming ``name`` if it is not real-valued."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiu" or arr.dtype == bool:
        raise TypeError(f"{name} must be a real array, got dtype {arr.dtype}")
    return arr.astype(np.float64)


def rademacher_covering_bound(lipschitz_rms: float, radius: float, n_params: int, n: int) -> float:
    """Upper bound on the empirical Rademacher complexity of ``{z -> l(theta; z) : |theta - theta0| <= D}``
    (book, Theorem ``c4-thm-rademacher``):

    ``R_n <= Lbar min{D, inf_{eps > 0} [eps + D sqrt(2 P log(1 + 2D/eps) / n)]}``,

    with ``Lbar = sqrt((1/n) sum_i Lambda(z_i)^2)`` the root-mean-square Lipschitz constant of the
    sample, ``D`` the radius of the parameter ball, ``P`` the number of parameters. The infimum is
    taken over a fine grid of eps (any eps gives a valid bound); the term ``D`` is the one-point
    net ``{theta0}`` (``|l(theta) - l(theta0)| <= Lambda D``), smaller when n is not much above P.
    """
    L = check_scalar(lipschitz_rms, "lipschitz_rms", ge=0)
    D = check_scalar(radius, "radius", ge=0)
    P = check_k(n_params, "n_params")
    n = check_k(n, "n")
    if D == 0.0 or L == 0.0:
        return 0.0
    eps = D * np.logspace(-8, 1, 2000)
    vals = eps + D * np.sqrt(2.0 * P * np.log1p(2.0 * D / eps) / n)
    return float(L * min(D, vals.min()))


# ---------------------------------------------------------------------------------------------
# C4/C5: continuity in the embeddings, the tunable constant and the vector-contraction route
# (book, Proposition ``c4-prop-embedding``, Corollaries ``c4-cor-embedding`` and ``c4-cor-dv``,
# Theorem ``c4-thm-vector``).


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


def vector_contraction_bound(n, k, tau, *, radius: float, dim_out: int, m2_anchor: float = 1.0,
                             m2_positive: float = 1.0, m2_negatives: float = 1.0,
                             post_lipschitz: float = 1.0, variant: str = "standard") -> float:
    """Upper bound on the Rademacher complexity of the loss class by vector contraction.

    For an embedding ``phi_W(x) = N(W x)`` with ``W`` (``dim_out`` rows) in the Frobenius ball of
    ``radius`` around a fixed ``W0`` and ``N`` a ``post_lipschitz``-Lipschitz map into the unit
    ball on the set the pre-embeddings ``W x`` can reach,

    ``R_hat_n <= sqrt(2) beta post_lipschitz radius sqrt(dim_out / n)
    (2 sqrt(m_a) + sqrt(m_+) + sqrt(k p_max m_-))``,

    where ``m_a``, ``m_+``, ``m_-`` are the mean squared norms of the anchors, positives and
    negatives of the sample (their population values bound the expected complexity ``R_n``, by
    Jensen) and ``k p_max <= min(k, e^{2 beta})``. Cases of the book: ``NormalisedLinear(d, r)``
    on unit inputs: ``radius = r``, ``dim_out = d``, ``post_lipschitz = 1/(1 - r)``, all ``m = 1``;
    ``BallLinear``: ``post_lipschitz = 1`` (the projection onto the ball).

    Args:
        n: number of tuples >= 1. k: negatives >= 1. tau: temperature. radius: > 0.
        dim_out: output dimension >= 1. m2_*: mean squared input norms (>= 0).
        post_lipschitz: >= 0. variant: "standard" or "decoupled" (``q_max`` for ``p_max``).
    Returns:
        the bound, in nats.
    Source: book, Theorem ``c4-thm-vector`` (Maurer's vector-contraction inequality).

    Examples:
        >>> round(vector_contraction_bound(2048, 16, 0.5, radius=0.5, dim_out=3, post_lipschitz=2.0), 4)
        0.7056
    """
    check_choice(variant, "variant", VARIANTS)
    n, k = check_k(n, "n"), check_k(k)
    beta = 1.0 / check_tau(tau)
    radius, post = check_scalar(radius, "radius", gt=0), check_scalar(post_lipschitz, "post_lipschitz", ge=0)
    dim_out = check_k(dim_out, "dim_out")
    ma, mp, mn = (check_scalar(v, name, ge=0) for v, name in ((m2_anchor, "m2_anchor"), (m2_positive, "m2_positive"),
                                                        (m2_negatives, "m2_negatives")))
    kp = k * max_negative_weight(k, tau, variant=variant)
    width = 2.0 * math.sqrt(ma) + math.sqrt(mp) + math.sqrt(kp * mn)
    return float(math.sqrt(2.0) * beta * post * radius * math.sqrt(dim_out / n) * width)


# ---------------------------------------------------------------------------------------------
# C6: Theorem 1, term by term (book, Theorem ``c5-thm-main``).


def loss_range(k, tau, *, variant: str = "standard") -> float:
    """Width ``B`` of the range of ``l_k`` over similarity vectors in ``[-1, 1]^{k+1}`` (nats).

    Standard: ``l_k`` lies in ``[log(1 + k e^{-2 beta}), log(1 + k e^{2 beta})]``, a width below
    ``4 beta`` for every k; decoupled: in ``[log k - 2 beta, log k + 2 beta]``, width ``4 beta``.
    Source: book, Lemma ``c5-lem-range``.
    """
    check_choice(variant, "variant", VARIANTS)
    k = check_k(k)
    beta = 1.0 / check_tau(tau)
    if variant == "decoupled":
        return 4.0 * beta
    # log(1 + k e^{2b}) - log(1 + k e^{-2b}), in a form that does not overflow
    hi = 2.0 * beta + math.log(k) + math.log1p(math.exp(-2.0 * beta) / k)
    lo = math.log1p(k * math.exp(-2.0 * beta))
    return float(hi - lo)


def search_bias_constant(tau, *, sd_m: float, second_moment_m: float, m_min: float) -> float:
    """Uniform constant ``C`` with ``|E H(M_k, Q_k) - L_k| <= C / k`` for every embedding into the
    sphere (book, Corollary ``c5-cor-search-constant``, from Theorem ``c2-thm-search``):

    ``C_H(tau) = 2 beta sd_pi(m) sqrt(E_pi m^2) / m_min + e^{2 beta}``,

    where ``m = dM(x, .)/dpi`` (here assumed to have the same law under pi for every x, as in the
    vMF model), ``sd_m`` its standard deviation under pi, ``second_moment_m = E_pi m^2`` and
    ``m_min > 0`` a lower bound of m.
    """
    tau = check_tau(tau)
    beta = 1.0 / tau
    sd_m, second = check_scalar(sd_m, "sd_m", ge=0), check_scalar(second_moment_m, "second_moment_m", ge=0)
    m_min = check_scalar(m_min, "m_min", ge=0)
    if m_min == 0.0:
        raise ValueError("m_min must be > 0: the C2 bound needs the density ratio m bounded below, got m_min=0.0")
    out = 2.0 * beta * sd_m * math.sqrt(second) / m_min + float(exp_or_raise(2.0 * beta, "e^(2 beta)", tau))
    if not math.isfinite(out):
        raise OverflowError(f"C_H(tau) overflows float64 at tau={tau!r}")
    return float(out)


def search_bias_bounds(k, tau, *, e_m2: float, var_m: float | None = None, sd_M_m: float | None = None,
                       e_m_mminus1_sq: float | None = None, mu4: float | None = None) -> dict:
    """Upper bounds on ``E H(M_k, Q_k) - L_k`` valid for every embedding into the closed unit ball.

    The inputs are moments of the density ratio ``m = m(x, .) = dM(x, .)/dpi`` under ``pi`` (their
    averages over the anchor x where a form is linear in them): ``e_m2 = E_pi m^2``,
    ``var_m = Var_pi m``, ``sd_M_m`` the standard deviation of m under ``M(x, .)``
    (``sqrt(E_pi m^3 - (E_pi m^2)^2)``), ``e_m_mminus1_sq = E_pi[m (m - 1)^2]``,
    ``mu4 = E_pi (m - 1)^4``. With ``beta = 1/tau``:

    * ``second_moment``: ``2 beta E_pi m^2 / k``;
    * ``third_moment``: ``(beta/k) (Var_pi m + sqrt(sd_M(m)^2 + Var_pi(m)^2))`` (NaN without
      ``var_m`` and ``sd_M_m``);
    * ``two_term``: ``beta [sd_M(m)/k + 2 E_pi[m (m-1)^2]/k^2
      + 2 sqrt(Var_pi m (mu4 + 3 (k-1) Var_pi(m)^2)) / k^2]`` (NaN without all four moments);
    * ``cap``: ``2 beta``; ``best``: the smallest of the available ones (each is valid, so is the
      minimum; no union bound, they are deterministic).

    Args:
        k: database size >= 1. tau: temperature. e_m2: >= 1 (since E_pi m = 1).
        var_m, sd_M_m, e_m_mminus1_sq, mu4: >= 0 or None.
    Returns:
        dict of floats (nats) with the keys above.
    Raises:
        ValueError: e_m2 < 1, a negative moment, only some of the moments a form needs.
    Source: book, Proposition ``c5-prop-search-bias``.

    Examples:
        >>> b = search_bias_bounds(16, 0.5, e_m2=2.0746)
        >>> round(b["second_moment"], 4), b["best"] == b["second_moment"]
        (0.5187, True)
    """
    k = check_k(k, meaning="database size")
    beta = 1.0 / check_tau(tau)
    e_m2 = check_scalar(e_m2, "e_m2", ge=0)
    if e_m2 < 1.0 - 1e-12:
        raise ValueError(f"e_m2 = E_pi m^2 must be >= 1 (m is a density ratio, E_pi m = 1), got e_m2={e_m2!r}")
    given = {name: (None if v is None else check_scalar(v, name, ge=0)) for name, v in
             (("var_m", var_m), ("sd_M_m", sd_M_m), ("e_m_mminus1_sq", e_m_mminus1_sq), ("mu4", mu4))}
    out = {"second_moment": 2.0 * beta * e_m2 / k, "third_moment": float("nan"), "two_term": float("nan"),
           "cap": 2.0 * beta}
    v, s = given["var_m"], given["sd_M_m"]
    if (v is None) != (s is None):
        raise ValueError("the third-moment form needs both var_m and sd_M_m; got only one of them")
    if v is not None:
        out["third_moment"] = beta * (v + math.sqrt(s * s + v * v)) / k
    e3, m4 = given["e_m_mminus1_sq"], given["mu4"]
    if (e3 is None) != (m4 is None) or (e3 is not None and v is None):
        raise ValueError("the two-term form needs var_m, sd_M_m, e_m_mminus1_sq and mu4 together")
    if e3 is not None:
        d2 = v / k
        d4 = (m4 + 3.0 * (k - 1) * v * v) / k**3
        out["two_term"] = beta * (s / k + 2.0 * e3 / k**2 + 2.0 * math.sqrt(d2 * d4))
    out["best"] = float(np.nanmin([out["second_moment"], out["third_moment"], out["two_term"], out["cap"]]))
    return out

def search_bias_constant_l2(tau, *, second_moment) -> float:
    """Uniform constant ``C_H(tau)`` of Theorem ``c2-thm-search`` under a second moment only:

    ``|E H(M_hat_k, Q_hat_k) - L_k| <= C_H(tau) / k`` with
    ``C_H(tau) = beta (2 R_bar - 3/2) + e^{2 beta}``, ``beta = 1/tau``,

    for every embedding into the closed unit ball and every k >= 1, where
    ``R_bar = E_x E_pi m(x, .)^2 = 1 + chi^2(law of (x, x+) || pi x pi)`` (``second_moment``,
    >= 1). No lower bound on the density ratio ``m`` is needed (compare
    :func:`search_bias_constant`, which assumes one).

    Examples:
        >>> round(search_bias_constant_l2(0.5, second_moment=1.0), 4)  # positives independent
        55.5982

    Raises:
        ValueError: tau not in (0, inf); second_moment not a finite number >= 1.
        OverflowError: e^{2 beta} exceeds float64.
    Source: book, Chapter 2, Lemma ``c2-lem-snis`` and Theorem ``c2-thm-search``.
    """
    beta = 1.0 / check_tau(tau)
    r_bar = check_scalar(second_moment, "second_moment")
    if not r_bar >= 1.0:
        raise ValueError(f"second_moment must be >= 1 (E_pi m^2 >= (E_pi m)^2 = 1), got second_moment={r_bar!r}")
    return float(beta * (2.0 * r_bar - 1.5) + float(exp_or_raise(2.0 * beta, "e^(2 beta)", tau)))


def snis_bias_constant(*, var_m: float, var_mf: float, cov_mf: float, mean_f: float) -> float:
    """``B_S`` of Lemma ``c2-lem-snis``: ``k |E I_hat_k - I| <= B_S`` for every k >= 1, with

    ``B_S = min( sqrt(2 Var(m) (Var(m f) + Var(m))), |Cov_M(m, f)| + (1 + |I|) Var(m) )``

    for a self-normalised average of ``f`` (values in [-1, 1]) with weights ``m`` (``E m = 1``,
    ``E m^2 < inf``) under the sampling law, ``I`` the target mean of f; ``B_S <= 2 E m^2 - 3/2``.

    Args:
        var_m: ``Var(m) = E m^2 - 1 >= 0``. var_mf: ``Var(m f) >= 0``. cov_mf: ``Cov_M(m, f)``
            under the target ``M = m P``. mean_f: ``I`` in [-1, 1].
    Source: book, Chapter 2, Lemma ``c2-lem-snis``.
    """
    var_m, var_mf = check_scalar(var_m, "var_m", ge=0), check_scalar(var_mf, "var_mf", ge=0)
    cov_mf, mean_f = check_scalar(cov_mf, "cov_mf"), check_scalar(mean_f, "mean_f")
    if abs(mean_f) > 1.0 + 1e-12:
        raise ValueError(f"mean_f must lie in [-1, 1] (the mean of f with values in [-1, 1]), got {mean_f!r}")
    return float(min(math.sqrt(2.0 * var_m * (var_mf + var_m)), abs(cov_mf) + (1.0 + abs(mean_f)) * var_m))


def kl_softmax_sharp_bound(tau) -> float:
    """The exact supremum of ``KL(Q^phi_tau(x, .) || pi)`` over all embeddings into the unit ball,
    all data and all x (book, Theorem ``c3-thm-kl-sharp``):

    ``Psi(beta) = y - 1 - log y``, ``y = 2 beta / (1 - e^{-2 beta}) = beta (1 + coth beta)``,

    attained by a law of the similarity on ``{-1, 1}``; ``Psi <= min(beta^2/2, 2 beta)`` and
    ``Psi = 2 beta - 1 - log(2 beta) + O(beta e^{-2 beta})`` as tau -> 0.

    Examples:
        >>> round(kl_softmax_sharp_bound(1.0), 5)
        0.47447
    """
    beta = 1.0 / check_tau(tau)
    y = 2.0 * beta / -math.expm1(-2.0 * beta)
    return float(y - 1.0 - math.log(y)) if beta > 1e-4 else float(beta * beta / 2.0 - beta**4 / 36.0)


def two_point_kl(tau, q: float) -> float:
    """``KL(Q_tau || pi)`` when the similarity is ``+1`` with probability ``q`` and ``-1`` otherwise
    under pi (log space; book, Theorem ``c3-thm-kl-sharp``). ``q = 1/2``: :func:`antipodal_kl`."""
    beta = 1.0 / check_tau(tau)
    q = check_scalar(q, "q")
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be a probability in (0, 1), got q={q!r}")
    lz = float(np.logaddexp(math.log(q) + beta, math.log1p(-q) - beta))
    theta = math.exp(math.log(q) + beta - lz)
    return float(beta * (2.0 * theta - 1.0) - lz)


def theorem1_terms(*, train_risk: float, k: int, n: int, tau: float, delta: float, rademacher: float,
                   search_constant: float | None = None, search_bias: float | None = None,
                   variant: str = "standard") -> dict:
    """The terms of Theorem 1 (book, Theorem ``c5-thm-main``), each by name, in nats.

    With probability at least ``1 - delta`` over the n training tuples, for every embedding of the
    class, ``E H(M_k, Q_k) - log k <= bound`` where ``bound`` is the sum of

    * ``empirical_risk``: ``L_hat_{n,k}(phi) - log k`` (``train_risk`` minus log k),
    * ``complexity``: ``2 R_n`` (``rademacher`` is an upper bound of the expected Rademacher
      complexity ``R_n`` of the loss class, e.g. from ``rademacher_covering_bound``),
    * ``confidence``: ``B sqrt(log(1/delta) / (2n))`` with ``B = loss_range(k, tau)`` (< 4 beta),
    * ``search_bias``: ``C / k`` with ``C = search_constant`` (``search_bias_constant``), or the
      value ``search_bias`` itself (an upper bound on ``E H(M_k, Q_k) - L_k`` valid for every
      embedding, e.g. ``search_bias_bounds(...)["best"]``; give at most one of the two); NaN when
      neither is given (then ``bound`` is a bound on ``L_k(phi) - log k`` only, and ``bound_on``
      says so).

    Returns a dict with those keys plus ``range_B``, ``bound`` and ``bound_on``.
    """
    k, n = check_k(k), check_k(n, "n")
    tau = check_tau(tau)
    check_choice(variant, "variant", VARIANTS)
    if isinstance(delta, bool) or not isinstance(delta, (int, float)):
        raise TypeError(f"delta must be a number in (0, 1) (the failure probability), got {delta!r}")
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got delta={delta!r}")
    train_risk = check_scalar(train_risk, "train_risk")
    rademacher = check_scalar(rademacher, "rademacher", ge=0)
    B = loss_range(k, tau, variant=variant)
    terms = {"empirical_risk": float(train_risk - math.log(k)), "complexity": 2.0 * rademacher,
             "confidence": B * math.sqrt(math.log(1.0 / delta) / (2.0 * n)), "range_B": B}
    if search_constant is not None and search_bias is not None:
        raise ValueError("give search_constant (C, the term is C/k) or search_bias (the term itself), not both")
    if search_bias is not None:
        terms["search_bias"] = check_scalar(search_bias, "search_bias", ge=0)
        terms["bound"] = terms["empirical_risk"] + terms["complexity"] + terms["confidence"] + terms["search_bias"]
        terms["bound_on"] = "E H(M_k, Q_k) - log k"
    elif search_constant is None:
        terms["search_bias"] = float("nan")
        terms["bound"] = terms["empirical_risk"] + terms["complexity"] + terms["confidence"]
        terms["bound_on"] = "L_k - log k"
    else:
        terms["search_bias"] = check_scalar(search_constant, "search_constant", ge=0) / k
        terms["bound"] = terms["empirical_risk"] + terms["complexity"] + terms["confidence"] + terms["search_bias"]
        terms["bound_on"] = "E H(M_k, Q_k) - log k"
    return terms
