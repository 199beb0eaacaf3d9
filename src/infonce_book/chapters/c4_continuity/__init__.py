"""Chapter 4, ``book/c4_continuity.md``: continuity bounds that keep the averaging, in the
similarities and in the embeddings (claim C4), the Lipschitz constants they give in the parameters
and the Rademacher complexity of the loss class, by covering and by vector contraction (claim C5).

The page constructs one :class:`ContinuitySetup` (the experiments' fixed choices, the embedding
classes' sizes among them) next to its models and passes both to the runners. Modules:
:mod:`.config` (``STEM``, ``SIZES``, :func:`setup`, :class:`ContinuitySetup`), :mod:`.runners`
(a configuration in, a tidy table out, cached; the predictions; the values the page quotes),
:mod:`.ledger` (the claims-ledger records and their verdict rules) and :mod:`.figures`
(``fig_*``); the two side claims (temperature and norms; dimension) in :mod:`.side_claims`
(runners; their records in :mod:`.ledger`, their figures in :mod:`.figures`; the design of their
replications, pilots and power calculations, in :mod:`.design`, their records in :mod:`.replications`). Every name the page uses is re-exported here.
"""

from ...experiment.prose import join_words
from .config import SIZES, STEM, ContinuitySetup, SideClaimsSetup, setup
from .design import PILOTS, REPLICATION_SEED, aligned_concentration, alignment, replication_design, seeds_for_power
from .figures import (
    fig_continuity_ratios,
    fig_dimension_sweep,
    fig_idea,
    fig_lipschitz_vs_k,
    fig_rademacher_sweeps,
    fig_temperature_sweep,
)
from .headers import HEADERS
from .ledger import (
    ledger_dimension,
    ledger_lipschitz,
    ledger_perturbations,
    ledger_rademacher,
    ledger_segments,
    ledger_temperature,
)
from .replications import (
    ledger_dimension_replication,
    ledger_temperature_replication,
    replication_table,
    replication_taus,
    resolved_taus,
)
from .runners import (
    PERTURBATIONS,
    complexity_glue,
    complexity_table,
    crossover_k,
    embedding_segments,
    exercise_numbers,
    expected_max_norm,
    lipschitz_check,
    lipschitz_constants,
    lipschitz_predictions,
    perturbations,
    rademacher_configs,
    rademacher_estimates,
    radius_exercise,
    radius_glue,
    sparse_average_ratio_limit,
)
from .side_claims import dimension_gap_replication, dimension_sweep, temperature_constants, temperature_sweep

__all__ = ["alignment", "replication_table", "join_words", "PILOTS", "REPLICATION_SEED", "replication_taus", "aligned_concentration", "replication_design", "seeds_for_power", "ledger_dimension_replication",
           "ledger_temperature_replication", "resolved_taus", "dimension_gap_replication", "HEADERS", "PERTURBATIONS", "SIZES", "STEM", "ContinuitySetup", "SideClaimsSetup", "dimension_sweep",
           "fig_dimension_sweep", "fig_temperature_sweep", "ledger_dimension", "ledger_temperature",
           "temperature_constants", "temperature_sweep", "complexity_glue", "complexity_table", "crossover_k",
           "embedding_segments", "exercise_numbers", "expected_max_norm", "fig_continuity_ratios", "fig_idea",
           "fig_lipschitz_vs_k", "fig_rademacher_sweeps", "ledger_lipschitz", "ledger_perturbations",
           "ledger_rademacher", "ledger_segments", "lipschitz_check", "lipschitz_constants", "lipschitz_predictions",
           "perturbations", "rademacher_configs", "rademacher_estimates", "radius_exercise", "radius_glue", "setup",
           "sparse_average_ratio_limit"]
