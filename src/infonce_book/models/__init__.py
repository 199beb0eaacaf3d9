"""Reference models behind one interface (:mod:`infonce_book.models.base`).

* :class:`VonMisesFisher` -- uniform data on the sphere, vMF positive pairs, closed forms.
* :class:`FiniteModel` -- N points, a row-stochastic kernel; everything exact.
* :class:`GaussianModel` -- Gaussian pairs on R^p (unbounded norms).
* :class:`StudentTModel` -- heavy-tailed pairs on R^p.

Every model draws tuples with ``sample_tuples(n, k)`` and gives ``log_density_ratio(x, y)``;
:func:`from_params` rebuilds one from its ``params`` dict. The registry :data:`MODELS`
(``{name: class}``, filled by :func:`register` when a model's module is imported below) is the one
list of the models: this package's ``__all__`` takes the model classes from it.
"""

from .base import MODELS, ReferenceModel, Tuples, from_params, register
from .finite import FiniteModel as FiniteModel  # each import registers its model in MODELS
from .gaussian import GaussianModel as GaussianModel
from .student_t import StudentTModel as StudentTModel
from .vmf import VonMisesFisher as VonMisesFisher
from .vmf import log_vmf_partition, mean_resultant_length

__all__ = ["ReferenceModel", "Tuples", "MODELS", "from_params", "register", "log_vmf_partition",
           "mean_resultant_length", *(cls.__name__ for cls in MODELS.values())]
