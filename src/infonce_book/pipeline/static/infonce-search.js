// infonce-book: the search results' summaries without raw TeX and without code (see
// pipeline/sphinx_ext.py). Sphinx's search page cuts a summary from the text of each found
// page, where inline math is still TeX ("\(O(1/k)\)") and code cells are text like any other.
// Before it does, displayed formulas, code cells and code blocks are left out, and each inline
// formula becomes plain text with the symbol table of the search index's titles
// (window.INFONCE_TEX_SYMBOLS, set by the extension): "\mathbb E" -> "𝔼", "\mathcal X" -> "𝒳",
// "\sqrt{2P\log n}" -> "√(2P log n)".
(() => {
  const symbols = window.INFONCE_TEX_SYMBOLS || {};
  const letters = (offset, special) => (c) =>
    special[c] || (/^[A-Z]$/.test(c) ? String.fromCodePoint(offset + c.charCodeAt(0) - 65) : c);
  const fonts = {
    mathbb: letters(0x1d538, { C: "ℂ", H: "ℍ", N: "ℕ", P: "ℙ", Q: "ℚ", R: "ℝ", Z: "ℤ" }),
    mathcal: letters(0x1d49c, { B: "ℬ", E: "ℰ", F: "ℱ", H: "ℋ", I: "ℐ", L: "ℒ", M: "ℳ", R: "ℛ" }),
  };
  const arg = String.raw`\s*(\{[^{}]*\}|\\?[A-Za-z0-9])`;
  const inner = (a) => a.replace(/^\{|\}$/g, "");
  const plain = (tex) => tex.trim()
    .replace(/^\\[(\[]|\\[)\]]$/g, "")
    .replace(new RegExp(String.raw`\\(mathbb|mathcal)` + arg, "g"), (m, f, a) => [...inner(a)].map(fonts[f]).join(""))
    .replace(new RegExp(String.raw`\\(?:math[a-z]*|text[a-z]*|operatorname\*?|boldsymbol|bm|bar|hat|tilde|widehat|widetilde|overline|vec)` + arg, "g"),
             (m, a) => inner(a))
    .replace(/\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2)")
    .replace(new RegExp(String.raw`\\sqrt` + arg, "g"), (m, a) => `√(${inner(a)})`)
    .replace(/\\(?:left|right|big|Big|bigg|Bigg)\b|\\[,;:!]/g, "")
    .replace(/\\([A-Za-z]+|.)/g, (m, name) => {
      const text = name in symbols ? symbols[name] : name;
      return /^[A-Za-z]{2,}$/.test(text) ? ` ${text} ` : text;  // "\log n" -> " log n", "\tau" -> "τ"
    })
    .replace(/[{}]/g, "")
    .replace(/\s+/g, " ").trim();
  const patch = () => {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.infonceTexPatched) return;
    const original = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => {
      const doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll("div.math, .cell_input, div.highlight, pre, .cell_output, script, style")
        .forEach((el) => el.remove());
      doc.querySelectorAll(".math").forEach((el) => { el.textContent = plain(el.textContent); });
      return original(doc.documentElement.outerHTML, anchor);
    };
    Search.infonceTexPatched = true;
  };
  patch();
  document.addEventListener("DOMContentLoaded", patch);
})();
