"""Titles with math, readable where nothing typesets them (part of the book's Sphinx extension).

A page title such as "The limit and its $O(1/k)$ rate" is a math node in the doctree. In the page
body and the navigation sidebar MathJax typesets it (it is loaded on every page, see
:mod:`~infonce_book.pipeline.sphinx_ext`). Three places are plain text, and showed the raw TeX
``\\(O(1/k)\\)``: the browser tab's ``<title>``, the titles Sphinx stores in its search index
(shown as the search results' links) and the summaries the search page cuts from the found pages.
Whatever the title, its math is turned into Unicode text (:func:`~infonce_book.pipeline.tex_text.
tex_to_text`: "O(1/k)", "χ²", "𝔼ₓ"):

* ``html-page-context``: the page's ``title`` (the ``<title>``, the print header);
* the search index: each page's title and a copy of its doctree with its math as text are handed to
  the indexer (the page itself keeps its math), so section and result titles are plain text too;
* the search page: ``infonce-search.js`` turns each formula of a found page into plain text before
  Sphinx cuts the summary, with the same symbol table (:data:`~infonce_book.pipeline.tex_text.SYMBOLS`).
"""

from __future__ import annotations

import html
import json
import re

from docutils import nodes

from .tex_text import SYMBOLS, tex_to_text

__all__ = ["plain_title_html", "setup_titles"]

_MATH_SPAN = re.compile(r'<span class="math[^"]*">\s*\\\((?P<tex>.*?)\\\)\s*</span>', re.S)
_RAW_INLINE = re.compile(r"\\\((?P<tex>.*?)\\\)", re.S)


def plain_title_html(title: str) -> str:
    """A title's HTML with each inline formula (``<span class="math">\\(...\\)</span>``) replaced by
    its plain text (HTML-escaped)."""
    def text(m):
        return html.escape(tex_to_text(html.unescape(m.group("tex"))), quote=False)
    return _RAW_INLINE.sub(text, _MATH_SPAN.sub(text, title or ""))


def _plain_math_copy(doctree: nodes.document) -> nodes.document:
    """A copy of a page's doctree whose inline math nodes are plain text (for the search index)."""
    copy = doctree.deepcopy()
    for node in list(copy.findall(nodes.math)):
        node.replace_self(nodes.Text(tex_to_text(node.astext())))
    return copy


def _plain_page_title(app, pagename, templatename, context, doctree) -> None:
    if context.get("title"):
        context["title"] = plain_title_html(context["title"])
    if pagename == "search":
        app.add_js_file(None, body=f"window.INFONCE_TEX_SYMBOLS = {json.dumps(SYMBOLS, ensure_ascii=False)};",
                        priority=900)
        app.add_js_file("infonce-search.js", priority=901)


def _plain_search_index(app) -> None:
    builder = app.builder
    original = getattr(builder, "index_page", None)
    if original is None or getattr(original, "infonce_plain", False):
        return

    def index_page(pagename, doctree, title):
        return original(pagename, _plain_math_copy(doctree), plain_title_html(title))

    index_page.infonce_plain = True
    builder.index_page = index_page


def setup_titles(app) -> None:
    """Connect the title hooks (called from the extension's ``setup``)."""
    app.connect("builder-inited", _plain_search_index)
    app.connect("html-page-context", _plain_page_title, priority=800)
