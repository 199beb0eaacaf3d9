"""The printed book: what Sphinx's LaTeX builder needs beyond ``_config.yml``'s ``latex`` settings.

Listed in ``_config.yml`` ``extra_extensions``; nothing here changes the HTML build.

* **Print is the text, the web is the laboratory** (:class:`PrintOnly`): the PDFs leave out the
  code cells' sources and code outputs (figures and tables remain), the cells that show
  claims-ledger tables (``ledger_view``; the prose keeps the one-line verdict summary) and the
  "Rerun this chapter" box -- except in the back matter, which keeps its tables; a table column
  headed "code" goes too (and a table of code names only, with its section). A long table's web
  preview and collapsed box are ``{only}`` blocks (:mod:`infonce_book.experiment.tables`).
* **Numbering as on the web** (:class:`FrontAndBackMatter`): chapters 1-6 numbered, the front and
  back matter not; results numbered by chapter ("Theorem 5.9", not sphinx-jupyterbook-latex's "5.5.3").
* **References with numbers and pages** (:class:`NumberedReferences`): "Section 5.3 (p. 134)",
  "Theorem 5.9 (p. 134)".
* **Results set as a textbook sets them**: sphinx-proof's and sphinx-exercise's boxes become the
  environments of ``infoncebook.sty`` (bold head with number and title; theorem statements in
  italics; proofs with amsthm's ``proof``; all of them break across pages).
* **Tables**: no number or word is ever split (:meth:`FrontAndBackMatter._natural_width`).
* ``bbm.sty``: ``jupyterBook.cls`` loads it for four macros the book does not use; a two-line
  stand-in (``\\mathbbm`` as ``\\mathbb``) spares Debian's 1.5 GB ``texlive-fonts-extra``.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

__all__ = ["PrintOnly", "NumberedReferences", "setup"]

STYLE = Path(__file__).resolve().parent / "infoncebook.sty"
#: Docnames (``book/<name>``) whose pages keep their ledger tables in print: the back matter.
KEEPS_LEDGER = ("book/robustness", "book/cite", "book/appendix_reproducibility", "book/references")
#: Source fragments of a code cell whose whole output is left out of print.
LEDGER_CALLS = ("ledger_view(",)
#: Admonition classes of build notes (left out of print).
BUILD_NOTES = ("infonce-rerun",)
#: Result types set upright (the others' statements are in italics, as amsthm's ``plain`` style).
UPRIGHT = ("definition", "remark", "example", "notation", "assumption", "observation", "algorithm")
#: Characters of table text that fit the text width at each size (11 pt body on A4/Letter with
#: the book's margins; a column separator counts as four characters). A table with text columns
#: goes no smaller than footnote size: its text wraps instead.
TABLE_SIZES = ((80, ""), (88, r"\small"), (97, r"\footnotesize"), (110, r"\scriptsize"), (145, r"\tiny"),
               (174, r"\fontsize{5}{6}\selectfont"))  # the last: the appendix's 20-column benchmark table
#: A table cell with a word of four letters or more is text (it may wrap between words); the others
#: (numbers, intervals, dashes, short flags) are set in columns that never wrap.
_WORD = re.compile(r"[A-Za-z]{4,}")
#: Where a table entry may break: between words, and after a hyphen, underscore or slash that
#: joins the parts of an identifier.
_BREAK = r"(?<=[A-Za-z0-9][-_/])(?=[A-Za-z])"  # "4.C5-temperature", "top1_accuracy"; never "1e-13", "-0.5"
_PIECES = re.compile(r"\s+|" + _BREAK)
#: Width of a typewriter character in characters of the text font (record ids are typewriter).
_TT = 1.2


def _pages(document: nodes.document) -> dict[int, str]:
    """``id(node)`` -> the page (docname) each node of the assembled LaTeX doctree comes from.
    (Sphinx's ``inline_all_toctrees`` moves a page's children under a ``start_of_file`` without
    resetting their ``parent``: walking up does not find it, walking down does.)"""
    pages = {}
    for start in document.findall(addnodes.start_of_file):  # outer pages first, inner ones override
        for node in start.findall(nodes.Element):
            pages[id(node)] = start["docname"]
    return pages


def _raw(tex: str) -> nodes.raw:
    return nodes.raw("", tex, format="latex")


def _remove_cell(cell: nodes.Element) -> None:
    """Leave a code cell out of print; a paragraph that introduced it ("... the symbolic check:")
    ends with a full stop instead of a colon."""
    parent = cell.parent
    at = parent.index(cell)
    parent.remove(cell)
    before = parent[at - 1] if at > 0 else None
    if isinstance(before, nodes.paragraph):
        last = next(iter(reversed(list(before.findall(nodes.Text)))), None)
        if last is not None and str(last).rstrip().endswith(":") and not isinstance(last.parent, nodes.math):
            last.parent.replace(last, nodes.Text(str(last).rstrip()[:-1] + "."))


def _columns(table: nodes.table) -> int:
    group = next(iter(table.findall(nodes.tgroup)), None)
    return int(group.get("cols", 0)) if group is not None else 0


def _drop_code_column(table: nodes.table) -> None:
    """A table column headed "code" (the notation's names in the package) is left out of print."""
    group = next(iter(table.findall(nodes.tgroup)), None)
    head = next(iter(group.findall(nodes.thead)), None) if group is not None else None
    if head is None:
        return
    titles = [entry.astext().strip().lower() for entry in head.findall(nodes.entry)]
    if "code" not in titles or len(titles) < 2:
        return
    at = titles.index("code")
    rows = list(group.findall(nodes.row))
    if any(len(row.children) != len(titles) for row in rows):  # spanned cells: leave the table whole
        return
    for row in rows:
        row.remove(row.children[at])
    specs = [c for c in group.children if isinstance(c, nodes.colspec)]
    if len(specs) == len(titles):
        group.remove(specs[at])
    group["cols"] = len(titles) - 1


class PrintOnly(SphinxPostTransform):
    """Leave out of the PDFs what belongs to the web laboratory (see the module docstring)."""

    default_priority = 100  # after myst-nb chose the outputs (4), before sphinx-jupyterbook-latex (700)
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        pages = _pages(self.document)
        for cell in list(self.document.findall(nodes.container)):
            if "cell" not in cell.get("classes", []) or cell.parent is None:
                continue
            source = " ".join(n.astext() for n in cell.findall(nodes.literal_block)
                              if "cell_input" in getattr(n.parent, "get", lambda *_: [])("classes", []))
            if any(call in source for call in LEDGER_CALLS) and pages.get(id(cell)) not in KEEPS_LEDGER:
                _remove_cell(cell)
                continue
            for part in list(cell.children):
                if "cell_input" in part.get("classes", []):
                    cell.remove(part)
            for block in list(cell.findall(nodes.literal_block)):  # text/plain and stream outputs
                block.parent.remove(block)
            if not any(True for _ in cell.findall(lambda n: isinstance(n, (nodes.image, nodes.table,
                                                                             nodes.paragraph, nodes.math_block)))):
                _remove_cell(cell)
        for table in list(self.document.findall(nodes.table)):
            _drop_code_column(table)
            section = table.parent
            if table.parent is not None and _columns(table) < 2:  # nothing but symbols was left
                section.remove(table)
                if isinstance(section, nodes.section) and all(
                        isinstance(c, (nodes.title, nodes.target)) for c in section.children):
                    section.parent.remove(section)  # a section of code names only ("Code names")
        for note in list(self.document.findall(nodes.Admonition)):
            if any(c in note.get("classes", []) for c in BUILD_NOTES) and note.parent is not None:
                note.parent.remove(note)
        for xref in list(self.document.findall(nodes.inline)):  # {ref}`genindex`: the printed index
            if "xref" in xref.get("classes", []) and xref.astext() == "genindex" and xref.parent is not None:
                xref.parent.replace(xref, nodes.Text("index"))
        for raw in list(self.document.findall(nodes.raw)):  # HTML-only paragraphs (the PDF links)
            if raw.get("format") == "html" and raw.parent is not None:
                raw.parent.remove(raw)


class NumberedReferences(SphinxPostTransform):
    """A reference to a section prints "Section 5.3", to a numbered result "Theorem 5.9", each with
    its page; the unnumbered sections (front and back matter) keep their titles, with the page."""

    default_priority = 110
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        secnumbers, pages = self.env.toc_secnumbers, _pages(self.document)
        first_id = {}  # (page, any id of a section) -> the section's first id (its toc anchor)
        for section in self.document.findall(nodes.section):
            doc = pages.get(id(section))
            for ident in section.get("ids", []):
                first_id[(doc, ident)] = section["ids"][0]
        for ref in list(self.document.findall(nodes.reference)):
            uri = ref.get("refuri", "")
            if uri.startswith("%") and "#" in uri:
                doc, anchor = uri[1:].split("#", 1)
            elif ref.get("refid"):
                doc, anchor = pages.get(id(ref)), ref["refid"]
            else:
                continue
            if ref.parent is None:
                continue
            classes = {c for child in ref.findall(nodes.inline) for c in child.get("classes", [])}
            number = secnumbers.get(doc, {}).get("#" + first_id.get((doc, anchor), anchor))
            if "std-ref" in classes and number:
                ref.children = [nodes.Text("Section " + ".".join(map(str, number)))]
            elif not ("std-ref" in classes or self._is_result(anchor)):
                continue
            ref.parent.insert(ref.parent.index(ref) + 1,
                              _raw(r"~(p.\,\pageref{\detokenize{%s:%s}})" % (doc, anchor)))

    def _is_result(self, anchor: str) -> bool:
        proofs = getattr(self.env, "proof_list", {}) or {}
        return anchor in proofs and not proofs[anchor].get("nonumber")


class FrontAndBackMatter(SphinxPostTransform):
    """Chapters numbered as on the web: the pages of the numbered parts get numbers, the others
    (intro, notation, glossary, back matter) none; tables set in natural-width columns."""

    default_priority = 120
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        numbered = {doc for doc, numbers in self.env.toc_secnumbers.items() if numbers}
        for start in list(self.document.findall(addnodes.start_of_file)):
            depth = 2 if start["docname"] in numbered else -1
            start.insert(0, _raw(r"\setcounter{secnumdepth}{%d}" % depth))
            section = next(iter(start.findall(nodes.section)), None)
            title = next((c for c in section.children if isinstance(c, nodes.title)), None) if section else None
            if title is not None:  # on the page's first page: where pipeline/typeset.py splits the book
                section.insert(section.index(title) + 1, _raw(r"\infoncemark{%s}" % start["docname"]))
        for table in list(self.document.findall(nodes.table)):
            self._natural_width(table)

    @staticmethod
    def _natural_width(table: nodes.table) -> None:
        """Numbers in columns of natural width (never wrapped); when the table would not fit the
        text width even in a smaller size, its text columns wrap between words and after the
        hyphens and underscores of identifiers (a record id, a quantity's name), never inside a
        word or a number: every column is at least as wide as its longest unbreakable piece, and
        the columns fill the text width exactly."""
        group = next(iter(table.findall(nodes.tgroup)), None)
        if group is None or table.parent is None:
            return
        cols = int(group.get("cols", 0)) or 1
        widths, body, numeric, piece = [0] * cols, [1] * cols, [True] * cols, [1.0] * cols
        for row in group.findall(nodes.row):
            for i, entry in enumerate(row.children[:cols]):
                text = entry.astext()
                widths[i] = max(widths[i], len(text))
                tt = _TT if any(True for _ in entry.findall(nodes.literal)) else 1.0
                piece[i] = max([piece[i]] + [tt * len(p) for p in _PIECES.split(text) if p])
                if row.parent.tagname == "tbody":
                    body[i] = max(body[i], len(text))
                    numeric[i] = numeric[i] and not _WORD.search(text)
        need = sum(widths) + 4 * cols
        fits = [size for limit, size in TABLE_SIZES[:3] if need <= limit]
        if fits:
            size, spec = fits[0], "l" * cols
        else:
            least = [max(b, p) if n else p for b, p, n in zip(body, piece, numeric)]  # never narrower
            capacity, size = next(((limit, s) for limit, s in TABLE_SIZES[2:] if sum(least) + 4 * cols <= limit),
                                  TABLE_SIZES[-1])
            extra = [0.0 if n else max(0.0, w - m) for w, m, n in zip(widths, least, numeric)]
            room = max(0.0, capacity - 4 * cols - sum(least))
            chars = [m + room * e / (sum(extra) or 1) for m, e in zip(least, extra)]
            spec = "".join(r">{\raggedright\arraybackslash}p{\dimexpr(\linewidth-%d\tabcolsep)*%d/1000\relax}"
                           % (2 * cols, int(1000 * c / sum(chars))) for c in chars)
            for row in group.findall(nodes.row):
                for i, entry in enumerate(row.children[:cols]):
                    if not numeric[i]:
                        _breakable(entry)
        parent, at = table.parent, table.parent.index(table)
        col_spec = addnodes.tabular_col_spec()
        col_spec["spec"] = spec
        parent.insert(at, col_spec)
        parent.insert(at, _raw("{" + size + r"\hyphenpenalty=10000\exhyphenpenalty=10000"))
        parent.insert(parent.index(table) + 1, _raw("}"))


def _breakable(entry: nodes.Element) -> None:
    """A line may break after each ``-``, ``_`` or ``/`` of a table entry's text (TeX breaks neither
    after an underscore nor inside typewriter text); mathematics is left alone."""
    for text in list(entry.findall(nodes.Text)):
        parent = text.parent
        if parent is None or isinstance(parent, (nodes.math, nodes.raw, nodes.math_block)):
            continue
        parts = [p for p in re.split(_BREAK, str(text)) if p]
        if len(parts) > 1:
            pieces: list[nodes.Node] = []
            for part in parts[:-1]:
                pieces += [nodes.Text(part), _raw(r"\allowbreak{}")]
            parent.replace(text, [*pieces, nodes.Text(parts[-1])])


# --- sphinx-proof and sphinx-exercise in the LaTeX build -----------------------------------------

_BOX = "\n\\begin{sphinxadmonition}{note}"  # what both extensions open their results with


def _rindex(body: list, item: str) -> int:
    return len(body) - 1 - body[::-1].index(item)


def _as_environment(depart, env_of):
    """Wrap an extension's LaTeX ``depart`` so that the result is set in ``env_of(node)`` (an
    environment of ``infoncebook.sty`` taking the head as its argument), not in a note box."""

    def _depart(self, node):
        start = _rindex(self.body, _BOX)
        depart(self, node)
        env = env_of(node)
        self.body[start] = "\n\\begin{%s}" % env
        self.body[-1] = "\\end{%s}\n" % env
    return _depart


class _Proof(SphinxPostTransform):
    """A sphinx-proof ``proof`` as amsthm's ``proof`` (its "Proof." head and the closing square)."""

    default_priority = 130
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        from sphinx_proof.nodes import proof_node  # optional: a book extension, loaded by Sphinx first

        for node in list(self.document.findall(proof_node)):
            box = node.children[0] if node.children else None
            if not isinstance(box, nodes.admonition):
                continue
            first = next(iter(box.findall(nodes.Text)), None)
            if first is not None and str(first).startswith("Proof. "):
                first.parent.replace(first, nodes.Text(str(first)[len("Proof. "):]))
            node.replace_self([_raw("\\begin{proof}"), *box.children, _raw("\\end{proof}")])


def _latex_numbering(app) -> None:
    """After sphinx-jupyterbook-latex (which numbers by section): results numbered by chapter, as
    on the web (the environment's numbers, which sphinx-proof prints)."""
    if app.builder.format != "latex":
        return
    app.config.numfig_secnum_depth = 1
    from sphinx.util.fileutil import copy_asset_file  # heavy: only the LaTeX builder needs it

    copy_asset_file(str(STYLE), app.outdir)
    (Path(app.outdir) / "bbm.sty").write_text(
        "\\ProvidesPackage{bbm}[2026/01/01 infonce-book stand-in: mathbbm as mathbb]\n"
        "\\RequirePackage{amssymb}\\providecommand{\\mathbbm}[1]{\\mathbb{#1}}\n", encoding="utf-8")


def _resolved(app, doctree, docname) -> None:
    """The assembled book, before the LaTeX writer sees it: the web's copyable labels after each
    result's title (``sphinx_ext.add_labels``, on the same event) are left out of print; and, the
    numbers being assigned, LaTeX's figure and equation counters are reset by chapter (the
    writer's ``numfigreset`` under ``\\part`` needs one level more than the web's depth)."""
    if app.builder.format != "latex":
        return
    app.config.numfig_secnum_depth = 2
    for label in list(doctree.findall(nodes.inline)):
        if "infonce-label" in label.get("classes", []) and label.parent is not None:
            label.parent.remove(label)


def _exercise_visit(visit):
    """sphinx-exercise labels an exercise ``exercise:<label>`` only; a ``{numref}`` asks for
    ``<page>:<label>`` with the exercise's number: both."""

    def _visit(self, node):
        visit(self, node)
        start = _rindex(self.body, _BOX)
        label = node.get("label", "")
        env = self.builder.env
        entry = getattr(env, "sphinx_exercise_registry", {}).get(label, {})
        doc = entry.get("docname")
        number = env.toc_fignumbers.get(doc, {}).get("exercise", {}).get(node.get("ids", [label])[0])
        if doc and number:
            self.body.insert(start, r"\infoncelabel{%s}{\detokenize{%s:%s}}" % (".".join(map(str, number)), doc, label))
    return _visit


def _override_results(app) -> None:
    import sphinx_exercise.nodes as ex  # optional: book extensions, loaded by Sphinx before this one
    import sphinx_proof.nodes as prf  # optional: as above

    env_of = lambda n: "infonceupright" if n.get("realtype") in UPRIGHT else "infoncetheorem"  # noqa: E731
    for cls in set(prf.NODE_TYPES.values()) | {prf.unenumerable_node}:
        enumerable = cls is not prf.unenumerable_node
        visit = prf.visit_enumerable_node if enumerable else prf.visit_unenumerable_node
        depart = prf.depart_enumerable_node if enumerable else prf.depart_unenumerable_node
        app.add_node(cls, override=True, latex=(visit, _as_environment(depart, env_of)))
    for cls, visit, depart in ((ex.exercise_node, ex.visit_exercise_node, ex.depart_exercise_node),
                               (ex.exercise_enumerable_node, ex.visit_exercise_enumerable_node,
                                ex.depart_exercise_enumerable_node),
                               (ex.solution_node, ex.visit_solution_node, ex.depart_solution_node)):
        kind = "infoncesolution" if cls is ex.solution_node else "infonceexercise"
        if cls is not ex.solution_node:
            visit = _exercise_visit(visit)
        app.add_node(cls, override=True, latex=(visit, _as_environment(depart, lambda n, k=kind: k)))


def setup(app):
    app.connect("builder-inited", _latex_numbering, priority=900)
    app.connect("doctree-resolved", _resolved, priority=900)
    _override_results(app)
    for transform in (PrintOnly, NumberedReferences, FrontAndBackMatter, _Proof):
        app.add_post_transform(transform)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
