"""The book machinery on top of the chapters: papermill runs and the site build (:mod:`~.run`, with
:mod:`~.toc` and :mod:`~.execute`), the ``infonce-book`` command (:mod:`~.cli`), the generated back
matter (:mod:`~.citation`, :mod:`~.reproducibility`, :mod:`~.reading_path`), the PDFs (:mod:`~.typeset`)
and the book's Sphinx extension (:mod:`~.sphinx_ext`). It never imports a chapter module or
:mod:`infonce_book.testing`: it runs pages, it does not compute results."""
