"""The PDFs of the book: ``infonce-book pdf`` runs ``jupyter-book build --builder pdflatex`` on the
site that ``infonce-book build`` assembled (``<build>/site``, ``site-students``; the LaTeX side:
:mod:`~infonce_book.pipeline.sphinx_latex` and ``infoncebook.sty``; XeLaTeX from ``make tex-deps``),
splits ``book.pdf`` into ``appendix.pdf`` (the back matter) and one ``<chapter>.pdf`` per chapter with
the book's page numbers, in ``<build>/pdf`` (``pdf-students``), copies them into the HTML build and
turns on the links to them (:data:`~infonce_book.pipeline.run.PDF_PLACEHOLDER`). A LaTeX error or an
undefined reference in the log stops it (:class:`PdfError`).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .editions import EDITIONS
from .pages import back_matter, executable_pages
from .run import BOOK_PDF, PDF_PLACEHOLDER, html_dir, jupyter_book, site_dir

__all__ = ["APPENDIX_PDF", "PAPERS", "TEX_TOOLS", "PdfBuild", "PdfError", "activate_pdf_links", "build_pdfs",
           "log_problems", "page_marks"]

#: ``--paper`` -> LaTeX's paper option.
PAPERS = {"a4": "a4paper", "letter": "letterpaper"}
APPENDIX_PDF = "appendix.pdf"
#: What the LaTeX route runs (``make tex-deps`` installs them from Debian).
TEX_TOOLS = ("xelatex", "latexmk", "xindy")
#: The marks ``sphinx_latex`` writes to the ``.aux`` file: the page (physical, and as printed)
#: where each page of ``_toc.yml`` (and each part) starts.
_MARK = re.compile(r"^\\infonce@start\{(?P<doc>[^}]*)\}\{(?P<abs>\d+)\}\{(?P<page>[^}]*)\}", re.M)
_PLACEHOLDER_RE = re.compile(re.escape(PDF_PLACEHOLDER).replace(re.escape("{name}"), r"([A-Za-z0-9_.-]+)"))


class PdfError(RuntimeError):
    """The PDFs could not be made (no site, no TeX, a LaTeX error or an undefined reference)."""


@dataclass
class PdfBuild:
    """What :func:`build_pdfs` wrote, and each PDF's first page in the book (as printed)."""

    book: Path
    appendix: Path | None = None
    chapters: dict[str, Path] = field(default_factory=dict)
    first_page: dict[str, str] = field(default_factory=dict)  # PDF name -> the book's page label
    log: Path | None = None


def page_marks(aux: Path) -> list[tuple[str, int, str]]:
    """``(docname, physical page from 1, printed page)`` of each toc page and part, in order."""
    return [(m["doc"], int(m["abs"]), m["page"]) for m in _MARK.finditer(aux.read_text(encoding="utf-8",
                                                                                         errors="replace"))]


def log_problems(log: Path) -> list[str]:
    """The LaTeX errors and undefined references (and citations) of a LaTeX log."""
    text = log.read_text(encoding="utf-8", errors="replace")
    return [line for line in text.splitlines() if line.startswith("! ")] + re.findall(
        r"LaTeX Warning: (?:Reference|Citation|Hyper reference) `[^']*' on page \S+ undefined", text)


def _run_jupyter_book(site: Path, paper: str, log) -> Path:
    config = site / "_config.yml"
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    elements = data.setdefault("sphinx", {}).setdefault("config", {}).setdefault("latex_elements", {})
    if elements.get("papersize") != PAPERS[paper]:
        elements["papersize"] = PAPERS[paper]
        config.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    latex = site / "_build" / "latex"
    shutil.rmtree(latex, ignore_errors=True)
    log(f"[pdf] jupyter-book build {site} --builder pdflatex (Sphinx's LaTeX builder, then latexmk -pdfxe)")
    proc = jupyter_book(["build", str(site), "--builder", "pdflatex", "-n", "--keep-going"],
                        site / "_build" / "jupyter-book-pdflatex.log",
                        env={"LATEXMKOPTS": "-interaction=nonstopmode"})
    if proc.returncode != 0 or not (latex / "book.pdf").is_file():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
        raise PdfError(f"jupyter-book's LaTeX build failed (exit {proc.returncode}); see "
                       f"{site / '_build' / 'jupyter-book-pdflatex.log'} and {latex / 'book.log'}\n{tail}")
    return latex


def _write_pages(reader, first: int, last: int, start_label: str, title: str, target: Path) -> None:
    """Pages ``first``..``last`` (physical, from 1) of ``reader`` as ``target``, numbered as in the
    book (arabic labels from ``start_label``; a roman label keeps the book's)."""
    from pypdf import PdfWriter  # optional (the test extra): only `infonce-book pdf` needs it

    while last > first and _part_page(reader.pages[last - 1]):  # the next part's title page, blank pages
        last -= 1
    writer = PdfWriter()
    writer.append(reader, pages=(first - 1, last), import_outline=False)
    if start_label.isdigit():
        writer.set_page_label(0, last - first, style="/D", start=int(start_label))
    writer.add_metadata({**(reader.metadata or {}), "/Title": title})
    with open(target, "wb") as fh:
        writer.write(fh)


def _part_page(page) -> bool:
    """A part's title page ("Part II" and its caption, nothing else), or a blank page."""
    text = " ".join(page.extract_text().split())
    return not text or bool(re.fullmatch(r"Part [IVX]+ [^.]{1,60}", text))


def build_pdfs(build_dir: Path, root: Path, *, edition: str = "web", paper: str = "a4", log=print) -> PdfBuild:
    """Typeset the edition's assembled site and write its PDFs (see the module docstring).

    Raises:
        ValueError: ``edition`` not in :data:`~infonce_book.pipeline.editions.EDITIONS` or ``paper``
            not in :data:`PAPERS`.
        PdfError: no assembled site (run ``make book`` / ``make book-students``), a TeX tool
            missing (``make tex-deps``), the LaTeX build failing, or its log reporting an error or
            an undefined reference.
    """
    from pypdf import PdfReader  # optional (the test extra): only `infonce-book pdf` needs it

    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {', '.join(EDITIONS)}; got {edition!r}")
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {', '.join(PAPERS)}; got {paper!r}")
    build_dir, root = Path(build_dir).resolve(), Path(root).resolve()
    site, html = site_dir(build_dir, edition), html_dir(build_dir, edition)
    if not (html / "index.html").is_file() or not (site / "_config.yml").is_file():
        make = "make book" if edition == "web" else f"make book-{edition}"
        raise PdfError(f"no built edition at {site} and {html}: run `{make}` (or `infonce-book build`) first")
    missing = [t for t in TEX_TOOLS if shutil.which(t) is None]
    if missing:
        raise PdfError(f"{', '.join(missing)} not found: `make tex-deps` installs Debian's TeX Live")
    latex = _run_jupyter_book(site, paper, log)
    problems = log_problems(latex / "book.log")
    if problems:
        raise PdfError(f"{latex / 'book.log'}: {len(problems)} LaTeX error(s) or undefined reference(s): "
                       + "; ".join(problems[:10]))
    out_dir = build_dir / ("pdf" if edition == "web" else f"pdf-{edition}")
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    result = PdfBuild(book=out_dir / BOOK_PDF, log=out_dir / "book.log")
    shutil.copy2(latex / "book.pdf", result.book)
    shutil.copy2(latex / "book.log", result.log)
    reader = PdfReader(str(result.book))
    marks = page_marks(latex / "book.aux")
    ends = [m[1] - 1 for m in marks[1:]] + [_index_page(marks, reader)]
    stems = {f"book/{stem}": stem for stem in executable_pages(root)}
    back = set(back_matter(root))
    title = str((reader.metadata or {}).get("/Title", ""))
    back_pages = [(abs_, end, page) for (doc, abs_, page), end in zip(marks, ends) if doc in back]
    for (doc, first, page), last in zip(marks, ends):
        if doc in stems and doc not in back:
            path = out_dir / f"{stems[doc]}.pdf"
            _write_pages(reader, first, last, page, f"{title}: {stems[doc]}", path)
            result.chapters[stems[doc]], result.first_page[path.name] = path, page
    if back_pages:
        (first, _, page), last = back_pages[0], back_pages[-1][1]
        result.appendix, result.first_page[APPENDIX_PDF] = out_dir / APPENDIX_PDF, page
        _write_pages(reader, first, last, page, f"{title}: appendix", result.appendix)
    log(f"[pdf] {result.book} ({len(reader.pages)} pages), {len(result.chapters)} chapter PDFs"
        + (f", {result.appendix}" if result.appendix else ""))
    activate_pdf_links(html, out_dir)
    return result


def _index_page(marks, reader) -> int:
    """The last page before the index (the index starts on a page of its own), else the last page."""
    last = len(reader.pages)
    for i in range(len(reader.pages) - 1, marks[-1][1] - 1 if marks else 0, -1):
        if reader.pages[i].extract_text().lstrip().startswith("Index"):
            last = i
    return last


def activate_pdf_links(html: Path, pdf_dir: Path) -> None:
    """Copy the PDFs into ``html/pdf/`` and turn each hidden placeholder whose PDF exists into a
    visible link (see :data:`~infonce_book.pipeline.run.PDF_PLACEHOLDER`)."""
    html, pdf_dir = Path(html), Path(pdf_dir)
    dest = html / "pdf"
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir()
    for pdf in pdf_dir.glob("*.pdf"):
        shutil.copy2(pdf, dest / pdf.name)
    for page in sorted(html.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        if "infonce-pdf" not in text:
            continue

        def link(m, page=page):
            pdf = dest / m.group(1)
            if not pdf.is_file():
                return m.group(0)
            rel = os.path.relpath(pdf, page.parent).replace(os.sep, "/")
            what = {BOOK_PDF: "the whole book", APPENDIX_PDF: "the appendix"}.get(pdf.name, "this chapter")
            return (f'<p class="infonce-pdf"><a class="reference download" href="{rel}" download>'
                    f'PDF of {what}</a> ({pdf.stat().st_size / 1e6:.1f} MB, typeset by LaTeX)</p>')

        new = _PLACEHOLDER_RE.sub(link, text)
        if new != text:
            page.write_text(new, encoding="utf-8")
