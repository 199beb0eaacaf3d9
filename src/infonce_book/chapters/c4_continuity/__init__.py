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
from . import config, design, figures, headers, ledger, replications, runners, side_claims
from .config import *  # noqa: F403
from .design import *  # noqa: F403
from .figures import *  # noqa: F403
from .headers import *  # noqa: F403
from .ledger import *  # noqa: F403
from .replications import *  # noqa: F403
from .runners import *  # noqa: F403
from .side_claims import *  # noqa: F403

#: Every public name of the chapter's modules (each module's ``__all__``), and the re-exports above.
__all__ = [
    *config.__all__,
    *design.__all__,
    *figures.__all__,
    *headers.__all__,
    *ledger.__all__,
    *replications.__all__,
    *runners.__all__,
    *side_claims.__all__,
    "join_words",
]
