"""The book's index and proof index (part of the book's Sphinx extension).

* The general index lists the glossary's terms, the bold terms of the notation page (each with an
  anchor, ``notation-term-<name>``) and every titled numbered result by its name, kind and label,
  math as plain text (:func:`~infonce_book.pipeline.tex_text.tex_to_text`).
* The proof index (sphinx-proof's ``prf-prf.html``, bare labels under their initials) is replaced by
  :class:`ProofIndex`: by page, each result by number and title, its label beside it.
"""

from __future__ import annotations

import re
from collections import defaultdict

from docutils import nodes
from sphinx import addnodes
from sphinx.domains import Index
from sphinx.transforms import SphinxTransform

from .tex_text import tex_to_text

__all__ = ["IndexEntries", "ProofIndex", "plain_text", "setup_index"]

NOTATION_PAGE = "notation"  # the page (basename) whose bold terms are indexed
_ARTICLE = re.compile(r"^(the|a|an)\s+", re.I)
RESULT_TYPES = ("theorem", "lemma", "proposition", "corollary", "definition", "conjecture")


def plain_text(node: nodes.Node) -> str:
    """A node's text with its math as plain text ("O(1/k)", not the TeX), our labels left out."""
    if isinstance(node, nodes.math):
        return tex_to_text(node.astext())
    if isinstance(node, nodes.Text):
        return str(node)
    if isinstance(node, nodes.Element) and "infonce-label" in node.get("classes", []):
        return ""
    return "".join(plain_text(c) for c in node.children)


def _result_name(node: nodes.Element) -> str | None:
    title = next((c for c in node.children if isinstance(c, nodes.title)), None)
    if title is None:
        return None
    name = " ".join(plain_text(title).split()).strip()
    if name.startswith("(") and name.endswith(")"):
        name = name[1:-1].strip()
    return name or None


def _entry_name(name: str) -> str:
    """An index heading for a name: the leading article dropped, the first letter capitalised."""
    name = _ARTICLE.sub("", name)
    return name[:1].upper() + name[1:]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "term"


class IndexEntries(SphinxTransform):
    """Index entries for the notation page's terms and the titled results (see the module
    docstring); runs before Sphinx's domains collect the entries (priority 850)."""

    default_priority = 840

    def apply(self, **kwargs) -> None:
        docname = self.env.docname
        if docname.rsplit("/", 1)[-1] == NOTATION_PAGE:
            self._notation_terms(docname)
        for node in list(self.document.findall(nodes.Element)):
            if node.get("realtype") not in RESULT_TYPES or node.get("countertype") is None:
                continue
            label = node.get("label") or ""
            name = _result_name(node)
            ids = node.get("ids") or []
            if not name or not ids or not label or label.startswith(f"{node['realtype']}-"):
                continue
            entry = ("single", f"{_entry_name(name)}; {node['realtype']} {label}", ids[0], "", None)
            node.parent.insert(node.parent.index(node), addnodes.index(entries=[entry]))

    def _notation_terms(self, docname: str) -> None:
        seen: set[str] = set()
        for strong in list(self.document.findall(nodes.strong)):
            term = " ".join(plain_text(strong).split()).strip(" :")
            if not term:
                continue
            anchor = f"notation-term-{_slug(term)}"
            while anchor in seen:
                anchor += "-"
            seen.add(anchor)
            strong["ids"].append(anchor)
            index = addnodes.index(entries=[("single", _entry_name(term), anchor, "", None)])
            strong.parent.insert(strong.parent.index(strong), index)


class ProofIndex(Index):
    """sphinx-proof's proof index, with each result's number and title (see the module docstring)."""

    name = "prf"
    localname = "Proof Index"
    shortname = "Proof"

    def generate(self, docnames=None):
        env = self.domain.env
        proofs = getattr(env, "proof_list", {}) or {}
        names = getattr(env, "infonce_result_names", {})
        content = defaultdict(list)
        order = {doc: i for i, doc in enumerate(_toc_order(env))}
        for label, values in proofs.items():
            doc = values["docname"]
            if docnames and doc not in docnames:
                continue
            number = env.toc_fignumbers.get(doc, {}).get(values["countertype"], {}).get(label)
            kind = values["realtype"].capitalize()
            head = f"{kind} {'.'.join(map(str, number))}" if number else kind
            title = names.get(label)
            entry = f"{head} ({title})" if title else head
            extra = "" if label.startswith(f"{values['realtype']}-") else label
            content[(order.get(doc, 1 << 20), doc)].append(
                (entry, 0, doc, label, extra, "", "", tuple(number or ())))
        out = []
        for (_, doc), entries in sorted(content.items()):
            entries.sort(key=lambda e: e[-1])
            heading = " ".join(plain_text(env.titles[doc]).split()) if doc in env.titles else doc
            out.append((heading, [e[:-1] for e in entries]))
        return out, True


def _toc_order(env) -> list[str]:
    """The documents in reading order (the master document's toctree, depth first)."""
    order, stack = [], [env.config.root_doc]
    while stack:
        doc = stack.pop(0)
        if doc in order:
            continue
        order.append(doc)
        stack[0:0] = env.toctree_includes.get(doc, [])
    return order


def _record_result_names(app, doctree) -> None:
    env = app.env
    store = env.__dict__.setdefault("infonce_result_names", {})
    for node in doctree.findall(nodes.Element):
        if node.get("countertype") is not None and node.get("label"):
            name = _result_name(node)
            if name:
                store[node["label"]] = name


def _purge(app, env, docname) -> None:
    store = getattr(env, "infonce_result_names", {})
    for label in [lab for lab, v in getattr(env, "proof_list", {}).items() if v.get("docname") == docname]:
        store.pop(label, None)


def _merge(app, env, docnames, other) -> None:
    env.__dict__.setdefault("infonce_result_names", {}).update(getattr(other, "infonce_result_names", {}))


def setup_index(app) -> None:
    """Register the index entries and the proof index (called from the extension's ``setup``)."""
    app.add_transform(IndexEntries)
    app.connect("doctree-read", _record_result_names)
    app.connect("env-purge-doc", _purge, priority=400)  # before sphinx-proof forgets the page's results
    app.connect("env-merge-info", _merge)
    domain = app.registry.domains.get("prf")
    if domain is not None:  # sphinx-proof's domain, with this proof index instead of its own
        indices = [ProofIndex if getattr(i, "name", "") == "prf" else i for i in domain.indices]
        app.add_domain(type(domain.__name__, (domain,), {"indices": indices}), override=True)
