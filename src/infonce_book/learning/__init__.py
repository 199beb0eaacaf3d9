"""Learning embeddings: embedding classes with parameter-Lipschitz constants
(:mod:`~.embeddings`), the Adam training loop with hooks (:mod:`~.loop`), empirical risk
minimisation (:mod:`~.training`), empirical Rademacher complexity estimates (:mod:`~.rademacher`)
and Gaussian-posterior PAC-Bayes certificates of a trained embedding (:mod:`~.pacbayes`)."""

from .embeddings import (
    BallLinear,
    BallMLP,
    FrobeniusLinear,
    NormalisedLinear,
    SphereMLP,
    SphereMLPEnsemble,
    loss_per_tuple,
    reference_embedding,
)
from .loop import adam_loop, cosine_schedule
from .pacbayes import (
    POSTERIOR_RATIOS,
    PRIOR_SCALES,
    canonical_mean,
    gaussian_posterior_certificate,
    mc_empirical_risk,
    normalised_linear_losses,
    randomised_search_cross_entropy,
)
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

__all__ = ["BallLinear", "BallMLP", "FrobeniusLinear", "NormalisedLinear", "SphereMLP", "SphereMLPEnsemble",
           "loss_per_tuple",
           "reference_embedding", "adam_loop", "cosine_schedule",
           "empirical_rademacher", "EnsembleFitResult", "FitResult", "PlateauStop", "fit", "fit_ensemble",
           "fit_linear_embedding", "fit_linear_embeddings", "fit_temperature",
           "PRIOR_SCALES", "POSTERIOR_RATIOS", "canonical_mean", "gaussian_posterior_certificate", "mc_empirical_risk",
           "normalised_linear_losses", "randomised_search_cross_entropy"]
