"""PDFs of the book and of each chapter, printed from the HTML build with chromium.

``infonce-book pdf`` (``make pdf``) prints every page of ``<build>/html`` with Debian's chromium,
driven by Playwright, and writes

* ``<build>/pdf/<chapter>.pdf`` for every chapter (the executed pages outside the back matter), and
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
MathJax is awaited, every collapsed solution and dropdown is opened (the PDFs are of the full
edition), and the page is printed with the theme's print style sheet and the book's
(``static/infonce-book.css``: no sidebars, buttons or rerun box; numbered titles; wrapped code),
A4 at :data:`PRINT_SCALE`, with the page's title and page numbers in the footer.
"""

from __future__ import annotations

import functools
import html as html_lib
import io
import logging
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
from .assemble import BOOK_PDF, PDF_PLACEHOLDER, html_dir
from .citation import BACK_MATTER, toc_pages
from .toc import chapters

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

#: The page is printed at this scale: an A4 page with the margins below is then about 840 CSS
#: pixels wide, the width of the web page's text column, so display formulas typeset by MathJax
#: for the web fit the page as they are.
PRINT_SCALE = 0.8

_GREEK = {name: chr(code) for name, code in (
    ("alpha", 0x3b1), ("beta", 0x3b2), ("gamma", 0x3b3), ("delta", 0x3b4), ("kappa", 0x3ba),
    ("lambda", 0x3bb), ("mu", 0x3bc), ("nu", 0x3bd), ("pi", 0x3c0), ("sigma", 0x3c3), ("tau", 0x3c4),
    ("phi", 0x3c6), ("infty", 0x221e), ("to", 0x2192), ("le", 0x2264), ("ge", 0x2265))}


def plain_title(title: str) -> str:
    """A page's ``<title>`` as plain text for PDF bookmarks and footers: without the book's name
    and without TeX (``\\(O(1/k)\\)`` -> ``O(1/k)``, ``\\tau`` -> ``τ``; other commands lose
    their backslash)."""
    text = title.split(" \u2014 ")[0]
    text = re.sub(r"\\[()\[\]]|\$", "", text)
    text = re.sub(r"\\([A-Za-z]+)", lambda m: _GREEK.get(m.group(1), m.group(1)), text)
    return re.sub(r"[{}]", "", text).strip()


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


def _print_pages(html: Path, files: list[str], out_dir: Path, chromium: str, log) -> tuple[dict[str, Path], str]:
    """Print ``html/<file>.html`` for every file to ``out_dir/<file>.pdf``; returns file -> PDF and
    the address the pages were served from (links into the book start with it)."""
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
                title = html_lib.escape(plain_title(page.title()))
                target = out_dir / f"{file}.pdf"
                target.parent.mkdir(parents=True, exist_ok=True)
                page.pdf(path=str(target), format="A4", scale=PRINT_SCALE, print_background=True, outline=True,
                         tagged=True, display_header_footer=True, header_template="<span></span>",
                         footer_template=_FOOTER.format(title=title),
                         margin={"top": "16mm", "bottom": "18mm", "left": "16mm", "right": "16mm"})
                page.emulate_media(media="screen")
                printed[file] = target
                log(f"[pdf] {file}.html printed")
        finally:
            browser.close()
    return printed, server.base


def _dest_table(reader) -> dict[str, tuple[int, float | None]]:
    """``{anchor: (page index, top)}`` of a printed page's named destinations (chromium names one
    after every element id that a link of the page points to)."""
    out = {}
    for name, dest in reader.named_destinations.items():
        try:
            index = reader.get_destination_page_number(dest)
        except Exception:  # a destination chromium left without a page: nothing to jump to
            continue
        out[str(name).lstrip("/")] = (index, dest.get("/Top"))
    return out


def _link_target(annot, own_file: str, base: str, root_file: str):
    """Where a link annotation points: ``(file, anchor)`` inside the book; ``None`` for a link to
    the web (kept as it is); ``False`` for a link into the served build that is not a page."""
    dest = annot.get("/Dest")
    if dest is not None and not isinstance(dest, list):
        return own_file, str(dest).lstrip("/")
    action = annot.get("/A")
    uri = str(action.get_object().get("/URI", "")) if action is not None else ""
    if not uri.startswith(base):
        return None
    parts = urlsplit(uri)
    path = unquote(parts.path).lstrip("/")
    if not path.endswith(".html"):
        return False  # e.g. a download of a source file, which the PDF cannot hold
    file = path[:-5]
    return (root_file if file == "index" else file), unquote(parts.fragment)


def _resolve_links(writer, page_files: list[str], starts: dict[str, int], dests: dict[str, dict],
                   base: str, root_file: str) -> None:
    """Turn every link into the book into an explicit jump to its page (and height) in ``writer``,
    whose page ``i`` was printed from ``page_files[i]`` and whose pages of file ``f`` start at
    ``starts[f]``: named destinations (which would clash between pages once merged) and links to
    the local server alike. A link whose target is not in this PDF (another chapter, in a
    chapter's own PDF) is removed, so no PDF holds a link to the temporary server. Links to the
    web are kept."""
    from pypdf.generic import (  # see build_pdfs
        ArrayObject,
        FloatObject,
        NameObject,
        NullObject,
        NumberObject,
    )

    for i, page in enumerate(writer.pages):
        annots = page.get("/Annots")
        if annots is None:
            continue
        kept = ArrayObject()
        for ref in annots.get_object():
            annot = ref.get_object()
            if annot.get("/Subtype") != "/Link":
                kept.append(ref)
                continue
            target = _link_target(annot, page_files[i], base, root_file)
            if target is None:
                kept.append(ref)
                continue
            if target is False or target[0] not in starts:
                continue
            file, anchor = target
            local, top = dests.get(file, {}).get(anchor, (0, None)) if anchor else (0, None)
            for key in ("/A", "/Dest"):
                if key in annot:
                    del annot[NameObject(key)]
            annot[NameObject("/Dest")] = ArrayObject([
                writer.pages[starts[file] + local].indirect_reference, NameObject("/XYZ"), NullObject(),
                FloatObject(top) if top is not None else NullObject(), NumberObject(0)])
            kept.append(ref)
        page[NameObject("/Annots")] = kept


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

    # pypdf warns about chromium's trailer sizes ("Object count ... exceeds defined trailer
    # size"); the files read correctly, so only errors are shown.
    logging.getLogger("pypdf").setLevel(logging.ERROR)

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
    printed, base = _print_pages(html, files, tmp_dir, exe, log)

    result = PdfBuild(book=out_dir / BOOK_PDF)
    shutil.rmtree(out_dir, ignore_errors=True)  # no PDF of a page that is gone stays behind
    out_dir.mkdir(parents=True)
    chapter_stems = set(chapters(root))
    book = PdfWriter()
    starts: dict[str, int] = {}
    page_files: list[str] = []
    dests: dict[str, dict] = {}
    parts: dict[str, object] = {}
    for file, caption in entries:
        reader = PdfReader(str(printed[file]))
        starts[file] = len(book.pages)
        result.pages[file] = len(reader.pages)
        dests[file] = _dest_table(reader)
        book.append(reader, import_outline=False)
        page_files += [file] * len(reader.pages)
        parent = None
        if caption:
            if caption not in parts:
                parts[caption] = book.add_outline_item(title=caption, page_number=starts[file])
            parent = parts[caption]
        title = plain_title(str(reader.metadata.title)) if reader.metadata and reader.metadata.title else file
        book.add_outline_item(title=title, page_number=starts[file], parent=parent)
        stem = Path(file).name
        if stem in chapter_stems and caption.strip().lower() != BACK_MATTER:
            single = PdfWriter(clone_from=reader)
            _resolve_links(single, [file] * len(reader.pages), {file: 0}, dests, base, files[0])
            single.add_metadata({"/Title": title})
            _write_pdf(single, out_dir / f"{stem}.pdf")
            result.chapters[stem] = out_dir / f"{stem}.pdf"
    _resolve_links(book, page_files, starts, dests, base, files[0])
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
