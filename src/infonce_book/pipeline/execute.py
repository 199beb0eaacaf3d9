"""One chapter executed by papermill (:func:`run_chapter`), and the environment its kernel runs in.

:func:`run_chapter` converts ``book/<chapter>.md`` with jupytext, executes it with papermill
(``profile``, ``device``, ``seed`` injected after the cell tagged ``parameters``) in this
interpreter with :func:`chapter_env`, hides the parameter cells and, only when every cell ran,
writes ``<build>/notebooks/<chapter>.ipynb`` and ``<build>/ledger/<chapter>.json``. It skips a
chapter whose source, parameters and ``src/`` (:func:`~infonce_book.experiment.paths.source_hash`;
jupyter-cache keys ignore imported code, jupyter-book #1633) are unchanged since its last run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from ..experiment.paths import PIPELINE_ENV, atomic_write_text, project_root, source_hash
from ..experiment.profiles import check_profile
from ..utils.device import resolve_device
from ..utils.validation import check_seed
from .pages import resolve_chapter
from .timings import record_timing

PIPELINE_VERSION = "1"
#: Thread settings of the chapter kernel, and the defaults :func:`kernel_thread_env` gives them.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY",
                    "MKL_DYNAMIC")


def available_cores() -> int:
    """The number of CPU cores this process may run on (its affinity mask, else ``os.cpu_count``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def kernel_thread_env(environ: dict | None = None) -> dict[str, str]:
    """One thread per available core in torch, MKL and OpenBLAS, and the *passive* OpenMP wait
    policy (idle threads sleep instead of spinning: on a small shared machine spinning threads
    made chapters 2-5 times slower); a variable already set in ``environ`` is kept."""
    environ = os.environ if environ is None else environ
    n = str(available_cores())
    wanted = dict(zip(THREAD_VARIABLES, (n, n, n, "PASSIVE", "FALSE")))
    return {k: environ.get(k) or v for k, v in wanted.items()}


def chapter_env(root: Path, build_dir: Path, ledger_dir: Path, *, environ: dict | None = None) -> dict[str, str]:
    """The variables a chapter's kernel runs with: ``INFONCE_BOOK_PIPELINE=1`` (figures only glued),
    the root, build and ledger folders, no progress bars, the inline matplotlib backend and
    :func:`kernel_thread_env`."""
    return {"INFONCE_BOOK_NO_PROGRESS": "1", "INFONCE_BOOK_LEDGER_DIR": str(ledger_dir),
            "INFONCE_BOOK_ROOT": str(root), "INFONCE_BOOK_BUILD_DIR": str(build_dir),
            "MPLBACKEND": "module://matplotlib_inline.backend_inline", PIPELINE_ENV: "1",
            **kernel_thread_env(environ)}


class ChapterError(RuntimeError):
    """A chapter failed to execute (the message names the chapter and the cell)."""


@dataclass
class RunResult:
    chapter: str
    status: str  # "ran" or "skipped"
    seconds: float
    notebook: Path


def _run_key(source: Path, params: dict, root: Path) -> str:
    parts = (PIPELINE_VERSION.encode(), source.read_bytes(), json.dumps(params, sort_keys=True).encode(),
             source_hash(root / "src").encode())
    return hashlib.sha256(b"".join(parts)).hexdigest()


def _kernel_manager():
    """A kernel manager whose kernel is this interpreter, whatever kernelspecs are installed (none
    where ipykernel came as carried wheels, or a ``python3`` spec naming another Python)."""
    from ipykernel.kernelspec import RESOURCES, get_kernel_dict  # heavy: only when a chapter runs
    from jupyter_client import AsyncKernelManager  # heavy: only when a chapter runs
    from jupyter_client.kernelspec import KernelSpec  # heavy: only when a chapter runs

    class OwnInterpreterKernelManager(AsyncKernelManager):
        @property
        def kernel_spec(self):
            if self._kernel_spec is None:
                self._kernel_spec = KernelSpec(resource_dir=RESOURCES, **get_kernel_dict())
            return self._kernel_spec

    return OwnInterpreterKernelManager


def _keep_partial_engine() -> str:
    """Register papermill's nbclient engine with one change: when execution stops with an exception
    of its own (the kernel died, a timeout), the partial notebook is still written to
    ``partial_path`` (papermill writes it only for a failing cell)."""
    from papermill.engines import NBClientEngine, papermill_engines  # heavy: only when a chapter runs

    class KeepPartialEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, partial_path=None, **kwargs):
            try:
                return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)
            except Exception:
                if partial_path is not None and nb_man.output_path is None:
                    nb_man.output_path = partial_path  # papermill's `finally` (notebook_complete) saves it
                raise

    papermill_engines.register("infonce-book", KeepPartialEngine)
    return "infonce-book"


def _last_started_cell(notebook: Path) -> str:
    """``"cell N, which begins '<first line>'"``: the cell papermill last started (status
    ``running``, else the last with a start time) in the partial notebook."""
    import nbformat  # heavy: only when a chapter runs

    try:
        nb = nbformat.read(notebook, as_version=4)
    except Exception:  # an unreadable partial notebook: say so, keep the original error
        return "an unknown cell (the partial notebook could not be read)"
    started = [(c.metadata.papermill.get("status") == "running", i, c) for i, c in enumerate(nb.cells)
               if c.get("metadata", {}).get("papermill", {}).get("start_time")]
    if not started:
        return "no cell (the kernel stopped before the first cell started)"
    _, i, cell = max(started, key=lambda s: s[:2])  # the last running, else the last started
    first = next((line for line in cell.source.splitlines() if line.strip()), "")
    return f"cell {i}, which begins {first[:80]!r}"


def _execute(in_path: Path, exec_path: Path, *, stem: str, source: Path, params: dict, failed: Path) -> float:
    """Execute ``in_path`` into ``exec_path`` with papermill; returns the seconds taken. Raises
    :class:`ChapterError` naming the failing cell (or the last that started, when the kernel died
    or timed out), keeping the partial notebook as ``failed`` when there is one."""
    import papermill as pm  # heavy: only when a chapter runs

    t0 = time.perf_counter()
    try:
        pm.execute_notebook(str(in_path), str(exec_path), parameters=params, kernel_name="python3",
                            cwd=str(source.parent), progress_bar=sys.stderr.isatty(),
                            log_output=False, request_save_on_cell_execute=False,
                            kernel_manager_class=_kernel_manager(),
                            engine_name=_keep_partial_engine(), partial_path=str(exec_path),
                            extra_arguments=["--IPKernelApp.log_level=CRITICAL"])  # the kernel's chatter
    except Exception as err:  # a failing cell; or the kernel died (e.g. killed for memory), a timeout, ...
        if exec_path.exists():
            shutil.copyfile(exec_path, failed)
        if isinstance(err, pm.PapermillExecutionError):
            raise ChapterError(f"chapter {stem} failed in cell {err.cell_index} (execution count {err.exec_count}): "
                               f"{err.ename}: {err.evalue}\n  source: {source}\n  executed notebook kept at: {failed}"
                               ) from None
        if not exec_path.exists():
            raise ChapterError(f"chapter {stem} failed before any cell ran: {type(err).__name__}: {err}"
                               f"\n  source: {source}") from None
        raise ChapterError(f"chapter {stem} failed: {type(err).__name__}: {err}; the last cell that started was "
                           f"{_last_started_cell(exec_path)}\n  source: {source}\n  partial notebook kept at: {failed}"
                           ) from None
    return time.perf_counter() - t0


def run_chapter(name: str, *, profile: str = "standard", device: str = "auto", seed: int = 0,
                build_dir: Path | None = None, force: bool = False, root: Path | None = None,
                log=print) -> RunResult:
    """Execute one chapter with papermill (see module docstring). Raises :class:`ChapterError`;
    ``ValueError`` for an unknown chapter, profile or seed."""
    import jupytext  # heavy: only when a chapter runs
    import nbformat  # heavy: only when a chapter runs (the light commands never import it)

    root = (root or project_root()).resolve()
    check_profile(profile)
    seed = check_seed(seed)
    dev = resolve_device(device)
    stem, source = resolve_chapter(name, root)
    build_dir = Path(build_dir or root / "_build").resolve()
    nb_dir, ledger_dir = build_dir / "notebooks", build_dir / "ledger"
    nb_dir.mkdir(parents=True, exist_ok=True)
    ledger_dir.mkdir(parents=True, exist_ok=True)
    out_nb, run_info, failed = (nb_dir / f"{stem}{ext}" for ext in (".ipynb", ".run.json", ".failed.ipynb"))
    params = {"profile": profile, "device": dev.type, "seed": int(seed)}
    key = _run_key(source, params, root)
    info = json.loads(run_info.read_text(encoding="utf-8")) if run_info.is_file() and out_nb.is_file() else {}
    if not force and info.get("key") == key:
        log(f"[{stem}] unchanged since its last run ({info.get('seconds', 0):.1f} s); skipped")
        return RunResult(stem, "skipped", 0.0, out_nb)

    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if not any("parameters" in c.get("metadata", {}).get("tags", []) for c in nb.cells):
        raise ChapterError(f"chapter {stem}: no cell is tagged 'parameters' in {source}")
    with tempfile.TemporaryDirectory(prefix=f"infonce-{stem}-") as tmp:
        tmp = Path(tmp)
        (tmp / "ledger").mkdir()
        in_path, exec_path = tmp / f"{stem}.input.ipynb", tmp / f"{stem}.ipynb"
        nbformat.write(nb, in_path)
        with mock.patch.dict(os.environ, chapter_env(root, build_dir, tmp / "ledger")):
            log(f"[{stem}] executing with profile={profile}, device={dev.type}, seed={seed}")
            seconds = _execute(in_path, exec_path, stem=stem, source=source, params=params, failed=failed)
        executed = nbformat.read(exec_path, as_version=4)
        for cell in executed.cells:  # the parameter cells are hidden
            tags = cell.get("metadata", {}).get("tags", [])
            if "parameters" in tags or "injected-parameters" in tags:
                cell.metadata["tags"] = sorted(set(tags) | {"remove-cell"})
        # The run record goes first and comes back last: a run stopped between the writes below
        # (killed, power cut) leaves no record, so the next run executes the chapter again.
        run_info.unlink(missing_ok=True)
        atomic_write_text(out_nb, nbformat.writes(executed))
        produced, ledger = tmp / "ledger" / f"{stem}.json", ledger_dir / f"{stem}.json"
        if produced.is_file():  # the run's ledger in place of the last one (none if it recorded no claims)
            atomic_write_text(ledger, produced.read_text(encoding="utf-8"))
        else:
            ledger.unlink(missing_ok=True)
    failed.unlink(missing_ok=True)
    atomic_write_text(run_info, json.dumps({"key": key, **params, "seconds": seconds,
                                            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=2))
    record_timing(build_dir, stem, profile, seconds)
    log(f"[{stem}] done in {seconds:.1f} s")
    return RunResult(stem, "ran", seconds, out_nb)
