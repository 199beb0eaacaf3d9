"""Chapter 1, ``book/c1_rate.md``: the limit and its O(1/k) rate (claim C1).

The page constructs one :class:`RateSetup` (the experiments' fixed choices) next to its models
and passes both to the runners. Modules: :mod:`.config` (``STEM``, ``SIZES``, :func:`setup`,
:class:`RateSetup`), :mod:`.runners` (a configuration in, a tidy table out, cached; the values the
page quotes), :mod:`.ledger` (the claims-ledger records and their verdict rules) and
:mod:`.figures` (``fig_*``). Every name the page uses is re-exported here.
"""

from .config import SIZES, STEM, RateSetup, setup
from .figures import fig_bias_vs_k, fig_bounds_vs_k, fig_c1_heatmap, fig_idea, fig_in_batch, fig_k_bias_by_variant
from .headers import HEADERS
from .ledger import (
    ledger_bounds,
    ledger_exact,
    ledger_in_batch,
    ledger_monte_carlo,
    ledger_sweep,
    ledger_third_order,
)
from .runners import (
    bounds_table,
    c1_sweep,
    exact_curve,
    exact_summary,
    exercise_values,
    in_batch_exact,
    in_batch_monte_carlo,
    monte_carlo,
    ntxent_richardson,
    parameters_summary,
    richardson_c1,
    third_order_table,
)

__all__ = ["HEADERS",
           "SIZES", "STEM", "RateSetup", "bounds_table", "c1_sweep", "exact_curve", "exact_summary",
           "exercise_values", "fig_bias_vs_k", "fig_bounds_vs_k", "fig_c1_heatmap", "fig_in_batch",
           "fig_k_bias_by_variant", "in_batch_exact", "in_batch_monte_carlo", "ledger_bounds", "ledger_exact",
           "ledger_in_batch", "ledger_monte_carlo", "ledger_sweep", "ledger_third_order", "monte_carlo",
           "ntxent_richardson", "parameters_summary", "richardson_c1", "setup", "third_order_table", "fig_idea"]
