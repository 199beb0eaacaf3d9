"""The von Mises--Fisher reference model (book: notation page, "Reference models").

:class:`VonMisesFisher` -- data uniform on the sphere ``S^{p-1}``, positives drawn from the von
Mises--Fisher kernel ``M(x, dy) = e^{kappa <x,y>} pi(dy) / Z(kappa)``, embedding ``phi = identity``
(any orthogonal map gives the same numbers).

Modules, by the claim they serve:

* :mod:`~.special_functions` -- ``log Z_p``, ``log I_nu`` and ``A_p``, in log space;
* :mod:`~.core` -- parameters, limit risk, density ratio, samplers;
* :mod:`~.laws` -- the weights on quadrature nodes for the exact references;
* :mod:`~.rate`, :mod:`~.in_batch` -- Chapter 1 (the rate; CLIP and NT-Xent);
* :mod:`~.search` -- Chapter 2 (similarity search);
* :mod:`~.temperature` -- Chapter 3 (the temperature);
* :mod:`~.model` -- :class:`VonMisesFisher`, all of them in one class.
"""

from .laws import RESOLUTION_TOLERANCE, SimilarityLaws
from .model import VonMisesFisher
from .special_functions import log_vmf_partition, mean_resultant_length

__all__ = ["VonMisesFisher", "log_vmf_partition", "mean_resultant_length", "SimilarityLaws", "RESOLUTION_TOLERANCE"]
