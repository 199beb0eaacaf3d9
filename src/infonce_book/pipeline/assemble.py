"""The Jupyter Book source of an edition, assembled from the book's pages and the executed chapters.

:func:`assemble_site` copies the book's sources to ``<build>/site`` (``<build>/site-students`` for
the student edition) with the executed notebooks in place of the ``.md`` chapters, and adds what
no chapter has to write: a "Rerun this chapter" box and a (hidden until ``infonce-book pdf`` has
run) link to the chapter's PDF on every chapter page, the generated "How to cite" entries,
reproducibility appendix and the intro's reading path (:mod:`~infonce_book.pipeline.citation`,
:mod:`~infonce_book.pipeline.reproducibility`, :mod:`~infonce_book.pipeline.reading_path`), the
book's version and commit in the footer, and no launch buttons while the repository URL is a
placeholder. :func:`site_dir` and :func:`html_dir` say where an edition's source and HTML go.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import yaml

from .. import __version__
from ..experiment.paths import git_commit
from .citation import cite_markdown, footer_html, repository_is_placeholder
from .editions import EDITIONS, strip_solutions_site
from .reading_path import reading_path_markdown
from .reproducibility import appendix_markdown, load_run_info, load_timings, rerun_box
from .timings import load_recorded
from .toc import back_matter, chapters, toc_files

__all__ = ["BOOK_PDF", "GENERATED_SECTIONS", "MARKER", "PDF_PLACEHOLDER", "assemble_site", "html_dir", "site_dir"]

MARKER = re.compile(r"^<!-- infonce-book: ([a-z-]+) -->[ \t]*$", flags=re.M)
# The generated sections a page may ask for with a marker line (filled by assemble_site):
# "How to cite" entries, the reproducibility appendix and the intro's reading path. (The table of validated inputs is
# rendered by a code cell of its own page: the pipeline does not import infonce_book.testing.)
GENERATED_SECTIONS = ("bibtex", "reproducibility", "reading-path")


def _insert_after_title(nb, text: str, tag: str) -> None:
    """Insert a markdown cell after the first markdown cell holding a ``# `` title (else first)."""
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
#: ``infonce-book pdf`` (:func:`infonce_book.pipeline.typeset.activate_pdf_links`) turns it into a link
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
    """Where :func:`~infonce_book.pipeline.build.build` assembles the Jupyter Book source of an edition."""
    return Path(build_dir) / ("site" if edition == "web" else f"site-{edition}")


def html_dir(build_dir: Path, edition: str = "web") -> Path:
    """Where :func:`~infonce_book.pipeline.build.build` puts the rendered book: ``<build>/html`` (the Pages workflow uploads it)
    or ``<build>/html-students`` for the student edition."""
    return Path(build_dir) / ("html" if edition == "web" else f"html-{edition}")


def assemble_site(root: Path, build_dir: Path, *, profile: str = "standard", device: str = "auto",
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
