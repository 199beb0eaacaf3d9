"""Bounds of the book, as functions the chapters plot and the tests check; one module per idea:

* :mod:`~.rate` -- Chapter 1: the bias ``L_k - log k - L_inf`` between its non-asymptotic bounds,
  the uniform constant ``C(tau)``, the ``O(k^{-1/2})`` Lipschitz-of-log bound;
* :mod:`~.search` -- the search bias: ``B_S`` of the self-normalised average, the constants
  ``C_H(tau)`` (Chapter 2) and the one-sided bounds of Chapter 5;
* :mod:`~.temperature` -- Chapter 3: the KL of the softmax kernel to the data;
* :mod:`~.continuity` -- Chapter 4: continuity of the loss in the similarities and the embeddings,
  its Lipschitz constants in the parameters;
* :mod:`~.complexity` -- Rademacher complexity of the loss class (covering, vector contraction);
* :mod:`~.theorem1` -- Theorem 1 of Chapter 5, term by term, and the range of the loss.

Every name is importable from this package (``from infonce_book.theory.bounds import X``).
"""

from .complexity import rademacher_covering_bound, similarity_contraction_bound, vector_contraction_bound
from .continuity import (
    CONTINUITY_KINDS,
    TUNABLE_GAMMAS,
    continuity_bound,
    embedding_lipschitz_constant,
    loss_lipschitz_constant,
    max_negative_weight,
    tunable_lipschitz_constant,
)
from .rate import bias_bounds, lipschitz_log_bound, uniform_bias_constant
from .search import search_bias_bounds, search_bias_constant, search_bias_constant_l2, snis_bias_constant
from .temperature import antipodal_kl, kl_softmax_bound, kl_softmax_sharp_bound, two_point_kl
from .theorem1 import loss_range, theorem1_terms

__all__ = [
    "bias_bounds", "uniform_bias_constant", "lipschitz_log_bound",
    "snis_bias_constant", "search_bias_constant_l2", "search_bias_constant", "search_bias_bounds",
    "kl_softmax_bound", "kl_softmax_sharp_bound", "antipodal_kl", "two_point_kl",
    "CONTINUITY_KINDS", "continuity_bound", "loss_lipschitz_constant", "max_negative_weight",
    "embedding_lipschitz_constant", "TUNABLE_GAMMAS", "tunable_lipschitz_constant",
    "rademacher_covering_bound", "vector_contraction_bound", "similarity_contraction_bound",
    "loss_range", "theorem1_terms",
]
