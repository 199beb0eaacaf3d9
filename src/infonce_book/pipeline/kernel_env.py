"""The environment a chapter runs in: the pipeline's variables and the kernel's thread settings.

:func:`chapter_env` is what the pipeline sets for a chapter's kernel (papermill,
:func:`infonce_book.pipeline.execute.run_chapter`): ``INFONCE_BOOK_PIPELINE=1`` (figures only
glued, not also displayed), the root, build and ledger folders, no progress bars, the matplotlib
backend, and :func:`kernel_thread_env`.

Standard library only: the thread variables must be set before NumPy or torch is imported.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..experiment.paths import PIPELINE_ENV

__all__ = ["INLINE_BACKEND", "THREAD_VARIABLES", "available_cores", "chapter_env", "kernel_thread_env"]

#: Thread settings of the chapter kernel, and the defaults :func:`kernel_thread_env` gives them.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY",
                    "MKL_DYNAMIC")
#: The matplotlib backend of a notebook kernel (figures as PNG outputs).
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


def available_cores() -> int:
    """The number of CPU cores this process may run on (its affinity mask, else ``os.cpu_count``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def kernel_thread_env(environ: dict | None = None) -> dict[str, str]:
    """The thread settings a chapter kernel runs with (what the user set wins).

    torch (OpenMP, MKL) and NumPy (OpenBLAS) each start one thread per core; by default OpenMP
    threads also *spin* at every barrier. On a small machine shared with another busy process
    the spinning threads take turns with the process that has work to do, and chapters ran
    2-5 times slower. So the kernel gets one thread per available core
    (:func:`available_cores`) in each library and the *passive* wait policy (idle threads
    sleep instead of spinning); a variable already set in the environment is kept as it is.
    """
    environ = os.environ if environ is None else environ
    n = str(available_cores())
    wanted = {"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n,
              "OMP_WAIT_POLICY": "PASSIVE", "MKL_DYNAMIC": "FALSE"}
    assert tuple(wanted) == THREAD_VARIABLES
    return {k: environ.get(k) or v for k, v in wanted.items()}


def chapter_env(root: Path, build_dir: Path, ledger_dir: Path, *, mpl_backend: str = INLINE_BACKEND,
                environ: dict | None = None) -> dict[str, str]:
    """The variables a chapter runs with under the pipeline (to put into ``os.environ``).

    ``root``: the project root; ``build_dir``: the build folder (the chapter's cache lives in
    ``<build_dir>/cache`` unless ``INFONCE_BOOK_CACHE_DIR`` is set); ``ledger_dir``: where its
    ledger records go; ``mpl_backend``: :data:`INLINE_BACKEND` in a notebook kernel, ``"Agg"``
    in a plain interpreter; ``environ`` (default ``os.environ``): what the user set, which wins
    for the thread variables (:func:`kernel_thread_env`).
    """
    return {"INFONCE_BOOK_NO_PROGRESS": "1", "INFONCE_BOOK_LEDGER_DIR": str(ledger_dir),
            "INFONCE_BOOK_ROOT": str(root), "INFONCE_BOOK_BUILD_DIR": str(build_dir),
            "MPLBACKEND": mpl_backend, PIPELINE_ENV: "1", **kernel_thread_env(environ)}
