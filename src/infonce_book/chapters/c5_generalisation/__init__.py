"""Chapter 5, ``book/c5_generalisation.md``: the generalisation bound for similarity search with
sharp constants and a PAC-Bayes certificate (claim C6), and the generalisation gap of trained
embeddings on synthetic models (claim C7).

The page constructs one :class:`GeneralisationSetup` (confidence levels, steps, test and Monte
Carlo sizes, the PAC-Bayes design) in its parameter cell, next to its models, and passes both to
the runners. Modules:

* :mod:`.setup`: ``STEM``, ``SIZES``, :func:`setup`, :class:`GeneralisationSetup`;
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
from .constants import (
    exercise_numbers,
    gaussian_ratio_moments,
    smallest_n_below,
    vmf_ratio_moments,
    vmf_search_constant,
)
from .figures import fig_bounds_vs_n, fig_gap_vs_n, fig_theorem1_terms
from .ledger import ledger_bound, ledger_gap
from .prose import gap_glue, nonvacuous_glue, nonvacuous_sentence
from .runners import cells, grid, train_cell
from .setup import SIZES, STEM, GeneralisationSetup, setup
from .tables import BOUNDS, bound_summary, gap_summary, gap_table, headline_table, nonvacuous_n

__all__ = ["STEM", "SIZES", "GeneralisationSetup", "setup",
           "PRIOR_SCALES", "POSTERIOR_RATIOS", "canonical_mean",
           "vmf_search_constant", "vmf_ratio_moments", "gaussian_ratio_moments", "smallest_n_below",
           "exercise_numbers",
           "cells", "train_cell", "grid",
           "BOUNDS", "bound_summary", "nonvacuous_n", "gap_summary", "gap_table", "headline_table",
           "ledger_bound", "ledger_gap",
           "nonvacuous_glue", "nonvacuous_sentence", "gap_glue",
           "fig_bounds_vs_n", "fig_theorem1_terms", "fig_gap_vs_n"]
