"""A small Sphinx extension for the rendered book (listed in ``_config.yml`` ``extra_extensions``).

Fixes two things a reader's browser shows (tests/pipeline/test_browser.py found both):

* MathJax on every page. Sphinx loads MathJax only on pages whose own text has math, but the
  navigation sidebar of every page shows chapter titles with math ("The limit and its $O(1/k)$
  rate"): on the pages without math of their own (references, index, search, back matter) those
  titles stayed raw TeX. The HTML assets policy ``always`` loads MathJax (vendored, no CDN)
  everywhere.
* Duplicate inline scripts. sphinx-thebe's configuration script is added twice, and the second
  copy fails with "Identifier 'THEBE_JS_URL' has already been declared" in every page's console;
  identical inline scripts are kept once.
"""

from __future__ import annotations


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


def setup(app):
    app.set_html_assets_policy("always")
    app.connect("html-page-context", _dedupe_inline_scripts, priority=900)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
