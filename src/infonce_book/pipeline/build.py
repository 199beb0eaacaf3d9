"""Every chapter executed: the HTML book (:func:`build`) and the recorded chapter times
(:func:`record_timings`).

:func:`build` runs every chapter of ``_toc.yml`` (:func:`~infonce_book.pipeline.execute.run_chapter`
skips one whose source, parameters and ``src/`` are unchanged since its last successful run),
assembles the Jupyter Book source (:func:`~infonce_book.pipeline.assemble.assemble_site`) and runs
``jupyter-book build`` with execution off and ``-n -W --keep-going``, into ``<build>/html`` (the
student edition, without solutions, into ``<build>/html-students``:
:mod:`infonce_book.pipeline.editions`). :func:`record_timings` measures every chapter for the
README's table and the rerun boxes (:mod:`~infonce_book.pipeline.timings`).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from ..experiment.ledger import load_records, summary_line
from ..experiment.paths import atomic_write_text, git_commit, project_root
from ..experiment.profiles import check_profile
from ..utils.device import resolve_device
from .assemble import assemble_site, html_dir
from .editions import EDITIONS
from .execute import run_chapter
from .kernel_env import available_cores, kernel_thread_env
from .timings import TIMES_FILE, cpu_model, load_average, load_recorded, update_readme
from .toc import chapters

__all__ = ["build", "record_timings"]


def build(*, profile: str = "standard", device: str = "auto", seed: int = 0, build_dir: Path | None = None,
          force: bool = False, root: Path | None = None, edition: str = "web", log=print) -> Path:
    """Execute every chapter (skipping unchanged ones), then build the HTML book.

    ``edition="students"`` builds the student edition (no solutions) into ``<build>/html-students``
    from the same executed chapters.

    Returns the path of the edition's ``index.html``. Raises :class:`ChapterError` when a chapter
    fails, ``RuntimeError`` when ``jupyter-book build`` reports an error or a warning.
    """
    root = (root or project_root()).resolve()
    build_dir = Path(build_dir or root / "_build").resolve()
    check_profile(profile)
    resolve_device(device)
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    results = []
    names = list(chapters(root))
    for stem in tqdm(names, desc="chapters", unit="chapter", disable=not sys.stderr.isatty()):
        results.append(run_chapter(stem, profile=profile, device=device, seed=seed, build_dir=build_dir,
                                   force=force, root=root, log=log))
    site = assemble_site(root, build_dir, profile=profile, device=device, seed=seed, edition=edition)
    log(f"[book] jupyter-book build of the {edition} edition (execution off, -n -W --keep-going)")
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) or shutil.which("jupyter-book")
    if jb is None:
        raise RuntimeError(f"jupyter-book was not found (neither next to {sys.executable} nor on PATH); the "
                           f"chapters were executed, but the book cannot be rendered: install the project "
                           f"with `make install` (or pip install -e .) and rerun")
    cmd = [jb, "build", str(site), "--builder", "html", "-n", "-W", "--keep-going"]
    # jupyter-book prints the pages' titles (non-ASCII): its output is UTF-8 whatever the locale.
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, encoding="utf-8", errors="replace",
                          env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    log_name = "jupyter-book.log" if edition == "web" else f"jupyter-book-{edition}.log"
    (build_dir / log_name).write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
        raise RuntimeError(f"jupyter-book build failed (exit {proc.returncode}); see "
                           f"{build_dir / log_name}\n{tail}")
    html = html_dir(build_dir, edition)
    tmp_html = html.with_name(html.name + ".new")
    shutil.rmtree(tmp_html, ignore_errors=True)
    shutil.copytree(site / "_build" / "html", tmp_html)
    shutil.rmtree(html, ignore_errors=True)
    tmp_html.rename(html)
    for r in results:
        log(f"  {r.chapter:<20} {r.status:<8} {r.seconds:7.1f} s")
    records = [r for r in load_records(build_dir / "ledger") if r.get("chapter") in names] \
        if (build_dir / "ledger").is_dir() else []
    log(f"[book] claims ledger: {summary_line(records)}; `infonce-book ledger` lists them, the book's "
        f"Reproducibility page shows them")
    log(f"[book] {html / 'index.html'}")
    return html / "index.html"


def record_timings(root: Path | None = None, *, profiles=("smoke", "standard"), names: list[str] | None = None,
                   log=print) -> dict:
    """Execute every chapter at each profile on the CPU (forced, in a fresh build folder, so with an
    empty experiment cache), write :data:`~infonce_book.pipeline.timings.TIMES_FILE` and the README
    table (see :mod:`infonce_book.pipeline.timings`); returns what was written."""
    import torch  # heavy: only the recording needs it

    root = (root or project_root()).resolve()
    names = names or list(chapters(root))
    out = load_recorded(root)
    out.update({
        "machine": {"cpu": cpu_model(), "cores": available_cores(), "python": platform.python_version(),
                    "torch": torch.__version__},
        "threads": kernel_thread_env(),
        "command": "infonce-book timings record",
    })
    with tempfile.TemporaryDirectory(prefix="infonce-times-") as tmp:
        for profile in profiles:
            before, seconds = load_average(), {}
            for stem in names:
                res = run_chapter(stem, profile=profile, device="cpu", seed=0, force=True, root=root,
                                  build_dir=Path(tmp) / profile, log=log)
                seconds[stem] = round(res.seconds, 1)
            out.setdefault("profiles", {})[profile] = {
                "recorded": time.strftime("%Y-%m-%d"), "commit": git_commit(root),
                "load_average": {"before": before, "after": load_average()}, "seconds": seconds}
    atomic_write_text(root / TIMES_FILE, json.dumps(out, indent=2) + "\n")
    update_readme(root, list(chapters(root)))
    return out
