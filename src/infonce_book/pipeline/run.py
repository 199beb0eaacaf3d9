"""The book pipeline: jupytext MyST notebooks -> papermill -> executed notebooks -> jupyter-book.

One name to import the pipeline by (``from infonce_book.pipeline import run as pipeline``); the
pieces live in modules of their own:

* :mod:`~infonce_book.pipeline.toc` -- the pages of ``_toc.yml``: :func:`toc_files`,
  :func:`executable_pages` (the chapters and the robustness page; ``chapters`` is its old name),
  :func:`back_matter`, :func:`resolve_chapter`;
* :mod:`~infonce_book.pipeline.kernel_env` -- the environment a chapter runs in
  (:func:`chapter_env`: ``INFONCE_BOOK_PIPELINE=1``, the build folders, :func:`kernel_thread_env`);
* :mod:`~infonce_book.pipeline.execute` -- :func:`run_chapter`: one chapter through papermill into
  ``<build>/notebooks/<chapter>.ipynb`` and ``<build>/ledger/<chapter>.json``, only when every cell
  ran; skipped when source, parameters and ``src/`` are unchanged (the key holds
  :func:`~infonce_book.experiment.paths.source_hash` of ``src/``; our own skip logic because
  jupyter-cache keys ignore imported code, jupyter-book #1633);
* :mod:`~infonce_book.pipeline.assemble` -- :func:`assemble_site`: the Jupyter Book source with
  the executed notebooks, the rerun boxes, the PDF links and the generated back matter;
* :mod:`~infonce_book.pipeline.build` -- :func:`build` (every chapter, then ``jupyter-book build
  -n -W --keep-going`` into ``<build>/html``) and :func:`record_timings` (the README's table).
"""

from __future__ import annotations

from .assemble import BOOK_PDF, GENERATED_SECTIONS, MARKER, PDF_PLACEHOLDER, assemble_site, html_dir, site_dir
from .build import build, record_timings
from .editions import EDITIONS
from .execute import PIPELINE_VERSION, ChapterError, RunResult, run_chapter
from .kernel_env import THREAD_VARIABLES, available_cores, chapter_env, kernel_thread_env
from .toc import UnknownChapter, back_matter, chapters, executable_pages, resolve_chapter, toc_files

__all__ = ["BOOK_PDF", "EDITIONS", "GENERATED_SECTIONS", "MARKER", "PDF_PLACEHOLDER", "PIPELINE_VERSION",
           "THREAD_VARIABLES", "ChapterError", "RunResult", "UnknownChapter", "assemble_site", "available_cores",
           "back_matter", "build", "chapter_env", "chapters", "executable_pages", "html_dir", "kernel_thread_env",
           "record_timings",
           "resolve_chapter", "run_chapter", "site_dir", "toc_files"]
