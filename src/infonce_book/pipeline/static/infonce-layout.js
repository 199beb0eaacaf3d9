// infonce-book: a long inline formula scrolls sideways instead of running past the text column on
// a narrow screen (see the screen section of infonce-book.css). MathJax 3 does not break lines, so
// after typesetting (and when the window is resized) each inline formula wider than its paragraph
// is marked `infonce-wide`; a formula that then scrolls (display or inline) is marked
// `infonce-scrolls`, which shades its right edge: a cue that the rest is a swipe away.
(() => {
  const mark = () => {
    document.querySelectorAll("main mjx-container:not([display='true'])").forEach((m) => {
      const box = m.parentElement && m.parentElement.closest("p, li, td, dd, div");
      if (!box) return;
      m.classList.remove("infonce-wide");
      if (m.getBoundingClientRect().width > box.clientWidth) m.classList.add("infonce-wide");
    });
    document.querySelectorAll("main mjx-container").forEach((m) => {
      const scrolls = getComputedStyle(m).overflowX === "auto" && m.scrollWidth > m.clientWidth + 4;
      m.classList.toggle("infonce-scrolls", scrolls);
    });
  };
  const start = () => {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(mark);
    else setTimeout(start, 100);
  };
  window.addEventListener("load", start);
  window.addEventListener("resize", () => { clearTimeout(mark.timer); mark.timer = setTimeout(mark, 200); });
})();
