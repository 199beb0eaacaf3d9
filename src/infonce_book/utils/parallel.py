"""Independent, seeded jobs on several CPU processes: :func:`map_processes`.

For grids of small training runs (one thread each; see :func:`~infonce_book.utils.device.one_thread`)
whose results do not depend on the order in which they run: each job has its own seed, so the
results are bit for bit those of a serial run, returned in the jobs' order. Processes are started
with ``spawn`` (never ``fork``: a forked copy of a process that has used torch's thread pool can
hang), so a job's function must be importable by name and its arguments picklable.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from .progress import progress

__all__ = ["cpu_workers", "map_processes"]


def cpu_workers(limit: int = 4) -> int:
    """How many worker processes to use: ``INFONCE_BOOK_WORKERS`` if set (an integer >= 1), else
    the CPUs this process may run on, at most ``limit``.

    Raises:
        ValueError: ``INFONCE_BOOK_WORKERS`` set to something other than a positive integer.
    """
    env = os.environ.get("INFONCE_BOOK_WORKERS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"INFONCE_BOOK_WORKERS must be a positive integer, got {env!r}")
        return int(env)
    return max(1, min(limit, len(os.sched_getaffinity(0))))


def map_processes(fn: Callable[..., Any], jobs: Sequence[dict], *, workers: int, desc: str = "") -> list:
    """``[fn(**job) for job in jobs]``, on ``workers`` processes when ``workers > 1`` (in this
    process otherwise), in the order of ``jobs``, with a progress bar.

    A job that raises raises here (the first in completion order), after the pool is shut down.
    """
    if workers <= 1 or len(jobs) <= 1:
        return [fn(**job) for job in progress(jobs, desc=desc)]
    out: list = [None] * len(jobs)
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(fn, **job): i for i, job in enumerate(jobs)}
        for future in progress(as_completed(futures), total=len(jobs), desc=desc):
            out[futures[future]] = future.result()
    return out
