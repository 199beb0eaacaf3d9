"""Learning embeddings: embedding classes with parameter-Lipschitz constants
(:mod:`~.embeddings`), empirical risk minimisation (:mod:`~.training`) and empirical Rademacher
complexity estimates (:mod:`~.rademacher`)."""

from .embeddings import BallLinear, BallMLP, NormalisedLinear, SphereMLP, loss_per_tuple, reference_embedding
from .rademacher import empirical_rademacher
from .training import FitResult, fit, fit_linear_embedding, fit_temperature

__all__ = ["BallLinear", "BallMLP", "NormalisedLinear", "SphereMLP", "loss_per_tuple", "reference_embedding",
           "empirical_rademacher", "FitResult", "fit", "fit_linear_embedding", "fit_temperature"]
