"""One PDF from the pages chromium printed: a contents page, the pages in order, footers numbered
through, bookmarks by part, links made jumps inside it (:func:`assemble_pdf`, used by
:func:`infonce_book.pipeline.pdf.build_pdfs` for ``book.pdf`` and ``appendix.pdf``).

The sections listed on the contents page are the visible ``h2`` titles of each page (their text
from the page, their page from the bookmark chromium wrote for each ``h1`` and ``h2``).
"""

from __future__ import annotations

from pathlib import Path

from .pdf_links import resolve_links, resolve_page_links
from .pdf_pages import Entry, contents_html, footer_html, label_pages, page_label, stamp_footers

__all__ = ["assemble_pdf"]


def _outline_pages(reader) -> list[int]:
    """The page index of each chapter and section bookmark (depth 0 and 1) that chromium wrote
    from the page's ``h1`` and ``h2``, in order."""
    out: list[int] = []

    def walk(items, depth):
        for item in items:
            if isinstance(item, list):
                if depth < 1:
                    walk(item, depth + 1)
            else:
                out.append(reader.get_destination_page_number(item))
    walk(reader.outline, 0)
    return out


def _contents_entries(entries, printed, readers, offsets, log) -> list[Entry]:
    """The lines of the contents page: part captions, pages, their sections (page indices
    counted from the first page after the contents)."""
    lines: list[Entry] = []
    caption_before = None
    for file, caption in entries:
        if caption and caption != caption_before:
            lines.append(Entry(caption, 0))
        caption_before = caption
        lines.append(Entry(printed[file].title, 1, offsets[file]))
        heads, pages = printed[file].headings, _outline_pages(readers[file])
        if len(heads) != len(pages):
            log(f"[pdf] {file}: {len(heads)} titles but {len(pages)} bookmarks; its sections are "
                "listed at its first page")
            pages = [0] * len(heads)
        lines += [Entry(text, 2, offsets[file] + page) for (level, text), page in zip(heads, pages)
                  if level == 2]
    return lines


def assemble_pdf(printer, entries, printed, dests, *, title, subtitle, note, tmp: Path, root_file: str):
    """One PDF of the printed ``entries``: a contents page, the pages in order with one bookmark
    each (under its part), footers numbered through, links made jumps inside it. Returns the
    writer, the first page of each file, the number of contents pages and the footers' reader."""
    from pypdf import PdfReader, PdfWriter  # optional dependency, as in pipeline/pdf.py

    readers = {f: PdfReader(str(printed[f].path)) for f, _ in entries}
    offsets, n = {}, 0
    for f, _ in entries:
        offsets[f], n = n, n + len(readers[f].pages)
    front, lines = 1, _contents_entries(entries, printed, readers, offsets, printer.log)
    for _ in range(4):  # the contents' length decides where the book starts: settle it
        shifted = [Entry(e.title, e.level, None if e.page is None else e.page + front) for e in lines]
        contents = PdfReader(str(printer.html(contents_html(title, subtitle, shifted, front, note),
                                              tmp / f"contents-{front}.pdf")))
        if len(contents.pages) == front:
            break
        front = len(contents.pages)
    book = PdfWriter()
    book.append(contents, import_outline=False)
    book.add_outline_item(title="Contents", page_number=0)
    page_files, footers, starts, parts = ["#contents"] * front, [], {}, {}
    footers = [f"Contents \u00b7 {page_label(i, front)}" for i in range(front)]
    for file, caption in entries:
        starts[file] = len(book.pages)
        book.append(readers[file], import_outline=False)
        page_files += [file] * len(readers[file].pages)
        footers += [f"{printed[file].title} \u00b7 {page_label(starts[file] + i, front)}"
                    for i in range(len(readers[file].pages))]
        parent = None
        if caption:
            if caption not in parts:
                parts[caption] = book.add_outline_item(title=caption, page_number=starts[file])
            parent = parts[caption]
        book.add_outline_item(title=printed[file].title, page_number=starts[file], parent=parent)
    footer_reader = PdfReader(str(printer.html(footer_html(printer.paper, footers), tmp / "footers.pdf",
                                               bare=True)))
    stamp_footers(book, footer_reader.pages)
    resolve_links(book, page_files, starts, dests, printer.base, root_file)
    resolve_page_links(book)
    label_pages(book, front)
    book.page_mode = "/UseOutlines"
    return book, starts, front, footer_reader
