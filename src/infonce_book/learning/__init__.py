"""Learning embeddings: embedding classes with parameter-Lipschitz constants
(:mod:`~.embeddings`), the Adam training loop with hooks (:mod:`~.loop`), empirical risk
minimisation (:mod:`~.training`) and empirical Rademacher complexity estimates (:mod:`~.rademacher`)."""

from .embeddings import (
    BallLinear,
    BallMLP,
    NormalisedLinear,
    SphereMLP,
    SphereMLPEnsemble,
    loss_per_tuple,
    reference_embedding,
)
from .loop import adam_loop, cosine_schedule
from .rademacher import empirical_rademacher
from .training import (
    EnsembleFitResult,
    FitResult,
    PlateauStop,
    fit,
    fit_ensemble,
    fit_linear_embedding,
    fit_linear_embeddings,
    fit_temperature,
)

__all__ = ["BallLinear", "BallMLP", "NormalisedLinear", "SphereMLP", "SphereMLPEnsemble", "loss_per_tuple",
           "reference_embedding", "adam_loop", "cosine_schedule",
           "empirical_rademacher", "EnsembleFitResult", "FitResult", "PlateauStop", "fit", "fit_ensemble",
           "fit_linear_embedding", "fit_linear_embeddings", "fit_temperature"]
