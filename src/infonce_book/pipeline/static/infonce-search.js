// infonce-book: the search results' summaries without raw TeX (see pipeline/sphinx_titles.py).
// Sphinx's search page shows a summary cut from the text of each found page, where inline math is
// still TeX ("\(O(1/k)\)"): each formula is turned into plain text first, with the same symbol
// table as the titles of the search index (window.INFONCE_TEX_SYMBOLS, set by the extension).
(() => {
  const symbols = window.INFONCE_TEX_SYMBOLS || {};
  const plain = (tex) => tex.trim()
    .replace(/^\\[(\[]|\\[)\]]$/g, "")
    .replace(/\\(?:mathrm|text|operatorname|mathbf|mathcal|mathit|mathbb|bar|hat|tilde)\s*\{([^{}]*)\}/g, "$1")
    .replace(/\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2)")
    .replace(/\\(?:left|right|[,;:!])/g, "")
    .replace(/\\([A-Za-z]+|.)/g, (m, name) => (name in symbols ? symbols[name] : name))
    .replace(/[{}]/g, "");
  const patch = () => {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.infonceTexPatched) return;
    const original = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => {
      const doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(".math").forEach((el) => { el.textContent = plain(el.textContent); });
      return original(doc.documentElement.outerHTML, anchor);
    };
    Search.infonceTexPatched = true;
  };
  patch();
  document.addEventListener("DOMContentLoaded", patch);
})();
