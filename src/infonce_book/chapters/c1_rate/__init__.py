"""Chapter 1, ``book/c1_rate.md``: the limit and its O(1/k) rate (claim C1).

The page constructs one :class:`RateSetup` (the experiments' fixed choices) next to its models
and passes both to the runners. Modules: :mod:`.config` (``STEM``, ``SIZES``, :func:`setup`,
:class:`RateSetup`), :mod:`.runners` (a configuration in, a tidy table out, cached; the values the
page quotes), :mod:`.ledger` (the claims-ledger records and their verdict rules) and
:mod:`.figures` (``fig_*``). Every name the page uses is re-exported here.
"""

from . import config, figures, headers, ledger, runners
from .config import *  # noqa: F403
from .figures import *  # noqa: F403
from .headers import *  # noqa: F403
from .ledger import *  # noqa: F403
from .runners import *  # noqa: F403

#: Every public name of the chapter's modules (each module's ``__all__``), and the re-exports above.
__all__ = [*config.__all__, *figures.__all__, *headers.__all__, *ledger.__all__, *runners.__all__]
