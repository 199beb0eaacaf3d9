// infonce-book: two fixes to the theme's header buttons (see pipeline/sphinx_ext.py).
//
// 1. The menu (☰) and contents buttons on phones and tablets. A SHIM until the upstream fix lands:
//    pydata-sphinx-theme 0.17 (pinned by sphinx-book-theme 1.3, which jupyter-book 1.0.4 pulls; the
//    newer sphinx-book-theme 1.4 needs Sphinx 8.2, which jupyter-book 1.x forbids) binds its
//    handlers to the FIRST `.primary-toggle` / `.secondary-toggle` of the page, hidden buttons of
//    the top bar, so the visible ones in the article header do nothing: below 992 px neither the
//    menu nor the page's contents can be opened, and above it ☰ does not hide the sidebar
//    (pydata-sphinx-theme issue #2451, sphinx-book-theme PR #991). Each visible button passes its
//    click on to the bound one (which opens the dialog on a narrow screen and, through
//    sphinx-book-theme's own handler, hides or shows the sidebar on a wide one). Delete this part
//    when a fixed theme is installed: tests/pipeline/test_browser_nav.py taps the buttons.
// 2. The search buttons' accessible name is their visible text ("Search Ctrl+K").
// 3. The ".pdf" entry of the download menu prints the page (window.print()); the book has a PDF of
//    each chapter (`infonce-book pdf`, linked after the title): the entry opens it, and is removed
//    on a page without one.
(() => {
  const ready = (f) => (document.readyState === "loading" ? document.addEventListener("DOMContentLoaded", f) : f());
  ready(() => {
    for (const name of ["primary-toggle", "secondary-toggle"]) {
      const [bound, ...visible] = document.querySelectorAll(`.${name}`);
      for (const button of visible) {
        button.addEventListener("click", (event) => {
          event.preventDefault();
          event.stopPropagation();
          bound.click();
        });
      }
    }
    // The search buttons read "Search Ctrl+K" but were named "Search" for screen readers (a
    // label that hides the visible text, flagged by axe-core): their name is their text.
    document.querySelectorAll(".search-button__button[aria-label]").forEach((b) => b.removeAttribute("aria-label"));
    const pdf = document.querySelector("p.infonce-pdf a[href]");
    document.querySelectorAll(".btn-download-pdf-button").forEach((button) => {
      if (pdf) {
        button.onclick = () => { window.location.href = pdf.href; };
        button.title = pdf.textContent;
      } else {
        (button.closest("li") || button).remove();
      }
    });
  });
})();
