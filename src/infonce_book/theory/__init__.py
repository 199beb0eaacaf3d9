"""The mathematics that does not depend on a particular model: exact references (Laplace/Frullani
quadrature), the bounds, the symbolic derivations, similarity-search kernels, Monte Carlo
estimators, and the one uncertainty type :class:`~infonce_book.theory.stats.Estimate`.

Modules: :mod:`~.exact`, :mod:`~.bounds`, :mod:`~.symbolic`, :mod:`~.search`, :mod:`~.estimators`,
:mod:`~.stats`. Import from them directly (``from infonce_book.theory.bounds import ...``).
"""

from .stats import Estimate

__all__ = ["Estimate"]
