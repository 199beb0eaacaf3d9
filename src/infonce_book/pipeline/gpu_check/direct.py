"""The direct chapter runner: a chapter's code cells in a plain interpreter, without papermill.

The chapters stage uses it when the notebook tool chain does not import (no carried wheels, or a
carried kernel that cannot start). Like :func:`infonce_book.pipeline.execute.run_chapter` it reads
the chapter with jupytext, sets the parameters after the cell tagged ``parameters``, runs with the
pipeline's environment (:func:`~infonce_book.pipeline.kernel_env.chapter_env`:
``INFONCE_BOOK_PIPELINE=1``, the root, build and ledger folders, one thread per core and the
passive OpenMP wait policy; matplotlib's ``Agg`` backend) in the chapter's folder, and keeps the
ledger records only when every cell ran. It renders nothing: ``myst_nb.glue`` only records the
value and, where IPython is missing, ``IPython.display``'s objects only hold their data.

Where jupytext itself is missing (no carried wheels at all: the GPU machine's image has no
jupytext), the cells are read by :func:`myst_code_cells`, a reader of the MyST code-cell syntax
that the tests check gives jupytext's cells (sources and tags) for every page of the book.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
import types
from pathlib import Path

from ...experiment.paths import atomic_write_text
from ..kernel_env import chapter_env
from ..timings import record_timing
from .machine import ROOT

__all__ = ["myst_code_cells", "read_code_cells", "run_direct"]

_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```[ \t]*$", flags=re.S | re.M)


def myst_code_cells(text: str) -> list[tuple[list[str], str]]:
    """``[(tags, source)]`` of a jupytext MyST notebook's code cells (options lines removed): the
    reader used where jupytext does not import."""
    cells = []
    for body in _CELL.findall(text):
        lines, tags = body.split("\n"), []
        if lines and lines[0].strip() == "---":  # YAML options block
            end = lines.index("---", 1)
            opts, lines = lines[1:end], lines[end + 1:]
            tags = re.findall(r"[\w-]+", " ".join(o for o in opts if o.strip().startswith("tags")))[1:]
        else:
            while lines and lines[0].startswith(":"):
                if lines[0].startswith(":tags:"):
                    tags = re.findall(r"[\w-]+", lines[0][len(":tags:"):])
                lines = lines[1:]
        cells.append((tags, "\n".join(lines).strip("\n")))
    return cells


def read_code_cells(source: Path) -> tuple[list[tuple[list[str], str]], str]:
    """``([(tags, source)], reader)`` of the chapter ``source``'s code cells, read by jupytext as the
    pipeline reads them (``reader="jupytext"``), or by :func:`myst_code_cells` where jupytext is not
    importable (``reader="myst"``)."""
    try:
        import jupytext  # optional: a carried wheel; without it, the MyST reader below
    except ImportError:
        return myst_code_cells(Path(source).read_text(encoding="utf-8")), "myst"
    nb = jupytext.read(source)
    return [(list(c.get("metadata", {}).get("tags", [])), c.source) for c in nb.cells
            if c.cell_type == "code"], "jupytext"


def _install_stubs() -> None:
    """Outside a notebook there is nothing to glue into or display: ``myst_nb.glue`` only records
    the value, and where IPython is missing (no carried wheels) ``IPython.display``'s objects only
    hold their data and ``get_ipython()`` is None."""
    myst_nb = types.ModuleType("myst_nb")
    myst_nb.glued = {}

    def glue(name, variable, display=True):
        myst_nb.glued[name] = variable

    myst_nb.glue = glue
    sys.modules["myst_nb"] = myst_nb
    try:
        import IPython.display  # noqa: F401  # optional: a carried wheel; without it, the stand-ins below
    except ImportError:
        class Rich:
            def __init__(self, data=None, *args, **kwargs):
                self.data = data

            def __repr__(self):
                return str(self.data)

        ipython = types.ModuleType("IPython")
        display = types.ModuleType("IPython.display")
        display.Math = display.Markdown = display.HTML = display.Latex = Rich
        display.display = lambda *objs, **kwargs: None
        # libraries that look for IPython (matplotlib does) find no running shell
        ipython.display, ipython.get_ipython, ipython.version_info = display, lambda: None, (0, 0, 0, "stub")
        sys.modules.update({"IPython": ipython, "IPython.display": display})


def _exec_cells(chapter: str, cells, *, profile: str, device: str, seed: int) -> None:
    """Execute the cells in one namespace, the parameters set after the ``parameters`` cell;
    an exception propagates from the cell (its file name: ``<CHAPTER cell I>``, I from 0)."""
    namespace = {"__name__": "__main__"}
    for i, (tags, src) in enumerate(cells):
        if "parameters" in tags:
            src += f"\nprofile = {profile!r}\ndevice = {device!r}\nseed = {int(seed)!r}"
        exec(compile(src, f"<{chapter} cell {i}>", "exec"), namespace)  # the book's own code
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None:  # as a notebook kernel does at the end of a cell: no figure stays open
            plt.close("all")


def run_direct(chapter: str, *, profile: str, device: str, seed: int, build_dir: Path, root: Path = ROOT) -> float:
    """Execute ``<root>/book/<chapter>.md``'s code cells in this interpreter (see the module
    docstring). Ledger records go to ``<build_dir>/ledger/<chapter>.json`` (only when every cell
    ran), the time to ``<build_dir>/timings.json``. Returns the seconds taken.

    Call it in a fresh process: it changes ``os.environ`` and the working directory, and the thread
    variables only act on libraries imported after it set them.

    Raises:
        ValueError: no code cell is tagged ``parameters``.
        Exception: whatever a cell raises (the traceback names the cell).
    """
    root, build_dir = Path(root).resolve(), Path(build_dir).resolve()
    source = root / "book" / f"{chapter}.md"
    ledger_dir = build_dir / "ledger"
    ledger_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"infonce-{chapter}-") as tmp:
        # The environment first: nothing below may import NumPy or torch before the thread settings.
        os.environ.update(chapter_env(root, build_dir, Path(tmp), mpl_backend="Agg"))
        cells, reader = read_code_cells(source)
        if not any("parameters" in tags for tags, _ in cells):
            raise ValueError(f"chapter {chapter}: no code cell tagged 'parameters' in {source}")
        print(f"[{chapter}] direct runner, cells read by {reader}; profile={profile}, device={device}, "
              f"seed={seed}", file=sys.stderr, flush=True)
        _install_stubs()
        os.chdir(source.parent)
        t0 = time.perf_counter()
        _exec_cells(chapter, cells, profile=profile, device=device, seed=seed)
        seconds = time.perf_counter() - t0
        produced, final = Path(tmp) / f"{chapter}.json", ledger_dir / f"{chapter}.json"
        if produced.is_file():
            atomic_write_text(final, produced.read_text(encoding="utf-8"))
        else:
            final.unlink(missing_ok=True)
    record_timing(build_dir, chapter, profile, seconds)
    return seconds


def main_direct_chapter(args) -> int:
    """``gpu_check.py direct-chapter CHAPTER``: :func:`run_direct` (the root: ``INFONCE_BOOK_ROOT``,
    else the tree)."""
    s = run_direct(args.chapter, profile=args.profile, device=args.device, seed=args.seed,
                   build_dir=Path(args.build_dir), root=Path(os.environ.get("INFONCE_BOOK_ROOT", ROOT)).resolve())
    print(f"[{args.chapter}] done in {s:.1f} s (direct runner)", file=sys.stderr)
    return 0

