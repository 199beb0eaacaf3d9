"""Chapter 6, ``book/c6_digits.md``: real data, handwritten digits (claim C7, and claims C1-C3
measured on a learned embedding).

The page constructs one :class:`DigitsSetup` (the experiment's fixed choices) in its parameter
cell and passes it to the runners, and uses this package as ``chapter``:

* :mod:`.config` -- ``STEM``, ``SIZES`` (per profile), :func:`setup` and :class:`DigitsSetup`;
* :mod:`.runners` -- a configuration in, a tidy table out, cached (the trained embeddings'
  weights are part of :func:`train_embeddings`'s table);
* :mod:`.ledger` -- ``ledger_*``: tables into claims-ledger records, with their verdict rules;
* :mod:`.glue` -- the numbers the page's prose quotes and its summary tables (glued with
  :func:`infonce_book.experiment.style.glue_all`);
* :mod:`.prose` -- the sentences generated from the results; :mod:`.roles` -- the page's names
  (``lo``/``hi``, ``k1``/``k2``) for the profile's temperatures and ks;
* :mod:`.figures` -- ``fig_*``, the page's figures.

:func:`~infonce_book.theory.stats.seeds_needed` (the exercise on seeds) and
:class:`~infonce_book.learning.embeddings.SphereMLP` (the embedding) are re-exported for the page
and its tests.
"""

from ...learning.embeddings import SphereMLP
from ...theory.stats import seeds_needed
from . import config, figures, glue, headers, ledger, prose, runners
from .config import *  # noqa: F403
from .figures import *  # noqa: F403
from .glue import *  # noqa: F403
from .headers import *  # noqa: F403
from .ledger import *  # noqa: F403
from .prose import *  # noqa: F403
from .runners import *  # noqa: F403

#: Every public name of the chapter's modules (each module's ``__all__``), and the re-exports above.
__all__ = [
    *config.__all__,
    *figures.__all__,
    *glue.__all__,
    *headers.__all__,
    *ledger.__all__,
    *prose.__all__,
    *runners.__all__,
    "SphereMLP",
    "seeds_needed",
]
