// infonce-book: a long inline formula scrolls sideways instead of running past the text column on
// a narrow screen (see the screen section of infonce-book.css). MathJax 3 does not break lines, so
// after typesetting (and when the window is resized) each inline formula wider than its paragraph
// is marked `infonce-wide`; a formula that then scrolls (display or inline) is marked
// `infonce-scrolls`, which shades its right edge: a cue that the rest is a swipe away. A formula or
// a table that scrolls is a Tab stop (so that a keyboard can scroll it); no other formula is.
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
      if (scrolls) m.tabIndex = 0; else m.removeAttribute("tabindex");
    });
    // A table that scrolls sideways is reached with the keyboard too (it is a Tab stop then).
    document.querySelectorAll("main table").forEach((t) => {
      if (t.scrollWidth > t.clientWidth + 1) t.tabIndex = 0; else t.removeAttribute("tabindex");
    });
  };
  const start = () => {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(mark);
    else setTimeout(start, 100);
  };
  window.addEventListener("load", start);
  window.addEventListener("resize", () => { clearTimeout(mark.timer); mark.timer = setTimeout(mark, 200); });
})();
