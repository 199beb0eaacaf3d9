"""The book pipeline: jupytext MyST notebooks -> papermill -> executed notebooks -> jupyter-book.

* :func:`run_chapter` converts ``book/<chapter>.md`` with jupytext, executes it with papermill
  (parameters ``profile``, ``device``, ``seed`` injected after the cell tagged ``parameters``),
  hides the parameter cells, and writes ``<build>/notebooks/<chapter>.ipynb`` -- only when every
  cell ran. Its ledger records go to ``<build>/ledger/<chapter>.json``, also only on success.
  The kernel runs with :func:`kernel_thread_env` (one thread per core, passive OpenMP wait) and
  ``INFONCE_BOOK_PIPELINE=1`` (figures are then glued only, not also displayed).
* :func:`build` runs every chapter of ``_toc.yml`` (skipping one whose source, parameters and
  ``src/`` are unchanged since its last successful run), assembles the Jupyter Book source with
  the executed notebooks in place of the ``.md`` chapters, and runs ``jupyter-book build`` with
  execution off and ``-n -W --keep-going``, into ``<build>/html`` (the student edition, without
  solutions, into ``<build>/html-students``: :mod:`infonce_book.pipeline.editions`).
* While assembling, it adds what no chapter has to write (see :func:`_assemble_site`): a "Rerun
  this chapter" box and a (hidden until ``infonce-book pdf`` has run) link to the chapter's PDF
  on every chapter page, the generated "How to cite" entries, reproducibility appendix and the
  intro's reading path (:mod:`~infonce_book.pipeline.citation`,
  :mod:`~infonce_book.pipeline.reproducibility`, :mod:`~infonce_book.pipeline.reading_path`),
  the book's version and commit in the footer, and no launch buttons while the repository URL
  is a placeholder.
* :func:`record_timings` measures every chapter for the README's table and the rerun boxes
  (:mod:`~infonce_book.pipeline.timings`).

Why our own skip logic: jupyter-cache keys ignore imported code (jupyter-book #1633).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from tqdm import tqdm

from .. import __version__
from ..experiment.ledger import load_records, summary_line
from ..experiment.paths import PIPELINE_ENV, atomic_write_text, git_commit, project_root
from ..experiment.profiles import check_profile
from ..utils.device import resolve_device
from ..utils.validation import check_seed
from .citation import BACK_MATTER, cite_markdown, footer_html, repository_is_placeholder, toc_pages
from .editions import EDITIONS, strip_solutions_site
from .reading_path import reading_path_markdown
from .reproducibility import appendix_markdown, load_run_info, load_timings, rerun_box
from .timings import TIMES_FILE, cpu_model, load_average, load_recorded, update_readme

PIPELINE_VERSION = "1"


class ChapterError(RuntimeError):
    """A chapter failed to execute (the message names the chapter and the cell)."""


class UnknownChapter(ValueError):
    pass


@dataclass
class RunResult:
    chapter: str
    status: str  # "ran" or "skipped"
    seconds: float
    notebook: Path


def _front_matter(text: str) -> dict:
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    return yaml.safe_load(text[3:end]) or {} if end > 0 else {}


def toc_files(root: Path | None = None) -> list[str]:
    """The files of ``_toc.yml`` in order (paths relative to the root, without extension)."""
    root = root or project_root()
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    out = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                out.append(e["file"])
            walk(e.get("sections"))
            for part in e.get("parts", []) or []:
                walk(part.get("chapters"))

    walk(toc.get("chapters"))
    for part in toc.get("parts", []) or []:
        walk(part.get("chapters"))
    return out


def chapters(root: Path | None = None) -> dict[str, Path]:
    """Executable chapters: toc entries whose ``.md`` is a jupytext notebook (has a kernelspec)."""
    root = root or project_root()
    out = {}
    for f in toc_files(root):
        p = root / f"{f}.md"
        if p.is_file() and "kernelspec" in _front_matter(p.read_text()):
            out[p.stem] = p
    return out


def back_matter(root: Path | None = None) -> set[str]:
    """The toc files (``book/<name>``) of the "Back matter" part: pages, not chapters (no rerun
    box, no citation entry), even when one of them executes code."""
    return {file for file, caption in toc_pages(root or project_root())
            if caption.strip().lower() == BACK_MATTER}


def resolve_chapter(name: str, root: Path | None = None) -> tuple[str, Path]:
    """Accept ``c1_rate``, ``book/c1_rate`` or ``book/c1_rate.md``; raise if unknown."""
    known = chapters(root)
    stem = Path(name).stem
    if stem not in known:
        raise UnknownChapter(f"unknown chapter {name!r}; the chapters are: {', '.join(known)}")
    return stem, known[stem]


def src_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted((root / "src").rglob("*.py")):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def _run_key(source: Path, params: dict, root: Path) -> str:
    h = hashlib.sha256()
    h.update(PIPELINE_VERSION.encode())
    h.update(source.read_bytes())
    h.update(json.dumps(params, sort_keys=True).encode())
    h.update(src_hash(root).encode())
    return h.hexdigest()


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


def run_chapter(name: str, *, profile: str = "standard", device: str = "auto", seed: int = 0,
                build_dir: Path | None = None, force: bool = False, root: Path | None = None,
                log=print) -> RunResult:
    """Execute one chapter with papermill (see module docstring). Raises :class:`ChapterError`."""
    # The execution stack is imported only when a chapter runs (fast `ledger`, `chapters`):
    import jupytext  # heavy: see above
    import nbformat  # heavy: see above
    import papermill as pm  # heavy: see above

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
    if not force and out_nb.is_file() and run_info.is_file():
        info = json.loads(run_info.read_text())
        if info.get("key") == key:
            log(f"[{stem}] unchanged since its last run ({info.get('seconds', 0):.1f} s); skipped")
            return RunResult(stem, "skipped", 0.0, out_nb)

    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if not any("parameters" in c.get("metadata", {}).get("tags", []) for c in nb.cells):
        raise ChapterError(f"chapter {stem}: no cell is tagged 'parameters' in {source}")
    threads = kernel_thread_env()
    env_keys = ("INFONCE_BOOK_NO_PROGRESS", "INFONCE_BOOK_LEDGER_DIR", "INFONCE_BOOK_ROOT",
                "INFONCE_BOOK_BUILD_DIR", "MPLBACKEND", PIPELINE_ENV, *threads)
    saved = {k: os.environ.get(k) for k in env_keys}
    with tempfile.TemporaryDirectory(prefix=f"infonce-{stem}-") as tmp:
        tmp = Path(tmp)
        tmp_ledger = tmp / "ledger"
        tmp_ledger.mkdir()
        in_path, exec_path = tmp / f"{stem}.input.ipynb", tmp / f"{stem}.ipynb"
        nbformat.write(nb, in_path)
        os.environ.update({"INFONCE_BOOK_NO_PROGRESS": "1", "INFONCE_BOOK_LEDGER_DIR": str(tmp_ledger),
                           "INFONCE_BOOK_ROOT": str(root), "INFONCE_BOOK_BUILD_DIR": str(build_dir),
                           "MPLBACKEND": "module://matplotlib_inline.backend_inline", PIPELINE_ENV: "1",
                           **threads})
        log(f"[{stem}] executing with profile={profile}, device={dev.type}, seed={seed}")
        t0 = time.perf_counter()
        try:
            pm.execute_notebook(str(in_path), str(exec_path), parameters=params, kernel_name="python3",
                                cwd=str(source.parent), progress_bar=sys.stderr.isatty(),
                                log_output=False, request_save_on_cell_execute=False,
                                kernel_manager_class=_own_kernel_manager(),
                                # the kernel's own log (TCP notice, shutdown chatter) is noise
                                # here; cell errors still fail the run, naming the cell.
                                extra_arguments=["--IPKernelApp.log_level=CRITICAL"])
        except pm.PapermillExecutionError as err:
            failed = nb_dir / f"{stem}.failed.ipynb"
            if exec_path.exists():
                shutil.copyfile(exec_path, failed)
            raise ChapterError(
                f"chapter {stem} failed in cell {err.cell_index} (execution count {err.exec_count}): "
                f"{err.ename}: {err.evalue}\n  source: {source}\n  executed notebook kept at: {failed}"
            ) from None
        except Exception as err:  # kernel died, timeout, ...
            raise ChapterError(f"chapter {stem} failed: {type(err).__name__}: {err}") from None
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        seconds = time.perf_counter() - t0
        executed = nbformat.read(exec_path, as_version=4)
        _hide_parameter_cells(executed)
        # The run record goes first and comes back last: a run stopped between the writes below
        # (killed, power cut) leaves no record, so the next run executes the chapter again.
        run_info.unlink(missing_ok=True)
        atomic_write_text(out_nb, nbformat.writes(executed))
        produced = tmp_ledger / f"{stem}.json"
        final_ledger = ledger_dir / f"{stem}.json"
        if produced.is_file():
            atomic_write_text(final_ledger, produced.read_text())
        else:
            final_ledger.unlink(missing_ok=True)
    (nb_dir / f"{stem}.failed.ipynb").unlink(missing_ok=True)
    atomic_write_text(run_info, json.dumps({"key": key, **params, "seconds": seconds,
                                            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=2))
    _record_timing(build_dir, stem, profile, seconds)
    log(f"[{stem}] done in {seconds:.1f} s")
    return RunResult(stem, "ran", seconds, out_nb)


def _record_timing(build_dir: Path, stem: str, profile: str, seconds: float) -> None:
    path = build_dir / "timings.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    data.setdefault(profile, {})[stem] = round(seconds, 2)
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True))


MARKER = re.compile(r"^<!-- infonce-book: ([a-z-]+) -->[ \t]*$", flags=re.M)
# The generated sections a page may ask for with a marker line (filled by _assemble_site):
# "How to cite" entries, the reproducibility appendix and the intro's reading path. (The table of validated inputs is
# rendered by a code cell of its own page: the pipeline does not import infonce_book.testing.)
GENERATED_SECTIONS = ("bibtex", "reproducibility", "reading-path")


def _insert_after_title(nb, text: str, tag: str) -> None:
    """Insert a markdown cell after the first markdown cell holding a ``# `` title (else first)."""
    import nbformat  # see run_chapter

    cell = nbformat.v4.new_markdown_cell(text, metadata={"tags": [tag]})
    for i, c in enumerate(nb.cells):
        if c.cell_type == "markdown" and any(line.startswith("# ") for line in c.source.splitlines()):
            nb.cells.insert(i + 1, cell)
            return
    nb.cells.insert(0, cell)


def _fill_markers(site: Path, generators: dict) -> list[Path]:
    """Replace every ``<!-- infonce-book: NAME -->`` line of the site's pages by ``generators[NAME]()``."""
    filled = []
    for page in sorted((site / "book").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        names = MARKER.findall(text)
        if not names:
            continue
        unknown = sorted(set(names) - set(generators))
        if unknown:
            raise ValueError(f"{page.relative_to(site)}: unknown generated section(s) {unknown}; "
                             f"known: {sorted(generators)}")
        generated = {name: generators[name]() for name in set(names)}
        text = MARKER.sub(lambda m, g=generated: g[m.group(1)], text)
        page.write_text(text, encoding="utf-8")
        filled.append(page)
    return filled


#: The hidden paragraph the pipeline puts after the title of the intro and of each chapter;
#: ``infonce-book pdf`` (:func:`infonce_book.pipeline.pdf.activate_pdf_links`) turns it into a link
#: to the page's PDF once that exists. ``{name}``: the PDF's file name.
PDF_PLACEHOLDER = '<p class="infonce-pdf" data-pdf="{name}" hidden></p>'
BOOK_PDF = "book.pdf"


def _inject_config(site: Path, commit: str, *, edition: str = "web") -> None:
    """Adjust the assembled site's ``_config.yml``: the book's version (from the package) and commit
    in the footer of every page; no launch buttons and no repository address while
    ``repository.placeholder`` is set (:func:`~infonce_book.pipeline.citation.repository_is_placeholder`);
    for the student edition, sphinx-exercise's ``hide_solutions`` and a banner saying so."""
    path = site / "_config.yml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    html = config.setdefault("html", {})
    extra = html.get("extra_footer", "")
    html["extra_footer"] = footer_html(str(config.get("title", "")), commit) + (extra or "")
    if repository_is_placeholder(config):
        # No public repository yet: launch buttons and repository links would point nowhere.
        config.pop("launch_buttons", None)
        config.pop("repository", None)
        for key in ("use_repository_button", "use_issues_button", "use_edit_page_button"):
            html[key] = False
    if edition == "students":
        sphinx_config = config.setdefault("sphinx", {}).setdefault("config", {})
        sphinx_config["hide_solutions"] = True
        html["announcement"] = ("Student edition: the solutions to the exercises are not included "
                                "(the full edition has them).")
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _insert_pdf_placeholder_md(page: Path, name: str) -> None:
    """Put :data:`PDF_PLACEHOLDER` after the ``# `` title of a MyST page (outside code fences)."""
    lines = page.read_text(encoding="utf-8").splitlines(keepends=True)
    fence = None
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif fence is not None and stripped.startswith(fence):
            fence = None
        elif fence is None and line.startswith("# "):
            lines.insert(i + 1, "\n" + PDF_PLACEHOLDER.format(name=name) + "\n")
            page.write_text("".join(lines), encoding="utf-8")
            return
    raise ValueError(f"{page} has no '# ' title to put the PDF link after")


def site_dir(build_dir: Path, edition: str = "web") -> Path:
    """Where :func:`build` assembles the Jupyter Book source of an edition."""
    return Path(build_dir) / ("site" if edition == "web" else f"site-{edition}")


def html_dir(build_dir: Path, edition: str = "web") -> Path:
    """Where :func:`build` puts the rendered book: ``<build>/html`` (the Pages workflow uploads it)
    or ``<build>/html-students`` for the student edition."""
    return Path(build_dir) / ("html" if edition == "web" else f"html-{edition}")


def _assemble_site(root: Path, build_dir: Path, *, profile: str = "standard", device: str = "auto",
                   seed: int = 0, edition: str = "web") -> Path:
    """Copy the book's sources to ``<build>/site`` with executed notebooks for the chapters.

    The assembled site also gets what readers need and no chapter has to write: a "Rerun this
    chapter" box after each executed chapter's title cell (with the chapter's jupytext source
    for download under ``book/_md/``), a hidden link to the PDF of each chapter and, on the intro,
    of the book (shown once ``infonce-book pdf`` has made them), the generated sections of the back
    matter (the ``<!-- infonce-book: NAME -->`` markers: ``bibtex``, ``reproducibility``), the
    benchmark results of ``benchmarks/results/``, and the book's version and commit in the page
    footer. Executed pages of the back matter (the robustness page) get no rerun box: they are not
    chapters. The student edition (``edition="students"``, in ``<build>/site-students``) has every
    solution removed from every page and download (:mod:`infonce_book.pipeline.editions`).
    """
    import nbformat  # see run_chapter

    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    site = site_dir(build_dir, edition)
    if site.exists():
        for p in site.iterdir():
            if p.name != "_build":
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    site.mkdir(parents=True, exist_ok=True)
    for f in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / f, site / f)
    exec_chapters = chapters(root)
    shutil.copytree(root / "book", site / "book", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    commit = git_commit(root)
    timings = load_timings(build_dir)
    recorded = load_recorded(root)
    not_chapters = back_matter(root)
    for stem, src in exec_chapters.items():
        rel = src.relative_to(root)
        (site / rel).unlink()
        nb = nbformat.read(build_dir / "notebooks" / f"{stem}.ipynb", as_version=4)
        if str(rel.with_suffix("")) not in not_chapters:
            md_copy = site / rel.parent / "_md" / rel.name
            md_copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, md_copy)
            _insert_after_title(nb, rerun_box(stem, src, load_run_info(build_dir, stem), timings,
                                              f"_md/{rel.name}", __version__, commit, recorded=recorded),
                                tag="rerun-box")
            _insert_after_title(nb, PDF_PLACEHOLDER.format(name=f"{stem}.pdf"), tag="pdf-link")
        nbformat.write(nb, (site / rel).with_suffix(".ipynb"))
    intro = site / f"{toc_files(root)[0]}.md"
    if intro.is_file():
        _insert_pdf_placeholder_md(intro, BOOK_PDF)
    results = root / "benchmarks" / "results"
    if results.is_dir():
        shutil.copytree(results, site / "benchmarks" / "results", dirs_exist_ok=True)
    generators = {
        "bibtex": lambda: cite_markdown(root, commit),
        "reproducibility": lambda: appendix_markdown(root, build_dir, exec_chapters, profile=profile,
                                                     device=device, seed=seed, commit=commit),
        "reading-path": lambda: reading_path_markdown(
            {stem: src for stem, src in exec_chapters.items()
             if str(src.relative_to(root).with_suffix("")) not in not_chapters}),
    }
    assert set(generators) == set(GENERATED_SECTIONS)
    _fill_markers(site, generators)
    _inject_config(site, commit, edition=edition)
    if edition == "students":
        strip_solutions_site(site)
    return site


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
    site = _assemble_site(root, build_dir, profile=profile, device=device, seed=seed, edition=edition)
    log(f"[book] jupyter-book build of the {edition} edition (execution off, -n -W --keep-going)")
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) or shutil.which("jupyter-book")
    if jb is None:
        raise RuntimeError(f"jupyter-book was not found (neither next to {sys.executable} nor on PATH); the "
                           f"chapters were executed, but the book cannot be rendered: install the project "
                           f"with `make install` (or pip install -e .) and rerun")
    cmd = [jb, "build", str(site), "--builder", "html", "-n", "-W", "--keep-going"]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    log_name = "jupyter-book.log" if edition == "web" else f"jupyter-book-{edition}.log"
    (build_dir / log_name).write_text(proc.stdout + proc.stderr)
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
