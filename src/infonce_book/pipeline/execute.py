"""One chapter executed by papermill: :func:`run_chapter`.

:func:`run_chapter` converts ``book/<chapter>.md`` with jupytext, executes it with papermill
(parameters ``profile``, ``device``, ``seed`` injected after the cell tagged ``parameters``), hides
the parameter cells, and writes ``<build>/notebooks/<chapter>.ipynb`` -- only when every cell ran.
Its ledger records go to ``<build>/ledger/<chapter>.json``, also only on success. The kernel is the
interpreter running the pipeline and runs with :func:`~infonce_book.pipeline.kernel_env.chapter_env`
(``INFONCE_BOOK_PIPELINE=1``, one thread per core, passive OpenMP wait).

A chapter whose source, parameters and ``src/`` are unchanged since its last successful run is
skipped (its key holds :func:`~infonce_book.experiment.paths.source_hash` of ``src/``): jupyter-cache
keys ignore imported code (jupyter-book #1633).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..experiment.paths import atomic_write_text, project_root, source_hash
from ..experiment.profiles import check_profile
from ..utils.device import resolve_device
from ..utils.validation import check_seed
from .kernel_env import chapter_env
from .timings import record_timing
from .toc import resolve_chapter

__all__ = ["PIPELINE_VERSION", "ChapterError", "RunResult", "run_chapter"]

PIPELINE_VERSION = "1"


class ChapterError(RuntimeError):
    """A chapter failed to execute (the message names the chapter and the cell)."""


@dataclass
class RunResult:
    chapter: str
    status: str  # "ran" or "skipped"
    seconds: float
    notebook: Path


def _run_key(source: Path, params: dict, root: Path) -> str:
    h = hashlib.sha256()
    h.update(PIPELINE_VERSION.encode())
    h.update(source.read_bytes())
    h.update(json.dumps(params, sort_keys=True).encode())
    h.update(source_hash(root / "src").encode())
    return h.hexdigest()


def _hide_parameter_cells(nb) -> None:
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if "parameters" in tags or "injected-parameters" in tags:
            cell.metadata["tags"] = sorted(set(tags) | {"remove-cell"})


def _own_kernel_manager():
    """A kernel manager class whose kernel is this interpreter (``sys.executable -m ipykernel_launcher``).

    Whatever kernelspecs are installed: none where ipykernel came as carried wheels (an offline GPU
    machine), or a user's ``python3`` spec that names another interpreter. The chapter then always
    runs with the packages (torch build included) of the Python that runs the pipeline.
    """
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


#: The papermill engine of :func:`_keep_partial_engine`.
KEEP_PARTIAL_ENGINE = "infonce-book"


def _keep_partial_engine() -> str:
    """Register (idempotent) and name papermill's nbclient engine with one change: when execution
    stops with an exception of its own (the kernel died, a timeout), the partial notebook is
    written to ``partial_path``. papermill writes it for a failing cell, but not then (it saves
    only on request at every cell, which costs a write per cell)."""
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

    papermill_engines.register(KEEP_PARTIAL_ENGINE, KeepPartialEngine)
    return KEEP_PARTIAL_ENGINE


@contextlib.contextmanager
def _environ(updates: dict[str, str]):
    """``os.environ`` with ``updates`` inside the block, restored as it was afterwards."""
    saved = {k: os.environ.get(k) for k in updates}
    os.environ.update(updates)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _read_chapter(stem: str, source: Path):
    """The chapter as a notebook (jupytext), with the ``python3`` kernelspec; it must have a cell
    tagged ``parameters``."""
    import jupytext  # heavy: only when a chapter runs

    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if not any("parameters" in c.get("metadata", {}).get("tags", []) for c in nb.cells):
        raise ChapterError(f"chapter {stem}: no cell is tagged 'parameters' in {source}")
    return nb


def _last_started_cell(notebook: Path) -> str:
    """The cell papermill last started in the partial notebook ``notebook`` (status ``running``,
    else the last with a start time): ``"cell N, which begins '<first line>'"`` (N counts every cell
    of the executed notebook from 0, as for a failing cell)."""
    import nbformat  # heavy: only when a chapter runs

    try:
        nb = nbformat.read(notebook, as_version=4)
    except Exception:  # an unreadable partial notebook: say so, keep the original error
        return "an unknown cell (the partial notebook could not be read)"
    started = [(i, c) for i, c in enumerate(nb.cells)
               if c.get("metadata", {}).get("papermill", {}).get("start_time")]
    running = [(i, c) for i, c in started if c.metadata.papermill.get("status") == "running"]
    if not (running or started):
        return "no cell (the kernel stopped before the first cell started)"
    i, cell = (running or started)[-1]
    first = next((line for line in cell.source.splitlines() if line.strip()), "")
    return f"cell {i}, which begins {first[:80]!r}"


def _execute(in_path: Path, exec_path: Path, *, stem: str, source: Path, params: dict, failed: Path) -> float:
    """Execute the notebook ``in_path`` into ``exec_path`` with papermill (the environment is the
    caller's); returns the seconds taken.

    Raises:
        ChapterError: a cell raised (the message names the cell and the error), or the kernel died
            or timed out (it names the last cell that started). Either way the partial notebook
            papermill wrote is kept as ``failed`` (``<chapter>.failed.ipynb``) when there is one.
    """
    import papermill as pm  # heavy: only when a chapter runs

    t0 = time.perf_counter()
    try:
        pm.execute_notebook(str(in_path), str(exec_path), parameters=params, kernel_name="python3",
                            cwd=str(source.parent), progress_bar=sys.stderr.isatty(),
                            log_output=False, request_save_on_cell_execute=False,
                            kernel_manager_class=_own_kernel_manager(),
                            engine_name=_keep_partial_engine(), partial_path=str(exec_path),
                            # the kernel's own log (TCP notice, shutdown chatter) is noise
                            # here; cell errors still fail the run, naming the cell.
                            extra_arguments=["--IPKernelApp.log_level=CRITICAL"])
    except pm.PapermillExecutionError as err:
        if exec_path.exists():
            shutil.copyfile(exec_path, failed)
        raise ChapterError(
            f"chapter {stem} failed in cell {err.cell_index} (execution count {err.exec_count}): "
            f"{err.ename}: {err.evalue}\n  source: {source}\n  executed notebook kept at: {failed}"
        ) from None
    except Exception as err:  # the kernel died (e.g. killed for memory), a timeout, ...
        if not exec_path.exists():
            raise ChapterError(f"chapter {stem} failed before any cell ran: {type(err).__name__}: {err}"
                               f"\n  source: {source}") from None
        shutil.copyfile(exec_path, failed)
        raise ChapterError(
            f"chapter {stem} failed: {type(err).__name__}: {err}; the last cell that started was "
            f"{_last_started_cell(exec_path)}\n  source: {source}\n  partial notebook kept at: {failed}"
        ) from None
    return time.perf_counter() - t0


def _unchanged(out_nb: Path, run_info: Path, key: str) -> dict | None:
    """The last run's record when its notebook exists and its key is ``key``, else None."""
    if out_nb.is_file() and run_info.is_file():
        info = json.loads(run_info.read_text(encoding="utf-8"))
        if info.get("key") == key:
            return info
    return None


def run_chapter(name: str, *, profile: str = "standard", device: str = "auto", seed: int = 0,
                build_dir: Path | None = None, force: bool = False, root: Path | None = None,
                log=print) -> RunResult:
    """Execute one chapter with papermill (see module docstring). Raises :class:`ChapterError`;
    ``ValueError`` for an unknown chapter, profile or seed."""
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
    out_nb, run_info = nb_dir / f"{stem}.ipynb", nb_dir / f"{stem}.run.json"
    params = {"profile": profile, "device": dev.type, "seed": int(seed)}
    key = _run_key(source, params, root)
    info = None if force else _unchanged(out_nb, run_info, key)
    if info is not None:
        log(f"[{stem}] unchanged since its last run ({info.get('seconds', 0):.1f} s); skipped")
        return RunResult(stem, "skipped", 0.0, out_nb)

    nb = _read_chapter(stem, source)
    with tempfile.TemporaryDirectory(prefix=f"infonce-{stem}-") as tmp:
        tmp = Path(tmp)
        tmp_ledger = tmp / "ledger"
        tmp_ledger.mkdir()
        in_path, exec_path = tmp / f"{stem}.input.ipynb", tmp / f"{stem}.ipynb"
        nbformat.write(nb, in_path)
        with _environ(chapter_env(root, build_dir, tmp_ledger)):
            log(f"[{stem}] executing with profile={profile}, device={dev.type}, seed={seed}")
            seconds = _execute(in_path, exec_path, stem=stem, source=source, params=params,
                               failed=nb_dir / f"{stem}.failed.ipynb")
        executed = nbformat.read(exec_path, as_version=4)
        _hide_parameter_cells(executed)
        # The run record goes first and comes back last: a run stopped between the writes below
        # (killed, power cut) leaves no record, so the next run executes the chapter again.
        run_info.unlink(missing_ok=True)
        atomic_write_text(out_nb, nbformat.writes(executed))
        _move_ledger(tmp_ledger / f"{stem}.json", ledger_dir / f"{stem}.json")
    (nb_dir / f"{stem}.failed.ipynb").unlink(missing_ok=True)
    atomic_write_text(run_info, json.dumps({"key": key, **params, "seconds": seconds,
                                            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=2))
    record_timing(build_dir, stem, profile, seconds)
    log(f"[{stem}] done in {seconds:.1f} s")
    return RunResult(stem, "ran", seconds, out_nb)


def _move_ledger(produced: Path, final: Path) -> None:
    """The run's ledger file in place of the last one (none if the run recorded no claims)."""
    if produced.is_file():
        atomic_write_text(final, produced.read_text(encoding="utf-8"))
    else:
        final.unlink(missing_ok=True)

