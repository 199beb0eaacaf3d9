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
from . import (
    config,
    constants,
    figures,
    gap_sweep,
    headers,
    ledger,
    prose,
    runners,
    search_check,
    tables,
    theorem1_n,
)
from .config import *  # noqa: F403
from .constants import *  # noqa: F403
from .figures import *  # noqa: F403
from .gap_sweep import *  # noqa: F403
from .headers import *  # noqa: F403
from .ledger import *  # noqa: F403
from .prose import *  # noqa: F403
from .runners import *  # noqa: F403
from .search_check import *  # noqa: F403
from .tables import *  # noqa: F403
from .theorem1_n import *  # noqa: F403

#: Every public name of the chapter's modules (each module's ``__all__``), and the re-exports above.
__all__ = [
    *config.__all__,
    *constants.__all__,
    *figures.__all__,
    *gap_sweep.__all__,
    *headers.__all__,
    *ledger.__all__,
    *prose.__all__,
    *runners.__all__,
    *search_check.__all__,
    *tables.__all__,
    *theorem1_n.__all__,
    "POSTERIOR_RATIOS",
    "PRIOR_SCALES",
    "canonical_mean",
]
