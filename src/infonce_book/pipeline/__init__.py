"""The book machinery on top of the chapters: papermill runs and the site build (:mod:`~.run`, which
gathers :mod:`~.toc`, :mod:`~.kernel_env`, :mod:`~.execute`, :mod:`~.assemble` and :mod:`~.build`),
the ``infonce-book`` command (:mod:`~.cli`), the generated back matter (:mod:`~.citation`,
:mod:`~.reproducibility`) and a small Sphinx extension (:mod:`~.sphinx_ext`); the GPU check is
``scripts/gpu_check.py``. It never imports a chapter module or :mod:`infonce_book.testing`: it runs
pages, it does not compute results."""
