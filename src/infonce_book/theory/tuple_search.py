"""The per-tuple search cross-entropy (book, Chapter 5, Theorem ``c5-thm-tuple-search``).

For a training tuple ``z = (x, x^+, x_1^-, .., x_k^-)`` and an embedding with similarities
``s_j = s(x, x_j^-)`` in ``[-1, 1]``, take the tuple's k negatives as the database of the search and

``h(theta; z) = H(M_hat_k(x, .), Q_hat_k(x, .)) = -beta sum_j M_hat_j s_j + log sum_j e^{beta s_j}``,

``M_hat_j = m(x, x_j^-) / sum_i m(x, x_i^-)`` the idealised search's weights (``m`` the positive
generator's density ratio ``dM(x, .)/d pi``). Facts (proved in the book, checked in the tests):

* ``E_z h(theta; z) = E H(M_hat_k, Q_hat_k)`` exactly: the anchor and the negatives of a tuple
  have the law of a query and an independent database; the positive does not enter ``h``;
* ``h - log k`` lies in ``[-2 beta, 2 beta]`` (:func:`tuple_search_range`);
* along a line ``A + uH`` of the class ``phi_A(x) = A x/|A x|``, ``d^2 h / du^2 >= -kappa_r |H|_F^2``
  with the curvature constant of the InfoNCE loss (the same lemma);
* its spread excludes the positive's own noise: ``Var h`` is about 0.01 nat^2 at a trained
  embedding of the vMF model where the decoupled loss has about 0.7.

It needs ``m`` (known in a synthetic model, or as "same class" in a labelled set); where only the
law of ``m`` is known, the decoupled loss plus the sharp search bias is the route that remains.
"""

from __future__ import annotations

import torch

from ..utils.validation import check_tau
from .search import search_cross_entropy

__all__ = ["tuple_search_cross_entropy", "tuple_search_range"]


def tuple_search_cross_entropy(s_neg: torch.Tensor, log_m_neg: torch.Tensor, tau) -> torch.Tensor:
    """``h(theta; z)`` of each tuple, in nats: the search cross-entropy with the tuple's negatives as
    the database.

    Args:
        s_neg: (n, k) similarities ``s(x_i, x_ij^-)`` of each anchor with its k negatives.
        log_m_neg: (n, k) ``log m(x_i, x_ij^-)`` (up to a constant per row: only the softmax over
            j enters).
        tau: temperature > 0.
    Returns:
        (n,) values; ``h - log k`` lies in ``[-2/tau, 2/tau]`` when ``|s| <= 1``.
    Raises:
        ValueError: shapes that differ or are not (n, k), non-finite entries, ``tau <= 0``.
    Source: book, Theorem ``c5-thm-tuple-search``; the cross-entropy of Chapter 2, eq. ``c2-eq-H``.

    Examples:
        >>> s = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
        >>> lm = torch.tensor([[-50.0, 0.0]], dtype=torch.float64)  # M_hat on the dissimilar item: log cosh 2 + 2
        >>> round(float(tuple_search_cross_entropy(s, lm, 0.5)) - float(torch.log(torch.tensor(2.0))), 4)
        3.325
    """
    return search_cross_entropy(s_neg, log_m_neg, tau)


def tuple_search_range(tau) -> tuple[float, float]:
    """``(-2 beta, 2 beta)``: the interval holding ``h(theta; z) - log k`` for every embedding into
    the unit ball and every tuple (book, Theorem ``c5-thm-tuple-search``, part (b)).

    Examples:
        >>> tuple_search_range(0.5)
        (-4.0, 4.0)
    """
    beta = 1.0 / check_tau(tau)
    return -2.0 * beta, 2.0 * beta
