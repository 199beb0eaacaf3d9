"""PDFs of the book and of each chapter, printed from the HTML build with chromium.

``infonce-book pdf`` (``make pdf``) prints every page of ``<build>/html`` with Debian's chromium,
driven by Playwright, on A4 or US Letter (``--paper``), and writes to ``<build>/pdf``

* ``book.pdf``: a contents page (every part, chapter and section with its page, each a link),
  then every page of ``_toc.yml`` in order but the back matter other than the references, merged
  with :mod:`pypdf` and numbered through (footers and PDF page labels, see
  :mod:`~infonce_book.pipeline.pdf_pages`), with one bookmark per page (under its part) and links
  between pages turned into jumps inside the PDF (:mod:`~infonce_book.pipeline.pdf_links`);
* ``appendix.pdf``: the rest of the back matter (input validation, the reproducibility ledger,
  how to cite), made the same way;
* ``<chapter>.pdf`` for every chapter: its pages of ``book.pdf``, with the book's page numbers;

then copies them to ``<build>/html/pdf/`` and turns on the links to them that the pipeline left,
hidden, after the title of the intro and of each chapter (:data:`PDF_PLACEHOLDER`).
``--edition students`` prints the student edition (``<build>/html-students``, no solutions) to
``<build>/pdf-students`` the same way.

Why print the HTML rather than use Sphinx's LaTeX builder: the PDF is then the page a reader
sees on the web, with the same numbering (Theorem 5.2, Fig. 5.3, (5.1)), the same MathJax
typesetting and the same glued figures and values, from the same build; it needs only the
chromium the browser test already uses (``make browser-deps``), where the LaTeX route needs a
TeX distribution of several hundred megabytes in CI, and LaTeX versions of everything the HTML
build handles (MathJax macros, glued outputs, sphinx-proof and sphinx-exercise nodes, raw HTML).

Each page is opened over a local HTTP server (MathJax's fonts do not load from ``file://``),
MathJax is awaited, every collapsed solution and dropdown is opened, and the page is printed
with the theme's print style sheet and the book's (``static/infonce-book.css``: no sidebars,
buttons, toggle hints or rerun box; numbered titles; wrapped code and table cells; nothing
clipped by a scrolling box) at :data:`PRINT_SCALE`, in a window as wide as the page's text
column, after :data:`_FIT` has scaled any display, table or image still wider than its box (a
last resort: long displays are broken into lines at the source). ``tests/pipeline/test_pdf.py``
reads where every character lies (:mod:`~infonce_book.pipeline.pdf_layout`) and fails if one is
outside the text column.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

from ..experiment.paths import atomic_write_bytes
from .assemble import BOOK_PDF, PDF_PLACEHOLDER, html_dir
from .citation import BACK_MATTER, toc_pages
from .editions import EDITIONS
from .pdf_assemble import assemble_pdf
from .pdf_links import dest_table, resolve_links
from .pdf_pages import MARGIN_MM, PAPERS, Paper, stamp_footers
from .tex_text import tex_to_text
from .toc import chapters

#: Where a chromium executable is looked for, after ``INFONCE_BOOK_CHROMIUM``.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome",
                       "google-chrome-stable")

#: The PDF of the back matter that is not in ``book.pdf``.
APPENDIX_PDF = "appendix.pdf"
#: The pages of the back matter that ``book.pdf`` keeps (a reader of the printed book needs the
#: references); the others (input validation, the reproducibility ledger, how to cite) are in
#: :data:`APPENDIX_PDF`.
BOOK_BACK_MATTER = ("book/references",)

_PLACEHOLDER_RE = re.compile(re.escape(PDF_PLACEHOLDER).replace(re.escape("{name}"), r"([A-Za-z0-9_.-]+)"))


class PdfError(RuntimeError):
    """The PDFs could not be made (no HTML build, no chromium, a page that did not print)."""


def find_chromium() -> str | None:
    """A chromium executable: ``INFONCE_BOOK_CHROMIUM`` if set (and present), else the first of
    :data:`CHROMIUM_CANDIDATES` found; ``None`` if there is none."""
    env = os.environ.get("INFONCE_BOOK_CHROMIUM")
    if env:
        return env if shutil.which(env) or Path(env).is_file() else None
    for c in CHROMIUM_CANDIDATES:
        found = shutil.which(c) or (c if Path(c).is_file() and os.access(c, os.X_OK) else None)
        if found:
            return found
    return None


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no request log on the terminal
        pass


class _Server:
    """The HTML build served on 127.0.0.1 (an ephemeral port) for as long as the ``with`` lasts."""

    def __init__(self, directory: Path):
        handler = functools.partial(_QuietHandler, directory=str(directory))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


_PREPARE = """async () => {
  const t0 = Date.now();
  if (window.MathJax) {
    while (!(MathJax.startup && MathJax.startup.promise) && Date.now() - t0 < 60000)
      await new Promise(r => setTimeout(r, 50));
    if (MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  }
  // open collapsed solutions and dropdowns (sphinx-togglebutton, sphinx-design, <details>)
  document.querySelectorAll('.admonition.toggle.toggle-hidden button.toggle-button')
    .forEach(b => b.click());
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  document.querySelectorAll('img').forEach(i => { i.loading = 'eager'; });
  await Promise.all(Array.from(document.images).filter(i => !i.complete)
    .map(i => new Promise(r => { i.onload = i.onerror = r; })));
  await document.fonts.ready;
  const typeset = window.MathJax ? document.querySelectorAll('mjx-container').length : -1;
  return {typeset, errors: document.querySelectorAll('mjx-merror').length};
}"""

#: The page is printed at this scale: an A4 page with the margins of
#: :data:`~infonce_book.pipeline.pdf_pages.MARGIN_MM` is then about 840 CSS pixels wide, the width
#: of the web page's text column, so most display formulas typeset by MathJax for the web fit the
#: page as they are (the others are broken at the source, or scaled by :data:`_FIT`).
PRINT_SCALE = 0.8

#: Run in the print layout (print media, viewport as wide as the page's text column): every
#: display formula, table, code block or image still wider than the column is scaled (CSS
#: ``zoom``) to its width, the last resort after the source's line breaks and the print style
#: sheet's wrapping; returns what was scaled, ``[tag, id of the nearest element with one, zoom]``.
_FIT = """() => {
  const col = document.querySelector('article.bd-article') || document.body;
  const box = e => {
    const r = e.getBoundingClientRect(), cs = getComputedStyle(e);
    return [r.left + parseFloat(cs.paddingLeft) + parseFloat(cs.borderLeftWidth),
            r.right - parseFloat(cs.paddingRight) - parseFloat(cs.borderRightWidth)];
  };
  const [colLeft, colRight] = box(col);
  const fitted = [];
  const sel = 'mjx-container[display="true"], table, div.highlight, img, svg, .math-wrapper';
  for (const el of col.querySelectorAll(sel)) {
    if (el.closest('mjx-container') && el.tagName.toLowerCase() === 'svg') continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const [pl, pr] = box(el.parentElement);
    const left = Math.max(pl, colLeft), limit = Math.min(pr, colRight);
    let lo = r.left, hi = Math.max(r.right, r.left + el.scrollWidth * (r.width / (el.offsetWidth || r.width)));
    for (const c of el.children) {
      const cr = c.getBoundingClientRect();
      if (cr.width > 0) { lo = Math.min(lo, cr.left); hi = Math.max(hi, cr.right); }
    }
    if (lo >= left - 0.5 && hi <= limit + 0.5) continue;
    const zoom = Math.floor(Math.min(1, (limit - left) / (hi - lo)) * 1000) / 1000;
    el.style.zoom = String(zoom * (parseFloat(el.style.zoom) || 1));
    const owner = el.closest('.admonition[id], section[id]');
    fitted.push([el.tagName.toLowerCase(), owner ? owner.id : '', zoom]);
  }
  return fitted;
}"""

#: The page's visible chapter and section titles (``h1``, ``h2``) in order, their math as
#: ``\\(TeX\\)`` (MathJax's own record of it), for the contents page.
_HEADINGS = r"""() => {
  const items = (window.MathJax && MathJax.startup && MathJax.startup.document
                 && MathJax.startup.document.getMathItemsWithin) ? MathJax.startup.document : null;
  const out = [];
  for (const h of document.querySelectorAll('article.bd-article h1, article.bd-article h2')) {
    if (!h.offsetParent) continue;
    const tex = new Map();
    if (items) for (const m of items.getMathItemsWithin(h)) tex.set(m.typesetRoot, m.math);
    const c = h.cloneNode(true);
    const orig = h.querySelectorAll('mjx-container'), copies = c.querySelectorAll('mjx-container');
    copies.forEach((e, i) => e.replaceWith('\\(' + (tex.get(orig[i]) || '') + '\\)'));
    c.querySelectorAll('.headerlink').forEach(e => e.remove());
    out.push([h.tagName === 'H1' ? 1 : 2, c.textContent.replace(/\s+/g, ' ').trim()]);
  }
  return out;
}"""


def plain_title(title: str) -> str:
    """A page's ``<title>`` as plain text for PDF bookmarks and footers: without the book's name
    and with each math fragment (between ``\\(``...``\\)`` or ``$``) as Unicode text by
    :func:`.tex_text.tex_to_text`, the converter of the web's titles (``\\(O(1/k)\\)`` ->
    ``O(1/k)``, ``\\tau`` -> ``τ``, ``c_1`` -> ``c₁``)."""
    text = title.split(" \u2014 ")[0]
    text = re.sub(r"\\\((.*?)\\\)|\$(.*?)\$", lambda m: tex_to_text(m.group(1) or m.group(2) or ""), text)
    return text.strip()


@dataclass
class PdfBuild:
    """What :func:`build_pdfs` wrote: the book, the appendix, the chapters, the pages of each toc
    page, the printed pages of each PDF, and what was scaled to fit (see :data:`_FIT`)."""

    book: Path
    appendix: Path | None = None
    chapters: dict[str, Path] = field(default_factory=dict)
    pages: dict[str, int] = field(default_factory=dict)  # toc file -> number of PDF pages
    front: dict[str, int] = field(default_factory=dict)  # PDF name -> number of contents pages
    fitted: dict[str, list] = field(default_factory=dict)  # toc file -> [tag, id, zoom] scaled


def _toc_entries(root: Path) -> list[tuple[str, str]]:
    """``(file, part caption)`` of the root page and every page of ``_toc.yml``, in order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [(str(toc["root"]), ""), *toc_pages(root)]


def split_entries(entries: list[tuple[str, str]]) -> tuple[list, list]:
    """The toc entries of ``book.pdf`` (all but the back matter, and the back matter's pages in
    :data:`BOOK_BACK_MATTER`) and those of ``appendix.pdf`` (the rest of the back matter)."""
    back = [e for e in entries if e[1].strip().lower() == BACK_MATTER and e[0] not in BOOK_BACK_MATTER]
    return [e for e in entries if e not in back], back


@dataclass
class _Printed:
    path: Path
    title: str
    headings: list  # [level, plain title] of the visible h1 and h2, in order


class _Printer:
    """Chromium under Playwright, with the HTML build served, for as long as the ``with`` lasts:
    :meth:`page` prints a page of the build, :meth:`html` prints a document given as text."""

    def __init__(self, html: Path, chromium: str, paper: Paper):
        self.served, self.chromium, self.paper = html, chromium, paper
        self.log = print

    def __enter__(self):
        try:
            from playwright.sync_api import sync_playwright  # optional: only `infonce-book pdf` needs it
        except ImportError as err:
            raise PdfError("playwright is not installed: pip install -e '.[test]' (it drives chromium)") from err
        self._server = _Server(self.served).__enter__()
        self.base = self._server.base
        self._playwright = sync_playwright()
        self._pw = self._playwright.__enter__()
        try:
            self._browser = self._pw.chromium.launch(executable_path=self.chromium)
        except Exception as err:
            self.__exit__(None, None, None)
            raise PdfError(f"chromium at {self.chromium} did not start under Playwright: {err}") from err
        width = int(self.paper.text_width_px / PRINT_SCALE)
        self._page = self._browser.new_page(viewport={"width": width, "height": 1600})
        return self

    def __exit__(self, *exc):
        if getattr(self, "_browser", None) is not None:
            self._browser.close()
        self._playwright.__exit__(*exc)
        self._server.__exit__(*exc)

    def _pdf(self, target: Path, **options) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        self._page.pdf(path=str(target), width=f"{self.paper.width_mm}mm", height=f"{self.paper.height_mm}mm",
                       print_background=True, **options)

    def page(self, file: str, target: Path) -> tuple[_Printed, list]:
        """Print ``<html>/<file>.html`` to ``target``; returns it and what :data:`_FIT` scaled."""
        src = self.served / f"{file}.html"
        if not src.is_file():
            raise PdfError(f"{src} is missing: the HTML build lacks a page of _toc.yml")
        page = self._page
        page.emulate_media(media="screen")
        page.goto(self.base + f"{file}.html", wait_until="load", timeout=120_000)
        state = page.evaluate(_PREPARE)
        if state["errors"]:
            raise PdfError(f"{file}: MathJax reported {state['errors']} error(s); not printed")
        page.emulate_media(media="print")
        fitted = page.evaluate(_FIT)
        headings = [[level, plain_title(text)] for level, text in page.evaluate(_HEADINGS)]
        self._pdf(target, scale=PRINT_SCALE, outline=True, tagged=True,
                  margin={k: f"{v}mm" for k, v in MARGIN_MM.items()})
        return _Printed(target, plain_title(page.title()), headings), fitted

    def html(self, text: str, target: Path, *, bare: bool = False) -> Path:
        """Print the document ``text``: with the book's margins, or ``bare`` (no margin, scale 1,
        the document's own ``@page``: the footers)."""
        self._page.emulate_media(media="print")
        self._page.set_content(text, wait_until="load")
        margin = {k: "0mm" for k in MARGIN_MM} if bare else {k: f"{v}mm" for k, v in MARGIN_MM.items()}
        self._pdf(target, margin=margin, prefer_css_page_size=bare)
        return target


def _write_pdf(writer, path: Path) -> None:
    buf = io.BytesIO()
    writer.write(buf)
    atomic_write_bytes(path, buf.getvalue())


def _edition_text(edition: str, appendix: bool) -> tuple[str, str]:
    """The contents page's subtitle and note."""
    sub = ("Student edition: the exercises without their solutions" if edition == "students"
           else "Full edition, with the solutions of the exercises")
    note = ("The input validation of the code, the full claims ledger and how to cite the book are "
            f"in {APPENDIX_PDF}, printed from the same build." if appendix else "")
    return sub, note


def _write_chapters(entries, chapter_stems, printed, dests, starts, front, footers, out_dir: Path,
                    base: str, root_file: str) -> dict[str, Path]:
    """``<out_dir>/<chapter>.pdf`` for every chapter of ``entries``: its printed pages, with its
    own links made jumps, the book's footers and page labels. Returns chapter -> path."""
    from pypdf import PdfReader, PdfWriter  # see build_pdfs

    out = {}
    for file, caption in entries:
        stem = Path(file).name
        if stem not in chapter_stems or caption.strip().lower() == BACK_MATTER:
            continue
        reader = PdfReader(str(printed[file].path))
        single = PdfWriter(clone_from=reader)
        resolve_links(single, [file] * len(reader.pages), {file: 0}, dests, base, root_file)
        stamp_footers(single, footers.pages[starts[file]:starts[file] + len(reader.pages)])
        single.set_page_label(0, len(reader.pages) - 1, style="/D", start=starts[file] - front + 1)
        single.add_metadata({"/Title": printed[file].title})
        _write_pdf(single, out_dir / f"{stem}.pdf")
        out[stem] = out_dir / f"{stem}.pdf"
    return out


def build_pdfs(build_dir: Path, root: Path, *, edition: str = "web", paper: str = "a4",
               chromium: str | None = None, log=print) -> PdfBuild:
    """Print the HTML build of ``edition`` to ``<build>/pdf`` (``<build>/pdf-students`` for the
    student edition) on ``paper`` (see the module docstring).

    Returns:
        :class:`PdfBuild` with the paths written and the number of pages of each toc page.

    Raises:
        ValueError: ``edition`` not in :data:`~infonce_book.pipeline.editions.EDITIONS` or
            ``paper`` not in :data:`~infonce_book.pipeline.pdf_pages.PAPERS`.
        PdfError: no HTML build, no chromium (``make browser-deps`` installs Debian's), playwright
            or pypdf missing, a page missing from the build or with a MathJax error.
    """
    from pypdf import PdfReader  # optional: only `infonce-book pdf` needs it

    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {', '.join(EDITIONS)}; got {edition!r}")
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {', '.join(PAPERS)}; got {paper!r}")
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # chromium's trailer sizes: harmless warnings

    build_dir, root = Path(build_dir).resolve(), Path(root).resolve()
    html = html_dir(build_dir, edition)
    if not (html / "index.html").is_file():
        make = "make book" if edition == "web" else f"make book-{edition}"
        raise PdfError(f"no HTML build at {html}: run `{make}` (or `infonce-book build`) first")
    exe = chromium or find_chromium()
    if exe is None:
        raise PdfError("no chromium executable found (looked for INFONCE_BOOK_CHROMIUM, "
                       + ", ".join(CHROMIUM_CANDIDATES) + "): run `make browser-deps` "
                       "(apt-get install -y chromium) or set INFONCE_BOOK_CHROMIUM")
    entries = _toc_entries(root)
    book_entries, appendix_entries = split_entries(entries)
    files = [f for f, _ in entries]
    out_dir = build_dir / ("pdf" if edition == "web" else f"pdf-{edition}")
    tmp_dir = build_dir / f"{out_dir.name}.pages"
    shutil.rmtree(tmp_dir, ignore_errors=True)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")) or {}
    book_title = str(config.get("title", ""))
    result = PdfBuild(book=out_dir / BOOK_PDF)
    printed = {}
    with _Printer(html, exe, PAPERS[paper]) as printer:
        printer.log = log
        for file in files:
            printed[file], fitted = printer.page(file, tmp_dir / f"{file}.pdf")
            if fitted:
                result.fitted[file] = fitted
                log(f"[pdf] {file}: scaled to the page's width: "
                    + ", ".join(f"{tag}#{ident} x{zoom}" for tag, ident, zoom in fitted))
            log(f"[pdf] {file}.html printed")
        dests = {f: dest_table(PdfReader(str(p.path))) for f, p in printed.items()}
        subtitle, note = _edition_text(edition, bool(appendix_entries))
        book, starts, front, footers = assemble_pdf(printer, book_entries, printed, dests, title=book_title,
                                                 subtitle=subtitle, note=note, tmp=tmp_dir, root_file=files[0])
        appendix = None
        if appendix_entries:
            appendix, _, result.front[APPENDIX_PDF], _ = assemble_pdf(
                printer, appendix_entries, printed, dests, title=f"{book_title}: appendix",
                subtitle=subtitle, note="", tmp=tmp_dir / "appendix", root_file=files[0])
    result.front[BOOK_PDF] = front
    shutil.rmtree(out_dir, ignore_errors=True)  # no PDF of a page that is gone stays behind
    out_dir.mkdir(parents=True)
    for file, caption in entries:
        result.pages[file] = len(PdfReader(str(printed[file].path)).pages)
    result.chapters = _write_chapters(book_entries, set(chapters(root)), printed, dests, starts, front,
                                      footers, out_dir, printer.base, files[0])
    meta = {"/Title": book_title, "/Author": str(config.get("author", ""))}
    book.add_metadata(meta)
    _write_pdf(book, result.book)
    if appendix is not None:
        appendix.add_metadata({**meta, "/Title": f"{book_title}: appendix"})
        result.appendix = out_dir / APPENDIX_PDF
        _write_pdf(appendix, result.appendix)
    shutil.rmtree(tmp_dir, ignore_errors=True)
    log(f"[pdf] {result.book} ({len(book.pages)} pages), {len(result.chapters)} chapter PDFs"
        + (f", {result.appendix} ({len(appendix.pages)} pages)" if appendix is not None else ""))
    activate_pdf_links(html, out_dir)
    return result


def activate_pdf_links(html: Path, pdf_dir: Path) -> list[Path]:
    """Copy the PDFs into ``html/pdf/`` and turn each hidden placeholder whose PDF exists into a
    visible link (see :data:`PDF_PLACEHOLDER`); returns the pages changed."""
    html, pdf_dir = Path(html), Path(pdf_dir)
    dest = html / "pdf"
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir()
    for pdf in pdf_dir.glob("*.pdf"):
        shutil.copy2(pdf, dest / pdf.name)
    changed = []
    for page in sorted(html.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        if "infonce-pdf" not in text:
            continue

        def link(m, page=page):
            name = m.group(1)
            pdf = dest / name
            if not pdf.is_file():
                return m.group(0)
            rel = os.path.relpath(pdf, page.parent).replace(os.sep, "/")
            what = "the whole book" if name == BOOK_PDF else "this chapter"
            size = pdf.stat().st_size / 1e6
            return (f'<p class="infonce-pdf"><a class="reference download" href="{rel}" download>'
                    f'PDF of {what}</a> ({size:.1f} MB, printed from these pages)</p>')

        new = _PLACEHOLDER_RE.sub(link, text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed
