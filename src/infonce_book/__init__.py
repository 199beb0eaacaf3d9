"""infonce_book: the library behind the executable book *InfoNCE as similarity search*.

Layers, bottom to top (imports only go down; ``tests/test_layout.py`` checks it):

* :mod:`infonce_book.utils`      -- argument validation, device selection, progress bars.
* :mod:`infonce_book.losses`     -- the InfoNCE loss: what library users import.
* :mod:`infonce_book.theory`     -- exact references, bounds, symbolic derivations, search kernels,
  estimators, and the one uncertainty type ``Estimate``.
* :mod:`infonce_book.models`     -- reference models behind one interface (``sample_tuples``,
  ``log_density_ratio``, ``from_params``).
* :mod:`infonce_book.learning`   -- embedding classes, ERM training, Rademacher estimates.
* :mod:`infonce_book.datasets`   -- real data (handwritten digits).
* :mod:`infonce_book.experiment` -- what every chapter uses: ledger, cache, set-up, paths, style.
* :mod:`infonce_book.chapters`   -- one module per chapter page (runners, ledger rules, sizes, figures).
* :mod:`infonce_book.pipeline`   -- papermill runs, the site build, the CLI, the generated back matter.
* :mod:`infonce_book.testing`    -- the table of validated bad inputs (tests and the robustness page).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("infonce-book")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
