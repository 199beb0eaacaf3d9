"""PDFs of the book and of each chapter, printed from the HTML build with chromium.

``infonce-book pdf`` (``make pdf``) prints every page of ``<build>/html`` with Debian's chromium,
driven by Playwright, and writes

* ``<build>/pdf/<chapter>.pdf`` for every executed chapter, and
* ``<build>/pdf/book.pdf``: every page of ``_toc.yml`` in order, merged with :mod:`pypdf`, with
  one bookmark per page (under its part) and links between pages turned into jumps inside the
  PDF;

then copies them to ``<build>/html/pdf/`` and turns on the links to them that the pipeline left,
hidden, after the title of the intro and of each chapter (:data:`PDF_PLACEHOLDER`).

Why print the HTML rather than use Sphinx's LaTeX builder: the PDF is then the page a reader
sees on the web, with the same numbering (Theorem 5.2, Fig. 5.3, (5.1)), the same MathJax
typesetting and the same glued figures and values, from the same build; it needs only the
chromium the browser test already uses (``make browser-deps``), where the LaTeX route needs a
TeX distribution of several hundred megabytes in CI, and LaTeX versions of everything the HTML
build handles (MathJax macros, glued outputs, sphinx-proof and sphinx-exercise nodes, raw HTML).

Each page is opened over a local HTTP server (MathJax's fonts do not load from ``file://``),
MathJax is awaited, every collapsed solution and dropdown is opened, and the page is printed
with the theme's print style sheet (no sidebars or buttons), A4, with page numbers.
"""

from __future__ import annotations

import functools
import html as html_lib
import io
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import yaml

from ..experiment.paths import atomic_write_bytes
from .citation import toc_pages
from .run import BOOK_PDF, PDF_PLACEHOLDER, chapters, html_dir

#: Where a chromium executable is looked for, after ``INFONCE_BOOK_CHROMIUM``.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome",
                       "google-chrome-stable")

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

_FOOTER = ('<div style="font-size:8px;width:100%;text-align:center;color:#666;">'
           '{title} &middot; <span class="pageNumber"></span> / <span class="totalPages"></span></div>')


@dataclass
class PdfBuild:
    """What :func:`build_pdfs` wrote: the book, the chapters, and the pages of each."""

    book: Path
    chapters: dict[str, Path] = field(default_factory=dict)
    pages: dict[str, int] = field(default_factory=dict)  # toc file -> number of PDF pages


def _toc_entries(root: Path) -> list[tuple[str, str]]:
    """``(file, part caption)`` of the root page and every page of ``_toc.yml``, in order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    return [(str(toc["root"]), ""), *toc_pages(root)]


def _print_pages(html: Path, files: list[str], out_dir: Path, chromium: str, log) -> dict[str, Path]:
    """Print ``html/<file>.html`` for every file to ``out_dir/<file>.pdf``; returns file -> PDF."""
    try:
        from playwright.sync_api import sync_playwright  # optional: only `infonce-book pdf` needs it
    except ImportError as err:
        raise PdfError("playwright is not installed: pip install -e '.[test]' (it drives chromium)") from err
    printed = {}
    with _Server(html) as server, sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=chromium)
        except Exception as err:
            raise PdfError(f"chromium at {chromium} did not start under Playwright: {err}") from err
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 1600})
            for file in files:
                src = html / f"{file}.html"
                if not src.is_file():
                    raise PdfError(f"{src} is missing: the HTML build lacks a page of _toc.yml")
                page.goto(server.base + f"{file}.html", wait_until="load", timeout=120_000)
                state = page.evaluate(_PREPARE)
                if state["errors"]:
                    raise PdfError(f"{file}: MathJax reported {state['errors']} error(s); not printed")
                page.emulate_media(media="print")
                title = html_lib.escape(page.title().split(" \u2014 ")[0])
                target = out_dir / f"{file}.pdf"
                target.parent.mkdir(parents=True, exist_ok=True)
                page.pdf(path=str(target), format="A4", print_background=True, outline=True,
                         tagged=True, display_header_footer=True, header_template="<span></span>",
                         footer_template=_FOOTER.format(title=title),
                         margin={"top": "16mm", "bottom": "18mm", "left": "16mm", "right": "16mm"})
                page.emulate_media(media="screen")
                printed[file] = target
                log(f"[pdf] {file}.html printed")
        finally:
            browser.close()
    return printed


def _page_of_link(uri: str, base: str, known: dict[str, int]) -> int | None:
    """The first page in the merged book of the toc page a served link points to (else None)."""
    if not uri.startswith(base):
        return None
    path = unquote(urlsplit(uri).path).lstrip("/")
    stem = path[:-5] if path.endswith(".html") else path
    if stem == "index":
        stem = next(iter(known), stem)
    return known.get(stem)


def _fix_links(writer, base_url: str, starts: dict[str, int] | None) -> None:
    """Links that point into the served HTML build: a jump to the page's first PDF page in the
    merged book (``starts``), else (a single chapter's PDF) removed, so no PDF holds a link to
    the temporary local server. Links to the web are kept."""
    from pypdf.generic import ArrayObject, NameObject, NullObject, NumberObject  # see build_pdfs

    for page in writer.pages:
        annots = page.get("/Annots")
        if annots is None:
            continue
        kept = ArrayObject()
        for ref in annots.get_object():
            annot = ref.get_object()
            action = annot.get("/A")
            uri = str(action.get_object().get("/URI", "")) if action is not None else ""
            if not uri.startswith(base_url):
                kept.append(ref)
                continue
            target = _page_of_link(uri, base_url, starts) if starts is not None else None
            if target is None:
                continue
            del annot[NameObject("/A")]
            annot[NameObject("/Dest")] = ArrayObject([writer.pages[target].indirect_reference,
                                                       NameObject("/XYZ"), NullObject(), NullObject(),
                                                       NumberObject(0)])
            kept.append(ref)
        page[NameObject("/Annots")] = kept


def _base_url_of(pdf_path: Path) -> str:
    """The local server address that links in a printed PDF start with (from its first link)."""
    from pypdf import PdfReader  # see build_pdfs

    for page in PdfReader(str(pdf_path)).pages:
        for ref in page.get("/Annots") or []:
            action = ref.get_object().get("/A")
            uri = str(action.get_object().get("/URI", "")) if action is not None else ""
            m = re.match(r"^(http://127\.0\.0\.1:\d+/)", uri)
            if m:
                return m.group(1)
    return "http://127.0.0.1:"


def _write_pdf(writer, path: Path) -> None:
    buf = io.BytesIO()
    writer.write(buf)
    atomic_write_bytes(path, buf.getvalue())


def build_pdfs(build_dir: Path, root: Path, *, chromium: str | None = None, log=print) -> PdfBuild:
    """Print the HTML build ``<build>/html`` to ``<build>/pdf`` (see the module docstring).

    Returns:
        :class:`PdfBuild` with the paths written and the number of pages of each toc page.

    Raises:
        PdfError: no HTML build, no chromium (``make browser-deps`` installs Debian's), playwright
            or pypdf missing, a page missing from the build or with a MathJax error.
    """
    from pypdf import PdfReader, PdfWriter  # optional: only `infonce-book pdf` needs it

    build_dir, root = Path(build_dir).resolve(), Path(root).resolve()
    html = html_dir(build_dir)
    if not (html / "index.html").is_file():
        raise PdfError(f"no HTML build at {html}: run `make book` (or `infonce-book build`) first")
    exe = chromium or find_chromium()
    if exe is None:
        raise PdfError("no chromium executable found (looked for INFONCE_BOOK_CHROMIUM, "
                       + ", ".join(CHROMIUM_CANDIDATES) + "): run `make browser-deps` "
                       "(apt-get install -y chromium) or set INFONCE_BOOK_CHROMIUM")
    entries = _toc_entries(root)
    files = [f for f, _ in entries]
    out_dir = build_dir / "pdf"
    tmp_dir = build_dir / "pdf.pages"
    shutil.rmtree(tmp_dir, ignore_errors=True)
    printed = _print_pages(html, files, tmp_dir, exe, log)

    result = PdfBuild(book=out_dir / BOOK_PDF)
    out_dir.mkdir(parents=True, exist_ok=True)
    chapter_stems = set(chapters(root))
    book = PdfWriter()
    starts: dict[str, int] = {}
    parts: dict[str, object] = {}
    for file, caption in entries:
        reader = PdfReader(str(printed[file]))
        starts[file] = len(book.pages)
        result.pages[file] = len(reader.pages)
        book.append(reader, import_outline=False)
        parent = None
        if caption:
            if caption not in parts:
                parts[caption] = book.add_outline_item(caption, starts[file])
            parent = parts[caption]
        title = reader.metadata.title if reader.metadata and reader.metadata.title else file
        book.add_outline_item(str(title).split(" \u2014 ")[0], starts[file], parent=parent)
        stem = Path(file).name
        if stem in chapter_stems:
            single = PdfWriter(clone_from=reader)
            _fix_links(single, _base_url_of(printed[file]), None)
            single.add_metadata({"/Title": str(title)})
            _write_pdf(single, out_dir / f"{stem}.pdf")
            result.chapters[stem] = out_dir / f"{stem}.pdf"
    base = _base_url_of(printed[files[1] if len(files) > 1 else files[0]])
    _fix_links(book, base, starts)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")) or {}
    book.add_metadata({"/Title": str(config.get("title", "")), "/Author": str(config.get("author", ""))})
    book.page_mode = "/UseOutlines"
    _write_pdf(book, result.book)
    shutil.rmtree(tmp_dir, ignore_errors=True)
    log(f"[pdf] {result.book} ({len(book.pages)} pages) and {len(result.chapters)} chapter PDFs")
    activate_pdf_links(html, out_dir)
    return result


def activate_pdf_links(html: Path, pdf_dir: Path) -> list[Path]:
    """Copy the PDFs into ``html/pdf/`` and turn each hidden placeholder whose PDF exists into a
    visible link (see :data:`PDF_PLACEHOLDER`); returns the pages changed."""
    html, pdf_dir = Path(html), Path(pdf_dir)
    dest = html / "pdf"
    dest.mkdir(exist_ok=True)
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
