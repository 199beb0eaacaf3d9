"""Reference models behind one interface (:mod:`infonce_book.models.base`).

* :class:`VonMisesFisher` -- uniform data on the sphere, vMF positive pairs, closed forms.
* :class:`FiniteModel` -- N points, a row-stochastic kernel; everything exact.
* :class:`GaussianModel` -- Gaussian pairs on R^p (unbounded norms).
* :class:`StudentTModel` -- heavy-tailed pairs on R^p.

Every model draws tuples with ``sample_tuples(n, k)`` and gives ``log_density_ratio(x, y)``;
:func:`from_params` rebuilds one from its ``params`` dict.
"""

from .base import MODELS, ReferenceModel, Tuples, from_params, register
from .finite import FiniteModel
from .gaussian import GaussianModel
from .student_t import StudentTModel
from .vmf import VonMisesFisher, log_vmf_partition, mean_resultant_length

__all__ = ["ReferenceModel", "Tuples", "MODELS", "from_params", "register", "VonMisesFisher", "FiniteModel",
           "GaussianModel", "StudentTModel", "log_vmf_partition", "mean_resultant_length"]
