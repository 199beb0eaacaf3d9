"""The paper, the contents page and the page numbers of the PDFs of ``infonce-book pdf``.

Chromium prints each HTML page on its own, so its footers count the pages of one HTML page
("15 / 21"). The PDFs are therefore printed without footers, merged, and then numbered as one
document: :func:`contents_html` writes a contents page (every part, chapter and section with the
page it starts on, each entry a link), :func:`footer_html` one footer per page (the page's title
and its number), printed by chromium on the same paper, and :func:`stamp_footers` lays each footer
over its page with :mod:`pypdf`. The contents pages are numbered i, ii, ... and the book from 1;
the PDF's page labels (:func:`label_pages`) say the same, so a viewer's page box shows the
printed number.
"""

from __future__ import annotations

import html as html_lib
from dataclasses import dataclass

__all__ = ["MARGIN_MM", "PAGE_LINK", "PAPERS", "Entry", "Paper", "contents_html", "footer_html",
           "label_pages", "page_label", "stamp_footers"]

#: Margins of every printed page (millimetres); the footer sits in the bottom margin.
MARGIN_MM = {"top": 16.0, "bottom": 18.0, "left": 16.0, "right": 16.0}

#: Links of the contents page point here, followed by the index of the page they lead to;
#: :func:`resolve_page_links` turns them into jumps inside the PDF (no such address is left).
PAGE_LINK = "http://infonce-book-page.invalid/"


@dataclass(frozen=True)
class Paper:
    """A paper size (millimetres) as chromium's ``page.pdf`` and the PDF test need it."""

    name: str
    width_mm: float
    height_mm: float

    @property
    def text_width_px(self) -> float:
        """The width of the text column in CSS pixels at print scale 1 (96 px per inch)."""
        return (self.width_mm - MARGIN_MM["left"] - MARGIN_MM["right"]) / 25.4 * 96


PAPERS = {"a4": Paper("a4", 210.0, 297.0), "letter": Paper("letter", 215.9, 279.4)}


@dataclass
class Entry:
    """A line of the contents: ``level`` 0 a part caption, 1 a page (chapter), 2 a section;
    ``page`` the index in the PDF of the page it starts on (``None`` for a part)."""

    title: str
    level: int
    page: int | None = None


def page_label(index: int, front: int) -> str:
    """The printed number of page ``index`` (0-based) of a PDF whose first ``front`` pages are the
    contents: ``i, ii, ...`` for those, then ``1, 2, ...``."""
    if index < front:
        return _roman(index + 1)
    return str(index - front + 1)


def _roman(n: int) -> str:
    out = ""
    for value, digits in ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"),
                          (50, "l"), (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")):
        while n >= value:
            out, n = out + digits, n - value
    return out


_STYLE = """
body { font-family: -apple-system, "Segoe UI", "Helvetica Neue", Arial, sans-serif; color: #222;
       margin: 0; padding-right: 2pt; font-size: 11pt; }
h1 { font-size: 20pt; margin: 0 0 4pt 0; }
p.sub { color: #555; margin: 0 0 14pt 0; }
p.note { color: #555; font-size: 9.5pt; margin-top: 14pt; }
a { color: inherit; text-decoration: none; display: flex; align-items: baseline; }
a span.t { flex: 0 1 auto; }
a span.dots { flex: 1 1 auto; border-bottom: 1px dotted #999; margin: 0 4pt; min-width: 12pt; }
a span.n { flex: 0 0 auto; }
.l0 { font-weight: 600; margin: 12pt 0 3pt 0; font-size: 11.5pt; color: #333; }
.l1 { margin: 5pt 0 1pt 0; font-weight: 600; break-inside: avoid; }
.l2 { margin: 0 0 0 16pt; font-size: 10pt; break-inside: avoid; }
"""


def contents_html(title: str, subtitle: str, entries: list[Entry], front: int, note: str = "") -> str:
    """The contents page: ``title``, ``subtitle`` (e.g. the edition), every entry with its
    printed page number (see :func:`page_label`, ``front`` contents pages before the book) and a
    link to it, and a closing ``note`` (plain text)."""
    esc = html_lib.escape
    rows = []
    for e in entries:
        if e.level == 0 or e.page is None:
            rows.append(f'<div class="l0">{esc(e.title)}</div>')
            continue
        number = page_label(e.page, front)
        rows.append(f'<div class="l{e.level}"><a href="{PAGE_LINK}{e.page}"><span class="t">{esc(e.title)}'
                    f'</span><span class="dots"></span><span class="n">{number}</span></a></div>')
    tail = f'<p class="note">{esc(note)}</p>' if note else ""
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>Contents</title><style>{_STYLE}'
            f'</style></head><body><h1>{esc(title)}</h1><p class="sub">{esc(subtitle)}</p>'
            f'<h2 style="font-size:14pt">Contents</h2>{"".join(rows)}{tail}</body></html>')


def footer_html(paper: Paper, footers: list[str]) -> str:
    """One page per footer text, each text centred in the bottom margin of a ``paper`` page
    (printed with no margin, at scale 1: each ``div`` is exactly one page)."""
    esc = html_lib.escape
    pages = "".join(
        f'<div class="p"><div class="f">{esc(text)}</div></div>' for text in footers)
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><style>'
            f'@page {{ size: {paper.width_mm}mm {paper.height_mm}mm; margin: 0; }}'
            f'body {{ margin: 0; font-family: Arial, sans-serif; }}'
            f'.p {{ width: {paper.width_mm}mm; height: {paper.height_mm}mm; position: relative;'
            f' break-after: page; overflow: hidden; }}'
            f'.f {{ position: absolute; left: {MARGIN_MM["left"]}mm; right: {MARGIN_MM["right"]}mm;'
            f' bottom: 8mm; text-align: center; font-size: 8pt; color: #666; white-space: nowrap;'
            f' overflow: hidden; text-overflow: ellipsis; }}'
            f'</style></head><body>{pages}</body></html>')


def stamp_footers(writer, footer_pages) -> None:
    """Lay ``footer_pages[i]`` (pages of the printed :func:`footer_html`) over page ``i`` of
    ``writer``.

    Raises:
        ValueError: there are not as many footers as pages.
    """
    if len(footer_pages) != len(writer.pages):
        raise ValueError(f"footer_pages has {len(footer_pages)} pages, the PDF "
                         f"{len(writer.pages)}: one footer per page is needed")
    for page, footer in zip(writer.pages, footer_pages):
        page.merge_page(footer)


def label_pages(writer, front: int) -> None:
    """PDF page labels as printed: lower-case roman for the ``front`` contents pages, then
    decimal from 1."""
    if front:
        writer.set_page_label(0, front - 1, style="/r", start=1)
    if len(writer.pages) > front:
        writer.set_page_label(front, len(writer.pages) - 1, style="/D", start=1)
