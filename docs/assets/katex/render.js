// The site's math, rendered in the page by the bundled KaTeX (docs/assets/katex, no CDN):
// pymdownx.arithmatex (generic) wraps each formula in an element of class "arithmatex",
// \( … \) inline and \[ … \] for a display block.
(function () {
  function render() {
    document.querySelectorAll(".arithmatex").forEach(function (el) {
      if (el.dataset.katexRendered) return;
      var tex = el.textContent.trim();
      var display = tex.startsWith("\\[");
      tex = tex.replace(/^\\[\[(]/, "").replace(/\\[\])]$/, "");
      katex.render(tex, el, { displayMode: display, throwOnError: false });
      el.dataset.katexRendered = "1";
    });
  }
  if (typeof document$ !== "undefined") {
    document$.subscribe(render);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", render);
  } else {
    render();
  }
})();
