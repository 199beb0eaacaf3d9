"""Chapter 3, ``book/c3_temperature.md``: temperature as a regulariser of the similarity search
(claim C3).

The page constructs one :class:`TemperatureSetup` (the experiments' fixed choices) next to its
model and passes both to the runners. Modules: :mod:`.config` (``STEM``, ``SIZES``,
:func:`setup`, :class:`TemperatureSetup`), :mod:`.runners` (a configuration in, a tidy table out,
cached; the values the page quotes), :mod:`.ledger` (the claims-ledger records and their verdict
rules), :mod:`.prose` (the phrases the page glues) and :mod:`.figures` (``fig_*``). Every name
the page uses is re-exported here.
"""

from .config import SIZES, STEM, TemperatureSetup, setup
from .figures import embedding_label, fig_gap_vs_tau, fig_idea, fig_kl_vs_tau
from .headers import HEADERS
from .ledger import ledger_approximation, ledger_decoupled, ledger_gap, ledger_kl_and_tau, ledger_sharp_kl
from .runners import _two_cluster_sample as _two_cluster_sample  # a helper that the tests check
from .runners import (
    approximation_gain_monte_carlo,
    approximation_table,
    decoupled_minimisers,
    exercise_values,
    gap_across_taus,
    gap_summary,
    kl_sweep,
    learned_tau,
    sharp_kl_check,
)

__all__ = ["HEADERS",
           "SIZES", "STEM", "TemperatureSetup", "approximation_gain_monte_carlo", "approximation_table",
           "decoupled_minimisers", "embedding_label", "exercise_values", "fig_gap_vs_tau", "fig_kl_vs_tau", "gap_across_taus",
           "gap_summary", "kl_sweep", "learned_tau", "ledger_approximation", "ledger_decoupled", "ledger_gap",
           "ledger_kl_and_tau", "ledger_sharp_kl", "setup", "sharp_kl_check", "fig_idea"]
