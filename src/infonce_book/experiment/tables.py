"""Tables for readers: the one way every chapter shows a table.

:func:`show_table` turns a data frame into a MyST table (the page parses code cells' Markdown
outputs as MyST, ``nb_render_markdown_format: myst``): headers in mathematics, no index column,
numbers in one format (thousands separators; four significant figures unless told), a dash with
a note for a value that is not defined, and a long table shown by its first rows with the whole
table in a collapsed box below (opened by a click; the PDF prints the whole table once, in its place).
:func:`ledger_view` is the chapters' table of their claims-ledger records, with each record's
test and verdict.
"""

from __future__ import annotations

import math
import numbers

import pandas as pd

from .figure_labels import raw_identifiers
from .ledger import verdict, verdict_counts

__all__ = ["ReaderTable", "show_table", "ledger_view", "verdict_sentence", "DASH_NOTE"]

#: The note under a table with a dash in it.
DASH_NOTE = "A dash marks a value that is not defined for that row."

#: The ledger's kinds of test, as the chapters' tables name them.
TEST_NAMES = {"two-sided": "two-sided interval", "one-sided": "one-sided", "bound": "bound holds",
              "equivalence": "equivalence, margin", "exact": "exact check"}


def _cell(value, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        x = float(value)
        if math.isnan(x):
            return "—"
        if math.isinf(x):
            return "$\\infty$" if x > 0 else "$-\\infty$"
        if x == int(x) and abs(x) < 1e15 and abs(x) >= 1:
            return f"{int(x):,}"
        text = f"{x:.{digits}g}"
        if "e" in text:
            mant, exp = text.split("e")
            return f"${mant} \\times 10^{{{int(exp)}}}$"
        return text.replace("-", "−")
    return str(value).replace("|", "\\|").replace("\n", " ")


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    header = [h.replace("|", "\\|") for h in header]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


class ReaderTable:
    """A table for the page (from :func:`show_table`): shown as MyST Markdown in the book and in
    Jupyter; ``str()`` gives the same text. ``header`` and ``rows`` hold the formatted cells."""

    def __init__(self, header: list[str], rows: list[list[str]], *, preview: int | None, note: str,
                 what: str):
        self.header, self.rows, self.preview, self.note, self.what = header, rows, preview, note, what

    def _repr_markdown_(self) -> str:
        notes = [n for n in (self.note, DASH_NOTE if any("—" in c for r in self.rows for c in r) else "") if n]
        tail = ("\n\n" + " ".join(notes)) if notes else ""
        if self.preview is None or len(self.rows) <= self.preview:
            return _markdown(self.header, self.rows) + tail + "\n"
        shown = _markdown(self.header, self.rows[: self.preview])
        full = _markdown(self.header, self.rows)
        # The web shows the first rows and the rest in a collapsed box; print has the table once.
        return (f"````{{only}} html\n{shown}\n\nThe first {self.preview} of {len(self.rows)} {self.what}; "
                f"all of them in the box below.{tail}\n\n::::{{admonition}} All {len(self.rows)} {self.what}\n"
                f":class: dropdown\n\n{full}\n::::\n````\n\n````{{only}} latex\n{full}{tail}\n````\n")

    def __repr__(self) -> str:
        return self._repr_markdown_()

    __str__ = __repr__


def show_table(df: pd.DataFrame, columns: dict | None = None, *, index: str | None = None,
               preview: int | None = 8, note: str = "", digits: int = 4, what: str = "rows") -> ReaderTable:
    """A data frame as a table for readers (see the module docstring).

    Args:
        df: the table (any index; it is dropped unless ``index`` names it).
        columns: ``{column: header}``, in the order to show; headers in MyST (``"$\\\\tau$"``,
            ``"95% interval"``). ``None``: every column, under its own name.
        index: the header of the index, shown as the first column (for a pivot table whose
            index means something); ``None``: the index is not shown.
        preview: rows shown before the rest is collapsed; ``None``: every row.
        note: a sentence under the table (e.g. what the interval is).
        digits: significant figures of non-integer numbers.
        what: the plural noun the collapsed box counts ("rows", "records").

    Raises:
        ValueError: a column that ``df`` lacks, a header that is a code name (an underscore or
            caret outside ``$...$``, a symbol spelled as a word), or ``preview`` < 1.
    """
    columns = {c: str(c) for c in df.columns} if columns is None else dict(columns)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"show_table: columns {missing} are not in the table (it has {list(df.columns)})")
    if preview is not None and preview < 1:
        raise ValueError(f"show_table: preview must be >= 1 or None, got preview={preview!r}")
    header = ([index] if index else []) + list(columns.values())
    raw = {h: raw_identifiers(h) for h in header if raw_identifiers(h)}
    if raw:
        raise ValueError(f"show_table: headers must be mathematics or words, not code names: {raw}")
    rows = []
    for idx, row in zip(df.index, df[list(columns)].itertuples(index=False)):
        cells = [_cell(v, digits) for v in row]
        if index:
            label = ", ".join(_cell(v, digits) for v in idx) if isinstance(idx, tuple) else _cell(idx, digits)
            cells = [label] + cells
        rows.append(cells)
    return ReaderTable(header, rows, preview=preview, note=note, what=what)


def _interval(r: dict) -> str:
    lo, hi = r["ci_low"], r["ci_high"]
    if lo == hi:
        return "exact value"
    return f"[{_cell(lo, 4)}, {_cell(hi, 4)}]"


def _quantity(text: str) -> str:
    """A record's quantity: a code name (no space, an underscore) in code font, else as written."""
    return f"`{text}`" if " " not in text and "_" in text else text


def ledger_view(records, *, preview: int | None = 8) -> ReaderTable:
    """A chapter's ledger records (:class:`~.ledger.Record` objects or their dicts) as a table:
    what is measured, predicted, measured, the interval, the test and the verdict."""
    recs = [r if isinstance(r, dict) else r.__dict__ for r in records]
    df = pd.DataFrame({"record": [f"`{r['id']}`" for r in recs], "quantity": [_quantity(r["quantity"]) for r in recs],
                       "predicted": [r["predicted"] for r in recs], "measured": [r["measured"] for r in recs],
                       "interval": [_interval(r) for r in recs],
                       "test": [TEST_NAMES.get(r.get("kind", "two-sided"), r.get("kind")) for r in recs],
                       "verdict": [verdict(r) if verdict(r) == "passed" else f"**{verdict(r)}**" for r in recs]})
    return show_table(df, {"record": "record", "quantity": "what is measured", "predicted": "predicted",
                           "measured": "measured", "interval": "interval", "test": "test", "verdict": "verdict"},
                      preview=preview, what="records",
                      note="The test and the verdicts are defined in the appendix on reproducibility.")


def verdict_sentence(records) -> str:
    """``"38 passed, 2 were inconclusive and 1 failed"`` for a chapter's records (``"1 was
    inconclusive"``; a verdict no record has is left out: ``"40 passed and 1 failed"``).

    Examples:
        >>> verdict_sentence([{"id": "a", "passed": True}, {"id": "b", "passed": False, "verdict": "inconclusive"}])
        '1 passed and 1 was inconclusive'
        >>> verdict_sentence([{"id": "a", "passed": True}])
        'all 1 passed'
    """
    c = verdict_counts(records)
    parts = [f"{c['passed']} passed"] if c["passed"] else []
    if c["inconclusive"]:
        parts.append(f"{c['inconclusive']} {'was' if c['inconclusive'] == 1 else 'were'} inconclusive")
    if c["failed"]:
        parts.append(f"{c['failed']} failed")
    if len(parts) == 1 and c["passed"]:
        return f"all {c['passed']} passed"
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else (parts[0] if parts else "none")
