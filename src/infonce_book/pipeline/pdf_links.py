"""Links inside the PDFs of ``infonce-book pdf``.

Chromium prints each HTML page on its own: a link to another page of the book points to the
local server the pages were served from, and a link inside the page to a named destination
(which would clash between pages once they are merged). :func:`resolve_links` turns both into
explicit jumps (page and height) inside the merged PDF, and :func:`resolve_page_links` the
contents page's links (:data:`~infonce_book.pipeline.pdf_pages.PAGE_LINK`).
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from .pdf_pages import PAGE_LINK

__all__ = ["dest_table", "resolve_links", "resolve_page_links"]


def dest_table(reader) -> dict[str, tuple[int, float | None]]:
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


def resolve_links(writer, page_files: list[str], starts: dict[str, int], dests: dict[str, dict],
                   base: str, root_file: str) -> None:
    """Turn every link into the book into an explicit jump to its page (and height) in ``writer``,
    whose page ``i`` was printed from ``page_files[i]`` and whose pages of file ``f`` start at
    ``starts[f]``: named destinations (which would clash between pages once merged) and links to
    the local server alike. A link whose target is not in this PDF (another chapter, in a
    chapter's own PDF) is removed, so no PDF holds a link to the temporary server. Links to the
    web are kept."""
    from pypdf.generic import (  # optional dependency, as in pipeline/pdf.py
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


def resolve_page_links(writer) -> None:
    """Turn the contents page's links (``PAGE_LINK`` + page index) into jumps to that page."""
    from pypdf.generic import ArrayObject, NameObject, NullObject, NumberObject  # see pdf.py

    for page in writer.pages:
        for ref in page.get("/Annots") or []:
            annot = ref.get_object()
            action = annot.get("/A")
            uri = str(action.get_object().get("/URI", "")) if action is not None else ""
            if not uri.startswith(PAGE_LINK):
                continue
            target = writer.pages[int(uri[len(PAGE_LINK):])]
            del annot[NameObject("/A")]
            annot[NameObject("/Dest")] = ArrayObject([target.indirect_reference, NameObject("/XYZ"),
                                                      NullObject(), NullObject(), NumberObject(0)])
