"""Chapter 5, ``book/c5_generalisation.md``: the generalisation bound for similarity search with
sharp constants and a PAC-Bayes certificate (claim C6), and the generalisation gap of trained
embeddings on synthetic models (claim C7).

The page constructs one :class:`GeneralisationSetup` (confidence levels, steps, test and Monte
Carlo sizes, the PAC-Bayes design) in its parameter cell, next to its models, and passes both to
the runners. Modules:

* :mod:`.config`: ``STEM``, ``SIZES``, :func:`setup`, :class:`GeneralisationSetup`;
* :mod:`.constants`: the search constant and density-ratio moments of the models, the numbers of
  the exercises;
* :mod:`.runners`: the training cells (cached one at a time) and the grid, a tidy table;
* :mod:`.tables`: summaries over seeds and the displayed tables;
* :mod:`.ledger`: the claims-ledger records (each documents its verdict rule);
* :mod:`.prose`: the generated sentences; :mod:`.figures`: the page's figures.

The PAC-Bayes machinery (Gaussian posteriors around the trained parameters) is learning code, in
:mod:`infonce_book.learning.pacbayes`; ``PRIOR_SCALES``, ``POSTERIOR_RATIOS`` and
``canonical_mean`` are re-exported here for the page.
"""

from ...learning.pacbayes import POSTERIOR_RATIOS, PRIOR_SCALES, canonical_mean
from .config import SIZES, STEM, GeneralisationSetup, setup
from .constants import (
    exercise_numbers,
    gaussian_ratio_moments,
    oracle_values,
    search_bias_glue,
    sharp_informative_n,
    smallest_n_below,
    vmf_ratio_moments,
    vmf_search_constant,
)
from .figures import (
    fig_bounds_vs_n,
    fig_certificates_vs_k,
    fig_direct_slack,
    fig_gap_vs_k,
    fig_gap_vs_n,
    fig_idea,
    fig_theorem1_terms,
)
from .gap_sweep import gap_k_sweep, ledger_gap_sweep, per_seed_slopes
from .headers import HEADERS
from .ledger import ledger_bound, ledger_gap
from .prose import (
    cv_ratio_sentence,
    direct_target_sentence,
    gap_glue,
    gap_sweep_sentence,
    informative_glue,
    informative_sentence,
    k_sweep_sentence,
    minus_signs,
    oracle_sentence,
    other_temperature_sentence,
    seeds_needed_sentence,
    signed_texts,
    target_sentence,
)
from .runners import cells, grid, train_cell
from .search_check import PROFILES, ledger_search_correction, search_correction_check
from .tables import (
    BOUNDS,
    MEASURED,
    below_cap_n,
    bound_summary,
    certificate_table,
    direct_slack_table,
    direct_table,
    gap_summary,
    gap_table,
    headline_table,
    informative_n,
    informative_table,
    k_sweep_table,
    search_bias_table,
    search_check_table,
    slack_table,
    theorem1_n_table,
)
from .theorem1_n import ledger_theorem1_n, theorem1_against_n

__all__ = ["HEADERS", "theorem1_against_n", "ledger_theorem1_n",
           "STEM", "SIZES", "GeneralisationSetup", "setup",
           "PRIOR_SCALES", "POSTERIOR_RATIOS", "canonical_mean",
           "vmf_search_constant", "vmf_ratio_moments", "gaussian_ratio_moments", "smallest_n_below",
           "exercise_numbers",
           "cells", "train_cell", "grid",
           "BOUNDS", "MEASURED", "bound_summary", "informative_n", "below_cap_n", "gap_summary", "gap_table",
           "headline_table", "certificate_table", "slack_table", "k_sweep_table", "oracle_values",
           "gap_k_sweep", "ledger_gap_sweep", "per_seed_slopes", "PROFILES", "search_correction_check",
           "ledger_search_correction",
           "ledger_bound", "ledger_gap",
           "informative_glue", "informative_sentence", "gap_glue", "other_temperature_sentence", "k_sweep_sentence",
           "gap_sweep_sentence", "seeds_needed_sentence", "oracle_sentence", "target_sentence", "informative_table", "search_bias_table",
           "search_check_table", "search_bias_glue", "sharp_informative_n",
           "fig_bounds_vs_n", "fig_certificates_vs_k", "fig_gap_vs_k", "fig_theorem1_terms",
           "fig_gap_vs_n", "fig_idea", "cv_ratio_sentence", "direct_target_sentence", "signed_texts", "minus_signs", "fig_direct_slack", "direct_table",
           "direct_slack_table", "theorem1_n_table"]
