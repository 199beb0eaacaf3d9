"""The book machinery on top of the chapters: papermill runs and the site build (:mod:`~.run`),
the ``infonce-book`` command (:mod:`~.cli`), the generated back matter (:mod:`~.citation`,
:mod:`~.reproducibility`) and a small Sphinx extension (:mod:`~.sphinx_ext`). It never imports a
chapter module or :mod:`infonce_book.testing`: it runs pages, it does not compute results."""
