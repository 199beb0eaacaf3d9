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
* **Every screen** (issue 34): the theme's menu and contents buttons work on phones and tablets (a
  shim, ``infonce-theme.js``, until pydata-sphinx-theme #2451 is fixed), and its ".pdf" button
  opens the chapter's PDF; images keep their aspect (``infonce-book.css``); a favicon and a meta
  description on every page (its first paragraph, math as text).
* **A lighter page**: ``templates/layout.html`` drops the theme's fontawesome.js (1.5 MB) and the
  render-blocking search index from every page but the search page; the icon font is cut down to
  the icons the pages show (:func:`subset_icon_fonts`); images load lazily, out of view.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes

from .sphinx_index import plain_text, setup_index
from .sphinx_solutions import CompleteSolutionLinks
from .sphinx_titles import setup_titles

STATIC = Path(__file__).resolve().parent / "static"
TEMPLATES = Path(__file__).resolve().parent / "templates"

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


def _add_templates(app, config) -> None:
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
    fonts = out / "_static" / "vendor" / "fontawesome" / "webfonts"
    for style, source in (("solid", "fa-solid-900.ttf"), ("regular", "fa-regular-400.ttf")):  # (woff2: brotli)
        options = subset.Options(flavor="woff", layout_features=["*"])
        font = subset.load_font(str(fonts / source), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=codes)
        subsetter.subset(font)
        subset.save_font(font, str(out / "_static" / f"infonce-fa-{style}.woff"), options)


def optimise_pngs(app, exception, max_rms: float = 1.5) -> None:
    """Shrink the built figures (``_images/*.png``): an opaque PNG is stored with a palette of 256
    colours when that changes it by at most ``max_rms`` (root mean square, of 255) and is smaller,
    otherwise recompressed losslessly; a figure with transparency is only recompressed. Matplotlib's
    figures have few colours: their PNGs shrink about fourfold, invisibly."""
    if exception is not None or app.builder.format != "html":
        return
    import io  # the HTML build's figure pass only (below: numpy and Pillow, heavy)

    import numpy as np  # heavy: the HTML build's figure pass only
    from PIL import Image, PngImagePlugin  # heavy: the HTML build's figure pass only

    for path in (Path(app.outdir) / "_images").glob("*.png"):
        with Image.open(path) as image:
            image.load()
        text = PngImagePlugin.PngInfo()  # keep the figure's text chunks (its dpi and smallest font)
        for key, value in image.info.items():
            if isinstance(value, str):
                text.add_text(key, value)
        if image.mode == "RGBA" and image.getextrema()[3][0] == 255:
            image = image.convert("RGB")
        candidates = [image]
        if image.mode == "RGB":
            palette = image.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
            error = np.asarray(palette.convert("RGB"), float) - np.asarray(image, float)
            if np.sqrt(np.mean(error ** 2)) <= max_rms:
                candidates.append(palette)
        best = min((_png_bytes(c, io, text) for c in candidates), key=len)
        if len(best) < path.stat().st_size:
            path.write_bytes(best)


def _png_bytes(image, io, text=None) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG", optimize=True, pnginfo=text, dpi=image.info.get("dpi", (72, 72)))
    return buffer.getvalue()


def setup(app):
    app.set_html_assets_policy("always")
    app.connect("html-page-context", _dedupe_inline_scripts, priority=900)
    app.connect("html-page-context", _page_extras)
    app.connect("html-page-context", _drop_unused_design, priority=950)
    app.connect("config-inited", _add_templates)
    app.connect("builder-inited", _add_static)
    app.connect("build-finished", subset_icon_fonts)
    app.connect("build-finished", optimise_pngs)
    app.connect("doctree-resolved", add_labels)
    app.add_css_file("infonce-book.css")
    app.add_js_file("infonce-layout.js", priority=900)  # long inline formulas scroll on a phone
    app.add_js_file("infonce-theme.js", priority=900)  # the theme's sidebar buttons and ".pdf" button
    setup_titles(app)
    app.add_post_transform(CompleteSolutionLinks)
    setup_index(app)
    return {"version": "3", "parallel_read_safe": True, "parallel_write_safe": True}
