"""Chapter 2, ``book/c2_search.md``: InfoNCE as similarity search over unseen data (claim C2).

The page constructs one :class:`SearchSetup` (the experiments' fixed choices) next to its models
and passes both to the runners. Modules: :mod:`.config` (``STEM``, ``SIZES``, :func:`setup`,
:class:`SearchSetup`), :mod:`.runners` (a configuration in, a tidy table out, cached; the values
the page quotes), :mod:`.ledger` (the claims-ledger records and their verdict rules) and
:mod:`.figures` (``fig_*``). Every name the page uses is re-exported here.
"""

from .config import SIZES, STEM, SearchSetup, setup
from .figures import fig_gaussian, fig_idea, fig_k_gap, fig_retrieval_accuracy, fig_search_vs_risk
from .headers import HEADERS
from .ledger import (
    ledger_bayes,
    ledger_constants,
    ledger_enumeration,
    ledger_exact,
    ledger_gaussian,
    ledger_monte_carlo,
    ledger_retrieval,
)
from .runners import _vmf3_top1_ideal as _vmf3_top1_ideal  # a helper that the tests check
from .runners import (
    bayes_enumeration,
    constants_table,
    exact_curve,
    exact_summary,
    exercise_values,
    gaussian_gap,
    gaussian_gap_monte_carlo,
    retrieval,
    retrieval_summary,
    retrieval_values,
)

__all__ = ["HEADERS",
           "SIZES", "STEM", "SearchSetup", "bayes_enumeration", "constants_table", "exact_curve", "exact_summary",
           "exercise_values", "fig_gaussian", "fig_k_gap", "fig_retrieval_accuracy", "fig_search_vs_risk",
           "gaussian_gap", "gaussian_gap_monte_carlo", "ledger_bayes", "ledger_constants", "ledger_enumeration",
           "ledger_exact", "ledger_gaussian", "ledger_monte_carlo", "ledger_retrieval", "retrieval",
           "retrieval_summary", "retrieval_values", "setup", "fig_idea"]
