"""infonce_book: the library behind the executable book *InfoNCE as similarity search*.

One idea per module (see the book's notation page for the symbols):

* :mod:`infonce_book.losses`     -- the InfoNCE loss (standard and decoupled), log-space, chunked.
* :mod:`infonce_book.models`     -- reference models with samplers and closed forms (vMF).
* :mod:`infonce_book.exact`      -- exact finite-k references by Laplace/Frullani quadrature.
* :mod:`infonce_book.estimators` -- Monte Carlo estimators with confidence intervals.
* :mod:`infonce_book.bounds`     -- the non-asymptotic bounds of the book.
* :mod:`infonce_book.symbolic`   -- sympy derivations that chapters display and tests assert.
* :mod:`infonce_book.experiments`-- experiment runners: a config to a tidy table, cached on disk.
* :mod:`infonce_book.ledger`     -- the claims ledger.
* :mod:`infonce_book.pipeline`, :mod:`infonce_book.cli` -- papermill execution and the book build.
* :mod:`infonce_book.device`, :mod:`infonce_book.profiles` -- device and profile selection.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("infonce-book")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
