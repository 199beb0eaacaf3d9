// infonce-book: a long inline formula scrolls sideways instead of running past the text column on
// a narrow screen (see the screen section of infonce-book.css). MathJax 3 does not break lines, so
// after typesetting (and when the window is resized) each inline formula wider than its paragraph
// is marked `infonce-wide`.
(() => {
  const mark = () => {
    document.querySelectorAll("main mjx-container:not([display='true'])").forEach((m) => {
      const box = m.parentElement && m.parentElement.closest("p, li, td, dd, div");
      if (!box) return;
      m.classList.remove("infonce-wide");
      if (m.getBoundingClientRect().width > box.clientWidth) m.classList.add("infonce-wide");
    });
  };
  const start = () => {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(mark);
    else setTimeout(start, 100);
  };
  window.addEventListener("load", start);
  window.addEventListener("resize", () => { clearTimeout(mark.timer); mark.timer = setTimeout(mark, 200); });
})();
