"""The book's Sphinx extension (listed in ``_config.yml`` ``extra_extensions``).

* **Visible labels**: every theorem, lemma, ..., exercise and labelled figure shows its stable label
  (what the "How to cite" page asks readers to cite), small and copyable, after its title or caption.
* **MathJax on every page** (the sidebar's titles have math), vendored, no CDN; sphinx-thebe's
  configuration script, added twice, kept once.
* **Links to solutions** read "Solution to Exercise 1.2" from any page, not just "Solution to"
  (sphinx-exercise completes same-page links only): :class:`CompleteSolutionLinks`.
* **Titles as plain text** where nothing typesets them (the ``<title>``, the search index, the
  search page's summaries: ``infonce-search.js``), by :func:`~infonce_book.pipeline.tex_text.tex_to_text`.
* **The index**: the glossary's terms, the notation page's bold terms (anchors
  ``notation-term-<name>``) and every titled numbered result by name, kind and label
  (:class:`IndexEntries`); the proof index by page, each result by number and title, its label
  beside it (:class:`ProofIndex`, in place of sphinx-proof's bare labels).
* **Every screen**: the theme's menu and contents buttons work on phones (``infonce-theme.js``,
  until pydata-sphinx-theme #2451 is fixed); a favicon and a meta description on every page.
* **A lighter page**: ``templates/layout.html`` drops fontawesome.js and the search index from every
  page but the search page; the icon font is cut to the icons shown (:func:`subset_icon_fonts`);
  images load lazily (the figures come as 256-colour PNGs: ``experiment.style.glue_figure``).
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.domains import Index
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform

from .tex_text import SYMBOLS, tex_to_text

STATIC = Path(__file__).resolve().parent / "static"
TEMPLATES = Path(__file__).resolve().parent / "templates"

#: sphinx-proof types whose label is shown (the numbered results; proofs have no label); the first
#: six are indexed by name.
PROOF_TYPES = ("theorem", "lemma", "proposition", "corollary", "definition", "conjecture", "remark",
               "example", "assumption", "axiom", "criterion", "property", "observation", "algorithm",
               "notation")
RESULT_TYPES = PROOF_TYPES[:6]
NOTATION_PAGE = "notation"  # the page (basename) whose bold terms are indexed
_ARTICLE = re.compile(r"^(the|a|an)\s+", re.I)

def _title(node: nodes.Element) -> nodes.title | None:
    return next((c for c in node.children if isinstance(c, nodes.title)), None)


def _is_label(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Element) and "infonce-label" in node.get("classes", [])


def plain_text(node: nodes.Node) -> str:
    """A node's text with its math as plain text ("O(1/k)", not the TeX), our labels left out."""
    if isinstance(node, nodes.math):
        return tex_to_text(node.astext())
    if isinstance(node, nodes.Text):
        return str(node)
    return "" if _is_label(node) else "".join(plain_text(c) for c in node.children)


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


def add_labels(app, doctree, docname) -> None:
    """Append each result's and each labelled figure's label to its title or caption."""
    for node in list(doctree.findall(nodes.Element)):
        if isinstance(node, nodes.figure):
            caption = next(iter(node.findall(nodes.caption)), None)
            names = [n for n in node.get("names", []) if n]
            if caption is not None and names and not any(map(_is_label, caption.children)):
                caption += [nodes.Text(" "), label_node(names[0])]
            continue
        label = _explicit_label(node) if _is_result(node) else None
        title = _title(node) if label is not None else None
        if title is not None and not any(map(_is_label, title.children)):
            title += label_node(label)


def _add_templates(app, config) -> None:
    config.html_static_path.append(str(STATIC))  # (the LaTeX builder does not read it)
    if config.html_theme == "sphinx_book_theme":  # the override extends that theme's layout
        config.templates_path.append(str(TEMPLATES))
    if not config.html_favicon:
        config.html_favicon = str(STATIC / "favicon.svg")
    if not config.html_search_scorer:  # a page whose title holds the query first
        config.html_search_scorer = str(STATIC / "infonce-scorer.js")


def description(doctree: nodes.document, limit: int = 160) -> str:
    """A page's meta description: its first paragraph of prose (not in a box, table or caption),
    math as plain text, cut at a word before ``limit`` characters."""
    skip = (nodes.Admonition, nodes.table, nodes.caption, nodes.figure, nodes.footnote, nodes.citation)
    for para in doctree.findall(nodes.paragraph):
        parent, inside = para.parent, False
        while parent is not None and not inside:
            inside = isinstance(parent, skip) or "admonition" in " ".join(parent.get("classes", []))
            parent = parent.parent
        text = " ".join(plain_text(para).split())
        if not inside and len(text) >= 40:
            return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"
    return ""


_IMG = re.compile(r"<img (?![^>]*\bloading=)")


def _page_extras(app, pagename, templatename, context, doctree) -> None:
    """The meta description (the first paragraph, else the title); images below the first screen
    load when scrolled to; the bibliography's entries are list items (docutils marks them with the
    deprecated role ``doc-biblioentry`` inside a ``list``, which axe-core reports as critical)."""
    text = description(doctree) if doctree is not None else ""
    if doctree is not None and not text and context.get("title"):
        text = f"{re.sub(r'<[^>]+>', '', context['title'])}: {app.config.html_title or app.config.project}"
    context["infonce_description"] = text
    if context.get("body"):
        head, img, rest = context["body"].partition("<img ")  # the first image is likely in view
        body = head + img + _IMG.sub('<img loading="lazy" decoding="async" ', rest)
        context["body"] = body.replace('role="doc-biblioentry"', 'role="listitem"')


def _drop_unused_design(app, pagename, templatename, context, doctree) -> None:
    """sphinx-design's files (63 KB) on the pages that use it only (runs last: the page's own
    scripts are added to the list before)."""
    if "sd-" not in context.get("body", ""):
        for key in ("css_files", "script_files"):
            context[key] = [f for f in context.get(key, [])
                            if not any(n in str(getattr(f, "filename", f)) for n in ("sphinx-design", "design-tabs"))]


_ICON = re.compile(r'((?:\.fa-[a-z0-9-]+:before,?)+)\{content:"\\([0-9a-f]+)"\}')


def subset_icon_fonts(app, exception) -> None:
    """Cut the theme's Font Awesome fonts (solid 156 KB, regular) down to the icons the book shows:
    those the built pages name (``fa-bars``, ...) and those the style sheets draw themselves (the
    admonitions' icons, private-use characters in the CSS). Written as
    ``_static/infonce-fa-{solid,regular}.woff``, which ``infonce-book.css`` declares after the
    theme's fonts (the last declaration of a face wins)."""
    fonts = Path(app.outdir) / "_static" / "vendor" / "fontawesome" / "webfonts"
    if exception is not None or app.builder.format != "html" or not fonts.is_dir():  # (another theme: none)
        return
    from fontTools import subset  # the HTML build only (fontTools comes with matplotlib)

    out = Path(app.outdir)
    used = set()
    for page in out.rglob("*.html"):
        used |= set(re.findall(r"\bfa-([a-z0-9-]+)", page.read_text(encoding="utf-8", errors="ignore")))
    codes = set()
    for sheet in (out / "_static").rglob("*.css"):
        css = sheet.read_text(encoding="utf-8", errors="ignore")
        codes |= {int(code, 16) for names, code in _ICON.findall(css)
                  if used & set(re.findall(r"\.fa-([a-z0-9-]+):before", names))}
        rest = _ICON.sub("", css)
        codes |= {ord(c) for c in rest if 0xE000 <= ord(c) <= 0xF8FF}
        codes |= {int(code, 16) for code in re.findall(r"\\([ef][0-9a-f]{3})\b", rest)}
    for style, source in (("solid", "fa-solid-900.ttf"), ("regular", "fa-regular-400.ttf")):  # (woff2: brotli)
        options = subset.Options(flavor="woff", layout_features=["*"])
        font = subset.load_font(str(fonts / source), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=codes)
        subsetter.subset(font)
        subset.save_font(font, str(out / "_static" / f"infonce-fa-{style}.woff"), options)


_MATH_SPAN = re.compile(r'<span class="math[^"]*">\s*\\\((?P<tex>.*?)\\\)\s*</span>', re.S)
_RAW_INLINE = re.compile(r"\\\((?P<tex>.*?)\\\)", re.S)


def plain_title_html(title: str) -> str:
    """A title's HTML with each inline formula (``<span class="math">\\(...\\)</span>``) as plain text."""
    def text(m):
        return html.escape(tex_to_text(html.unescape(m.group("tex"))), quote=False)
    return _RAW_INLINE.sub(text, _MATH_SPAN.sub(text, title or ""))


def _plain_page_title(app, pagename, templatename, context, doctree) -> None:
    if context.get("title"):
        context["title"] = plain_title_html(context["title"])
    if pagename == "search":
        app.add_js_file(None, body=f"window.INFONCE_TEX_SYMBOLS = {json.dumps(SYMBOLS, ensure_ascii=False)};",
                        priority=900)
        app.add_js_file("infonce-search.js", priority=901)


def _plain_search_index(app) -> None:
    """The search indexer gets each page's title and a copy of its doctree with the math as text."""
    original = getattr(app.builder, "index_page", None)
    if original is None or getattr(original, "infonce_plain", False):
        return

    def index_page(pagename, doctree, title):
        copy = doctree.deepcopy()
        for node in list(copy.findall(nodes.math)):
            node.replace_self(nodes.Text(tex_to_text(node.astext())))
        return original(pagename, copy, plain_title_html(title))

    index_page.infonce_plain = True
    app.builder.index_page = index_page


def solution_link_text(env, solution_label: str) -> list[nodes.Node] | None:
    """The text "Solution to Exercise N.M (the exercise's title)", its math kept as math nodes;
    ``None`` when the label is not a solution's or its exercise has no number."""
    registry = getattr(env, "sphinx_exercise_registry", {}) or {}
    entry = registry.get(solution_label)
    if not entry or entry.get("type") != "solution":
        return None
    exercise_label = entry["node"].get("target_label")
    exercise = registry.get(exercise_label)
    if exercise is None:
        return None
    number = env.toc_fignumbers.get(exercise["docname"], {}).get("exercise", {}).get(exercise_label)
    if not number:
        return None
    out: list[nodes.Node] = [nodes.Text(f"Solution to Exercise {'.'.join(str(n) for n in number)}")]
    title = exercise["node"].children[0] if exercise["node"].children else None
    subtitle = next((c for c in title.children if isinstance(c, nodes.subtitle)), None) if title else None
    if subtitle is not None and subtitle.children:
        out += [nodes.Text(" ("), *(c.deepcopy() for c in subtitle.children), nodes.Text(")")]
    return out


class CompleteSolutionLinks(SphinxPostTransform):
    """Complete the text of cross-page links to solutions (``refuri`` ending in ``#<solution label>``,
    reading just "Solution to"); a link whose text the author wrote is left alone."""

    default_priority = 23  # after sphinx-exercise's ResolveLinkTextToSolutions (22)

    def run(self, **kwargs) -> None:
        for ref in list(self.document.findall(nodes.reference)):
            uri = ref.get("refuri") or ""
            if "#" not in uri or ref.astext().strip() != "Solution to":
                continue
            text = solution_link_text(self.env, uri.rsplit("#", 1)[1])
            if text is None:
                continue
            holder = ref.children[0] if ref.children and isinstance(ref.children[0], nodes.inline) else ref
            holder.children = []
            holder.extend(text)


def _result_name(node: nodes.Element) -> str | None:
    title = _title(node)
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
    """Index entries for the notation page's terms and the titled results (module docstring); runs
    before Sphinx's domains collect the entries (priority 850)."""

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
    """sphinx-proof's proof index, with each result's number and title (module docstring)."""

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


def setup(app):
    app.set_html_assets_policy("always")
    app.connect("html-page-context", _dedupe_inline_scripts, priority=900)
    app.connect("html-page-context", _page_extras)
    app.connect("html-page-context", _drop_unused_design, priority=950)
    app.connect("config-inited", _add_templates)
    app.connect("build-finished", subset_icon_fonts)
    app.connect("doctree-resolved", add_labels)
    app.add_css_file("infonce-book.css")
    app.add_js_file("infonce-layout.js", priority=900)  # long inline formulas scroll on a phone
    app.add_js_file("infonce-theme.js", priority=900)  # the theme's sidebar buttons and ".pdf" button
    app.connect("builder-inited", _plain_search_index)
    app.connect("html-page-context", _plain_page_title, priority=800)
    app.add_post_transform(CompleteSolutionLinks)
    app.add_transform(IndexEntries)
    app.connect("doctree-read", _record_result_names)
    app.connect("env-purge-doc", _purge, priority=400)  # before sphinx-proof forgets the page's results
    app.connect("env-merge-info", _merge)
    domain = app.registry.domains.get("prf")
    if domain is not None:  # sphinx-proof's domain, with this proof index instead of its own
        indices = [ProofIndex if getattr(i, "name", "") == "prf" else i for i in domain.indices]
        app.add_domain(type(domain.__name__, (domain,), {"indices": indices}), override=True)
    return {"version": "3", "parallel_read_safe": True, "parallel_write_safe": True}
