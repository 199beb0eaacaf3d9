"""The vMF reference model, :class:`VonMisesFisher`: the core (:mod:`~.core`) and the closed forms
of each chapter (:mod:`~.rate`, :mod:`~.in_batch`, :mod:`~.search`, :mod:`~.temperature`), combined
into one class registered as ``"vmf"``.
"""

from __future__ import annotations

from ..base import register
from .core import VmfCore
from .in_batch import InBatchClosedForms
from .rate import RateClosedForms
from .search import SearchClosedForms
from .temperature import TemperatureClosedForms


@register("vmf")
class VonMisesFisher(RateClosedForms, InBatchClosedForms, SearchClosedForms, TemperatureClosedForms, VmfCore):
    """The vMF reference model on ``S^{dim-1}`` (book: notation page, "Reference models").

    ``pi`` is the uniform distribution on the sphere, ``M(x, .) = vMF(x, kappa)``, and the
    embedding is ``phi(x) = x``. With ``beta = 1/tau`` and ``W = e^{beta <x, y>}``:

    * ``mu = E W = Z(beta)``, ``E W^j = Z(j beta)``, ``E (W+)^j = Z(kappa + j beta) / Z(kappa)``,
    * ``L_inf(tau) = -beta A_p(kappa) + log Z(beta)``,
    * ``m(x, y) = dM(x, .)/dpi (y) = e^{kappa <x,y>} / Z(kappa)``.

    The methods come, by the claim they serve, from :class:`~.core.VmfCore` (parameters, log
    partition function, limit risk, density ratio, samplers), :class:`~.rate.RateClosedForms`
    (Chapter 1: weight moments, bias coefficients, exact bias), :class:`~.in_batch.InBatchClosedForms`
    (Chapter 1: CLIP and NT-Xent), :class:`~.search.SearchClosedForms` (Chapter 2) and
    :class:`~.temperature.TemperatureClosedForms` (Chapter 3).

    Args:
        dim: ambient dimension p >= 2 (the sphere is ``S^{p-1}``).
        kappa: concentration of the positive-pair kernel, >= 0 (0: positives independent).
    Raises:
        TypeError/ValueError: dim not an integer >= 2; kappa negative or not finite.
    """
