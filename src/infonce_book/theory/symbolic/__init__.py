"""Symbolic derivations (sympy) that the chapters display and the tests assert, one module per
chapter topic:

* :mod:`~.rate` -- Chapter 1, the limit and its O(1/k) rate: the expansion of the bias in
  ``1/k`` from the cumulants of the sample mean, the non-asymptotic bounds, the uniform constant,
  the vMF closed forms on ``S^2``;
* :mod:`~.in_batch` -- Chapter 1, in-batch negatives: NT-Xent's pairs of views;
* :mod:`~.search` -- Chapter 2, the similarity-search reading: the self-normalised average, the
  two-point model, the Gaussian model's density ratio;
* :mod:`~.temperature` -- Chapter 3, the temperature: the KL of the softmax kernel, the cone
  embedding, the decoupled minimiser;
* :mod:`~.continuity` -- Chapter 4, continuity of the loss in the similarities and embeddings;
* :mod:`~.generalisation` -- Chapter 5, the range of the loss and the one-sided search bias.

The symbols of the book's notation page (``beta``, ``kappa``, ``k``, ``u1..u4``, ``v2..v6``, ...)
live in :mod:`~._symbols`. Every name is importable from this package
(``from infonce_book.theory import symbolic; symbolic.log_expansion(...)``). Displaying the
expressions in a page is the experiment layer's job
(:func:`infonce_book.experiment.style.as_math`).
"""

from ._symbols import _v as _v  # the tests build moments from it
from ._symbols import a, beta, eps, k, kappa, t, tau, u1, u2, u3, u4, v2, v3, v4, v5, v6
from .continuity import (
    block_scaling_optimum,
    dimension_free_checks,
    donsker_varadhan_gap,
    embedding_gradients,
    gateaux_derivative,
    normalisation_jacobian,
    softmax_weight_bound,
    weight_bound_gaps,
)
from .generalisation import (
    gaussian_ratio_second_moment,
    loss_range_width,
    normalisation_curvature,
    search_correction_identities,
    snis_bias_identities,
    unexpected_bernstein_identities,
)
from .in_batch import delta_pair, gamma_pair, ntxent_bias_coefficients, pair_block_third_moment, vmf3_pair_moment
from .rate import (
    bias_coefficient_functions,
    bias_expansion,
    c1_formula,
    c2_formula,
    log_expansion,
    log_lower_bound_derivative,
    mean_moments,
    moments_of_T_minus_one,
    nonasymptotic_bias_bounds,
    third_order_formulas,
    uniform_bias_constant,
    uniform_constant_worst_case,
    vmf3_bias_coefficients,
    vmf3_partition,
)
from .search import (
    I_f,
    gaussian_density_ratio_moments,
    gaussian_third_moment_threshold,
    s_D,
    s_N,
    s_ND,
    snis_constant_is_minus_covariance,
    snis_first_order,
    snis_identities,
    two_point_model_search_check,
    two_point_posterior_check,
)
from .temperature import (
    antipodal_kl_series,
    cone_embedding_residual,
    cross_entropy_kl_identity,
    decoupled_derivative_residual,
    kl_small_beta,
    kl_tilt_derivative,
    sharp_kl_bound,
    vmf3_decoupled_rate_constant,
    vmf3_kl_softmax,
)

__all__ = [
    # symbols (book, notation page)
    "eps", "k", "beta", "kappa", "tau", "t", "a", "u1", "u2", "u3", "u4", "v2", "v3", "v4", "v5", "v6",
    "gamma_pair", "delta_pair", "I_f", "s_N", "s_D", "s_ND",
    # Chapter 1: the rate
    "mean_moments", "log_expansion", "bias_expansion", "moments_of_T_minus_one", "c1_formula", "c2_formula",
    "third_order_formulas", "bias_coefficient_functions", "log_lower_bound_derivative",
    "nonasymptotic_bias_bounds", "uniform_constant_worst_case", "uniform_bias_constant", "vmf3_partition",
    "vmf3_bias_coefficients",
    # Chapter 1: in-batch negatives
    "ntxent_bias_coefficients", "pair_block_third_moment", "vmf3_pair_moment",
    # Chapter 2: search
    "snis_first_order", "snis_constant_is_minus_covariance", "snis_identities", "two_point_model_search_check",
    "two_point_posterior_check", "gaussian_density_ratio_moments", "gaussian_third_moment_threshold",
    # Chapter 3: temperature
    "kl_tilt_derivative", "kl_small_beta", "vmf3_kl_softmax", "antipodal_kl_series", "cross_entropy_kl_identity",
    "sharp_kl_bound", "cone_embedding_residual", "decoupled_derivative_residual", "vmf3_decoupled_rate_constant",
    # Chapter 4: continuity
    "gateaux_derivative", "softmax_weight_bound", "donsker_varadhan_gap", "normalisation_jacobian",
    "embedding_gradients", "weight_bound_gaps", "block_scaling_optimum", "dimension_free_checks",
    # Chapter 5: generalisation
    "loss_range_width", "snis_bias_identities", "gaussian_ratio_second_moment", "search_correction_identities",
    "unexpected_bernstein_identities", "normalisation_curvature",
]
