"""The book pipeline: jupytext MyST notebooks -> papermill (:mod:`~infonce_book.pipeline.execute`)
-> executed notebooks -> jupyter-book.

* :func:`assemble_site` copies the book's sources to ``<build>/site`` (``site-students``), the
  executed notebooks in place of the ``.md`` chapters, and adds what no chapter has to write: a
  "Rerun this chapter" box and a hidden link to the PDF after each chapter's title, the generated
  sections of the ``<!-- infonce-book: NAME -->`` marker lines (:data:`GENERATED_SECTIONS`), the
  version in the footer, no launch buttons while the repository URL is a placeholder;
* :func:`build` runs every chapter, assembles the site and runs ``jupyter-book build -n -W
  --keep-going`` into ``<build>/html`` (``html-students``: :mod:`~infonce_book.pipeline.editions`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml
from tqdm import tqdm

from ..experiment.ledger import load_records, summary_line
from ..experiment.paths import git_commit, project_root
from ..experiment.profiles import check_profile
from ..utils.device import resolve_device
from .citation import cite_markdown, footer_html, repository_is_placeholder
from .editions import EDITIONS, strip_solutions_site
from .execute import ChapterError, available_cores, kernel_thread_env, run_chapter
from .pages import UnknownChapter, back_matter, executable_pages, resolve_chapter, toc_files
from .reading_path import reading_path_markdown
from .reproducibility import appendix_markdown, rerun_box
from .timings import load_recorded

__all__ = ["BOOK_PDF", "EDITIONS", "GENERATED_SECTIONS", "PDF_PLACEHOLDER", "ChapterError", "UnknownChapter",
           "assemble_site", "available_cores", "back_matter", "build", "executable_pages", "html_dir",
           "kernel_thread_env", "resolve_chapter", "run_chapter", "site_dir", "toc_files"]

#: A page asks for a generated section with a marker line, filled by :func:`assemble_site`: the
#: "How to cite" entries, the reproducibility appendix, the intro's reading path.
MARKER = re.compile(r"^<!-- infonce-book: ([a-z-]+) -->[ \t]*$", flags=re.M)
GENERATED_SECTIONS = ("bibtex", "reproducibility", "reading-path")
#: The hidden paragraph put after the title of the intro and of each chapter; ``infonce-book pdf``
#: (:func:`~infonce_book.pipeline.typeset.activate_pdf_links`) turns it into a link to the PDF.
PDF_PLACEHOLDER = '<p class="infonce-pdf" data-pdf="{name}" hidden></p>'
BOOK_PDF = "book.pdf"


def _insert_after_title(nb, text: str, tag: str) -> None:
    """Insert a markdown cell after the first markdown cell holding a ``# `` title (else first)."""
    at = next((i + 1 for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
               and any(line.startswith("# ") for line in c.source.splitlines())), 0)
    nb.cells.insert(at, nbformat.v4.new_markdown_cell(text, metadata={"tags": [tag]}))


def _inject_config(site: Path, commit: str, *, edition: str = "web") -> None:
    """The assembled ``_config.yml``: the version and commit in every page's footer; no launch
    buttons and no repository address while ``repository.placeholder`` is set; for the student
    edition, sphinx-exercise's ``hide_solutions`` and a banner saying so."""
    path = site / "_config.yml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    html = config.setdefault("html", {})
    html["extra_footer"] = footer_html(str(config.get("title", "")), commit) + (html.get("extra_footer") or "")
    if repository_is_placeholder(config):
        config.pop("launch_buttons", None)
        config.pop("repository", None)
        for key in ("use_repository_button", "use_issues_button", "use_edit_page_button"):
            html[key] = False
    if edition == "students":
        config.setdefault("sphinx", {}).setdefault("config", {})["hide_solutions"] = True
        html["announcement"] = ("Student edition: the solutions to the exercises are not included "
                                "(the full edition has them).")
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")


def site_dir(build_dir: Path, edition: str = "web") -> Path:
    """Where an edition's Jupyter Book source is assembled: ``<build>/site`` or ``<build>/site-students``."""
    return Path(build_dir) / ("site" if edition == "web" else f"site-{edition}")


def html_dir(build_dir: Path, edition: str = "web") -> Path:
    """Where an edition's HTML goes: ``<build>/html`` (the Pages workflow uploads it) or ``html-students``."""
    return Path(build_dir) / ("html" if edition == "web" else f"html-{edition}")


def assemble_site(root: Path, build_dir: Path, *, profile: str = "standard", device: str = "auto",
                  seed: int = 0, edition: str = "web") -> Path:
    """The Jupyter Book source of an edition, from the book's pages and the executed chapters (see
    the module docstring). Executed pages of the back matter (the robustness page) get no rerun box:
    they are not chapters. The student edition has every solution removed from every page."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    site = site_dir(build_dir, edition)
    for p in site.glob("*"):  # all but Sphinx's own build folder
        if p.name != "_build":
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    site.mkdir(parents=True, exist_ok=True)
    for f in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / f, site / f)
    shutil.copytree(root / "book", site / "book", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    if (root / "benchmarks" / "results").is_dir():
        shutil.copytree(root / "benchmarks" / "results", site / "benchmarks" / "results", dirs_exist_ok=True)
    commit, recorded = git_commit(root), load_recorded(root)
    pages, not_chapters = executable_pages(root), back_matter(root)
    numbered = {stem: src for stem, src in pages.items()
                if str(src.relative_to(root).with_suffix("")) not in not_chapters}
    for stem, src in pages.items():
        rel = src.relative_to(root)
        (site / rel).unlink()
        nb = nbformat.read(build_dir / "notebooks" / f"{stem}.ipynb", as_version=4)
        if stem in numbered:
            (site / rel.parent / "_md").mkdir(exist_ok=True)
            shutil.copy2(src, site / rel.parent / "_md" / rel.name)
            _insert_after_title(nb, rerun_box(stem, src, build_dir, f"_md/{rel.name}", commit, recorded),
                                tag="rerun-box")
            _insert_after_title(nb, PDF_PLACEHOLDER.format(name=f"{stem}.pdf"), tag="pdf-link")
        nbformat.write(nb, (site / rel).with_suffix(".ipynb"))
    generators = {
        "bibtex": lambda: cite_markdown(root, commit),
        "reproducibility": lambda: appendix_markdown(root, build_dir, pages, profile=profile, device=device,
                                                     seed=seed, commit=commit),
        "reading-path": lambda: reading_path_markdown(numbered),
    }
    for page in sorted((site / "book").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        if page == site / f"{toc_files(root)[0]}.md":  # the intro: a hidden link to the book's PDF
            text = re.sub(r"^# .*\n", lambda m: f"{m.group(0)}\n{PDF_PLACEHOLDER.format(name=BOOK_PDF)}\n",
                          text, count=1, flags=re.M)
        unknown = sorted(set(MARKER.findall(text)) - set(GENERATED_SECTIONS))
        if unknown:
            raise ValueError(f"{page.relative_to(site)}: unknown generated section(s) {unknown}; "
                             f"known: {sorted(GENERATED_SECTIONS)}")
        page.write_text(MARKER.sub(lambda m: generators[m.group(1)](), text), encoding="utf-8")
    _inject_config(site, commit, edition=edition)
    if edition == "students":
        strip_solutions_site(site)
    return site


def jupyter_book(args: list[str], log_file: Path, **kwargs) -> subprocess.CompletedProcess:
    """Run ``jupyter-book`` (next to this interpreter, else on PATH) with UTF-8 output, its output
    written to ``log_file``."""
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) or shutil.which("jupyter-book")
    if jb is None:
        raise RuntimeError(f"jupyter-book was not found (neither next to {sys.executable} nor on PATH): install "
                           f"the project with `make install` (or pip install -e .) and rerun")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", **kwargs.pop("env", {})}
    proc = subprocess.run([jb, *args], capture_output=True, text=True, encoding="utf-8", errors="replace",
                          env=env, **kwargs)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    log_file.write_text(proc.stdout + proc.stderr, encoding="utf-8")
    return proc


def build(*, profile: str = "standard", device: str = "auto", seed: int = 0, build_dir: Path | None = None,
          force: bool = False, root: Path | None = None, edition: str = "web", log=print) -> Path:
    """Execute every chapter (skipping unchanged ones), then build the edition's HTML book; returns
    its ``index.html``. Raises :class:`ChapterError` when a chapter fails, ``RuntimeError`` when
    ``jupyter-book build`` reports an error or a warning."""
    root = (root or project_root()).resolve()
    build_dir = Path(build_dir or root / "_build").resolve()
    check_profile(profile)
    resolve_device(device)
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    names = list(executable_pages(root))
    results = [run_chapter(stem, profile=profile, device=device, seed=seed, build_dir=build_dir, force=force,
                           root=root, log=log)
               for stem in tqdm(names, desc="chapters", unit="chapter", disable=not sys.stderr.isatty())]
    site = assemble_site(root, build_dir, profile=profile, device=device, seed=seed, edition=edition)
    log(f"[book] jupyter-book build of the {edition} edition (execution off, -n -W --keep-going)")
    log_file = build_dir / ("jupyter-book.log" if edition == "web" else f"jupyter-book-{edition}.log")
    proc = jupyter_book(["build", str(site), "--builder", "html", "-n", "-W", "--keep-going"], log_file, cwd=root)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
        raise RuntimeError(f"jupyter-book build failed (exit {proc.returncode}); see {log_file}\n{tail}")
    html = html_dir(build_dir, edition)
    tmp_html = html.with_name(html.name + ".new")
    shutil.rmtree(tmp_html, ignore_errors=True)
    shutil.copytree(site / "_build" / "html", tmp_html)
    shutil.rmtree(html, ignore_errors=True)
    tmp_html.rename(html)
    for r in results:
        log(f"  {r.chapter:<20} {r.status:<8} {r.seconds:7.1f} s")
    records = [r for r in load_records(build_dir / "ledger") if r.get("chapter") in names]
    log(f"[book] claims ledger: {summary_line(records)}; `infonce-book ledger` lists them, the book's "
        f"Reproducibility page shows them")
    log(f"[book] {html / 'index.html'}")
    return html / "index.html"

