"""A small Sphinx extension for the rendered book (listed in ``_config.yml`` ``extra_extensions``).

* **Visible labels.** Every theorem, lemma, proposition, corollary, definition (sphinx-proof),
  exercise (sphinx-exercise) and labelled figure shows its stable label, small and copyable,
  at the end of its title or caption: "Theorem 1.2 (The rate) ``c1-thm-rate``". The label is
  what the "How to cite" page asks readers to cite; numbers may change between versions,
  labels do not. (A ``<code class="infonce-label">`` inside a ``<span class="infonce-label">``;
  ``infonce-book.css`` styles it; one click selects the whole label.)
* **MathJax on every page.** Sphinx loads MathJax only on pages whose own text has math, but the
  navigation sidebar of every page shows chapter titles with math ("The limit and its $O(1/k)$
  rate"): on the pages without math of their own (references, index, search, back matter) those
  titles stayed raw TeX. The HTML assets policy ``always`` loads MathJax (vendored, no CDN)
  everywhere.
* **Duplicate inline scripts.** sphinx-thebe's configuration script is added twice, and the
  second copy fails with "Identifier 'THEBE_JS_URL' has already been declared" in every page's
  console; identical inline scripts are kept once.
* **Links to solutions** that read "Solution to Exercise 1.2" from any page, not just "Solution
  to": :mod:`~infonce_book.pipeline.sphinx_solutions`.
* **The index and the proof index**: the notation page's terms and the results by name in the
  general index, numbers and titles in the proof index: :mod:`~infonce_book.pipeline.sphinx_index`.
* **Titles as plain text** where nothing typesets them (the ``<title>``, the search index and
  results): :mod:`~infonce_book.pipeline.sphinx_titles`.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes

from .sphinx_index import setup_index
from .sphinx_solutions import CompleteSolutionLinks
from .sphinx_titles import setup_titles

STATIC = Path(__file__).resolve().parent / "static"

#: sphinx-proof types whose label is shown (the numbered results; proofs have no label).
PROOF_TYPES = ("theorem", "lemma", "proposition", "corollary", "definition", "conjecture", "remark",
               "example", "assumption", "axiom", "criterion", "property", "observation", "algorithm",
               "notation")


def _dedupe_inline_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for js in scripts:
        filename = getattr(js, "filename", js)
        attrs = getattr(js, "attributes", None) or {}
        if not filename and attrs.get("body"):  # an inline script: same body, same script
            key = tuple(sorted((k, str(v)) for k, v in attrs.items()))
            if key in seen:
                continue
            seen.add(key)
        kept.append(js)
    context["script_files"] = kept


def label_node(label: str) -> nodes.inline:
    """The small, copyable label appended to a result's title: ``<span><code>label</code></span>``."""
    code = nodes.literal(label, label, classes=["infonce-label"])
    return nodes.inline("", "", code, classes=["infonce-label"])


def _explicit_label(node) -> str | None:
    """A result's label when the author gave one (``:label:``), not an automatic one."""
    label = node.get("label") or ""
    if not label:
        return None
    realtype = node.get("realtype") or node.get("type") or ""
    if label.startswith(f"{realtype}-") and label[len(realtype) + 1:].isdigit():
        return None  # sphinx-proof's automatic label
    if "-solution-" in label or label.endswith(f"-exercise-{node.get('serial_number', '')}"):
        return None  # sphinx-exercise's automatic labels
    return label


def _is_result(node) -> bool:
    if node.get("countertype") is not None:  # a sphinx-proof result (numbered or `:nonumber:`)
        return node.get("realtype") in PROOF_TYPES
    return node.get("type") in ("exercise", "exercise-start")  # a sphinx-exercise exercise


def _has_label(node) -> bool:
    return any(isinstance(c, nodes.Element) and "infonce-label" in c.get("classes", []) for c in node.children)


def add_labels(app, doctree, docname) -> None:
    """Append each result's and each labelled figure's label to its title or caption."""
    for node in list(doctree.findall(nodes.Element)):
        if isinstance(node, nodes.figure):
            caption = next(iter(node.findall(nodes.caption)), None)
            names = [n for n in node.get("names", []) if n]
            if caption is not None and names and not _has_label(caption):
                caption += nodes.Text(" ")
                caption += label_node(names[0])
            continue
        if not _is_result(node):
            continue
        label = _explicit_label(node)
        title = next((c for c in node.children if isinstance(c, nodes.title)), None)
        if label is None or title is None:
            continue
        if not _has_label(title):
            title += label_node(label)


def _add_static(app) -> None:
    if app.builder.format == "html":
        app.config.html_static_path.append(str(STATIC))


def setup(app):
    app.set_html_assets_policy("always")
    app.connect("html-page-context", _dedupe_inline_scripts, priority=900)
    app.connect("builder-inited", _add_static)
    app.connect("doctree-resolved", add_labels)
    app.add_css_file("infonce-book.css")
    app.add_js_file("infonce-layout.js", priority=900)  # long inline formulas scroll on a phone
    setup_titles(app)
    app.add_post_transform(CompleteSolutionLinks)
    setup_index(app)
    return {"version": "2", "parallel_read_safe": True, "parallel_write_safe": True}
