"""The interface every reference model shares (book: notation page, "Reference models").

A reference model is a data distribution ``pi`` on a data space ``X`` and a positive-pair Markov
kernel ``M(x, dy)``. Every model

* draws whole InfoNCE tuples with one method, :meth:`ReferenceModel.sample_tuples`, returning
  :class:`Tuples` ``(anchor (n, *E), positive (n, *E), negatives (n, k, *E))`` where ``E`` is the
  shape of one point of ``X`` (``(dim,)`` for the continuous models, ``()`` for the finite model,
  whose points are indices);
* draws from ``pi`` with :meth:`sample_data` and from ``M(x, .)`` with :meth:`sample_positive`
  (a model whose positives cannot be drawn given the anchor alone overrides
  :meth:`sample_tuples` and raises in :meth:`sample_positive`);
* gives the log density ratio ``log m(x, y) = log dM(x, .)/dpi (y)`` with one signature,
  :meth:`log_density_ratio` ``(x (n, *E), y (n, *E) or (n, k, *E)) -> (n,) or (n, k)``;
* is rebuilt from its parameter dict (what ledger records hold in ``params``) by
  :func:`from_params`.

Closed forms that only some models have (the limit risk, the weight moments) are methods of
those models; code that needs them says so in its docstring and fails with a clear
``TypeError`` otherwise (:meth:`ReferenceModel.require`), never by checking class names.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..utils.validation import check_k

__all__ = ["Tuples", "ReferenceModel", "register", "from_params", "MODELS"]


class Tuples(NamedTuple):
    """InfoNCE tuples drawn from a model: ``anchor (n, *E)``, ``positive (n, *E)`` and
    ``negatives (n, k, *E)`` (``E``: the shape of one data point)."""

    anchor: torch.Tensor
    positive: torch.Tensor
    negatives: torch.Tensor


MODELS: dict[str, type] = {}


def register(name: str):
    """Class decorator: register a model under ``name`` (the ``"model"`` entry of its params)."""

    def wrap(cls):
        cls.name = name
        MODELS[name] = cls
        return cls

    return wrap


def from_params(params: dict) -> "ReferenceModel":
    """Rebuild a model from its parameter dict (``model.params``, or a ledger record's ``params``;
    keys the model does not take, such as ``tau`` or ``k``, are ignored).

    Examples:
        >>> from infonce_book.models import VonMisesFisher, from_params
        >>> from_params(VonMisesFisher(3, 4.0).params)
        VonMisesFisher(dim=3, kappa=4)

    Raises:
        ValueError: no ``"model"`` key, or an unknown model name (the message lists the known ones).
    """
    if not isinstance(params, dict) or "model" not in params:
        raise ValueError(f"params must be a dict with a 'model' key naming one of {sorted(MODELS)}, got {params!r}")
    name = params["model"]
    if name not in MODELS:
        raise ValueError(f"params names an unknown model {name!r}; known models: {sorted(MODELS)}")
    return MODELS[name].from_params(params)


class ReferenceModel:
    """Base class of the reference models (see the module docstring for the interface)."""

    name = "model"
    #: True when the data live on the unit sphere and the model's embedding is the identity, so
    #: that ``<x, y>`` is the similarity (the vMF model).
    identity_embedding = False
    #: The parameters recorded in ``params`` besides ``"model"`` (constructor keywords).
    param_names: tuple = ()

    @property
    def params(self) -> dict:
        """The model's parameters as recorded in the claims ledger (``from_params`` inverts it)."""
        return {"model": self.name, **{k: getattr(self, k) for k in self.param_names}}

    @classmethod
    def from_params(cls, params: dict):
        return cls(**{k: params[k] for k in cls.param_names})

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k):g}" if isinstance(getattr(self, k), float)
                         else f"{k}={getattr(self, k)!r}" for k in self.param_names)
        return f"{type(self).__name__}({args})"

    def require(self, capability: str, why: str) -> None:
        """Raise ``TypeError`` unless the model has the method ``capability`` (a closed form)."""
        if not callable(getattr(self, capability, None)):
            raise TypeError(f"{why}: the model must provide {capability}(), which {self!r} does not")

    # Sampling ------------------------------------------------------------------------------
    def sample_data(self, n: int, *, generator=None, device=None, dtype=None) -> torch.Tensor:
        """``n`` i.i.d. draws from ``pi``: (n, *E)."""
        raise NotImplementedError

    def sample_positive(self, anchor: torch.Tensor, *, generator=None) -> torch.Tensor:
        """One positive ``x+ ~ M(x, .)`` per anchor: (n, *E) -> (n, *E)."""
        raise NotImplementedError

    def sample_tuples(self, n: int, k: int, *, generator=None, device=None, dtype=None) -> Tuples:
        """``n`` i.i.d. InfoNCE tuples with ``k`` negatives each (book, notation page):
        ``x ~ pi``, ``x+ ~ M(x, .)``, ``x_1-, ..., x_k- ~ pi`` i.i.d., independent of ``(x, x+)``.

        Draws in this order: the n anchors, their positives, then the n k negatives (row-major).

        Args:
            n: number of tuples >= 1. k: negatives per tuple >= 1.
            generator: a torch generator on ``device`` (seeds every draw). device, dtype: of the
                returned tensors (dtype: floating point; the model's default when None).
        Returns:
            :class:`Tuples`.
        """
        n, k = check_k(n, "n"), check_k(k)
        anchor = self.sample_data(n, generator=generator, device=device, dtype=dtype)
        positive = self.sample_positive(anchor, generator=generator)
        negatives = self.sample_negatives(n, k, generator=generator, device=anchor.device, dtype=dtype)
        return Tuples(anchor, positive, negatives)

    def sample_negatives(self, n: int, k: int, *, generator=None, device=None, dtype=None) -> torch.Tensor:
        """``n k`` i.i.d. draws from ``pi`` as ``(n, k, *E)``."""
        x = self.sample_data(n * k, generator=generator, device=device, dtype=dtype)
        return x.reshape(n, k, *x.shape[1:])

    # The density ratio -----------------------------------------------------------------------
    def log_density_ratio(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``log m(x, y)``, ``m = dM(x, .)/dpi``: x (n, *E) and y (n, *E) -> (n,), or y (n, k, *E) -> (n, k)."""
        raise NotImplementedError
