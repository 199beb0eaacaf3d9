"""Bounds on the Rademacher complexity of the loss class: by a covering of the parameter ball
(Theorem ``c4-thm-rademacher``), by vector contraction (Theorem ``c4-thm-vector``) and, free of the
dimensions for a norm-constrained linear class, by contraction in the similarities (Theorem
``c4-thm-dimension-free``).
"""

from __future__ import annotations

import math

import numpy as np

from ...losses import VARIANTS
from ...utils.validation import check_choice, check_k, check_scalar, check_tau
from .continuity import max_negative_weight


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


def similarity_contraction_bound(n, k, tau, *, frobenius_radius: float, variant: str = "standard") -> float:
    """Upper bound on the empirical Rademacher complexity of the loss class of
    ``phi_W(x) = W x``, ``|W|_F <= b <= 1``, on inputs in the unit ball, free of both dimensions:

    ``R_hat_n <= sqrt(2) beta b^2 (1 + sqrt(k p_max)) / sqrt(n)``, ``k p_max <= min(k, e^{2 beta})``.

    The similarities ``<W x, W y> = <W^T W, y x^T>_F`` are linear in ``M = W^T W`` with
    ``|M|_F <= b^2`` and ``|y x^T|_F <= 1``; the loss is a Lipschitz function of the similarity
    vector with the weights ``p_j <= p_max`` (Maurer's vector contraction with the negatives'
    coordinates scaled down). Decoupled variant: ``q_max`` for ``p_max``.

    Args:
        n: tuples >= 1. k: negatives >= 1. tau: temperature. frobenius_radius: b in (0, 1].
        variant: "standard" or "decoupled".
    Returns:
        the bound, in nats.
    Raises:
        ValueError: an argument outside its range (named in the message).
    Source: book, Theorem ``c4-thm-dimension-free`` (Maurer 2016, Corollary 1).

    Examples:
        >>> round(similarity_contraction_bound(128, 16, 1.0, frobenius_radius=1.0), 4)
        0.406
    """
    check_choice(variant, "variant", VARIANTS)
    n, k = check_k(n, "n"), check_k(k)
    beta = 1.0 / check_tau(tau)
    b = check_scalar(frobenius_radius, "frobenius_radius", gt=0, le=1)
    kp = k * max_negative_weight(k, tau, variant=variant)
    return float(math.sqrt(2.0) * beta * b * b * (1.0 + math.sqrt(kp)) / math.sqrt(n))
