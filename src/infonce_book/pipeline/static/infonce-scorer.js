// infonce-book: the search's ranking (Sphinx's html_search_scorer, set by pipeline/sphinx_ext.py).
// Sphinx scores a page whose title holds the query no higher than any page with a section title
// holding it, so "temperature" found Chapter 3 ("Temperature as a regulariser") third. A page
// whose own title holds every word of the query now comes first. The rest is Sphinx's default.
var Scorer = {
  score: (result) => {
    const [, title, anchor, , score] = result;
    const query = new URLSearchParams(window.location.search).get("q") || "";
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    const inTitle = words.length > 0 && words.every((w) => (title || "").toLowerCase().includes(w));
    return score + (inTitle && !anchor ? 30 : 0);
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
