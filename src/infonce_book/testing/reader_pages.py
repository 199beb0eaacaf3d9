"""What a built chapter page must not show a reader: the checks of the rendered HTML.

:func:`page_problems` scans one page's HTML for developer output in tables: a header that is
a column name (an identifier with an underscore), the index column of a data-frame printout
(pandas' ``<th>`` row headers and its ``dataframe`` class), a cell reading ``NaN``, and the
"73 rows × 7 columns" line pandas prints under a cut table. The book's tests run it on every
chapter of the smoke build.
"""

from __future__ import annotations

import re
from html import unescape

__all__ = ["page_problems"]

_TABLE = re.compile(r"<table\b.*?</table>", re.S)
_TH = re.compile(r"<th\b[^>]*>(.*?)</th>", re.S)
_TD = re.compile(r"<td\b[^>]*>(.*?)</td>", re.S)
_TAG = re.compile(r"<[^>]+>")
_MATH = re.compile(r'<span class="math[^"]*">.*?</span>|\\\(.*?\\\)|\$.*?\$', re.S)
_IDENT = re.compile(r"\b[A-Za-z]\w*_\w+\b")


def _text(html: str) -> str:
    return unescape(_TAG.sub("", _MATH.sub(" ", html))).strip()


def page_problems(html: str) -> list[str]:
    """The problems of one rendered page (empty when its tables read well).

    Examples:
        >>> page_problems('<table class="dataframe"><thead><tr><th>ci_low</th></tr></thead></table>')
        ['a data-frame printout (class "dataframe")', "a header that is a column name: 'ci_low'"]
        >>> page_problems("<table><thead><tr><th>95% low</th></tr></thead><tr><td>0.1</td></tr></table>")
        []
    """
    out = []
    for table in _TABLE.findall(html):
        if 'class="dataframe' in table:
            out.append('a data-frame printout (class "dataframe")')
        body = table.split("</thead>", 1)[-1]
        if re.search(r"<tbody>\s*<tr>\s*<th\b", body):
            out.append("an index column (row headers in the table's body)")
        for th in _TH.findall(table):
            for name in _IDENT.findall(_text(th)):
                out.append(f"a header that is a column name: {name!r}")
        for td in _TD.findall(table):
            if _text(td) in ("NaN", "nan", "<NA>", "None"):
                out.append(f"a cell reading {_text(td)!r}")
    text = _text(html)
    for m in re.finditer(r"\d+ rows × \d+ columns", text):
        out.append(f"a cut table: {m.group(0)!r}")
    return out
