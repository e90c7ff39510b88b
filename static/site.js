// Progressive enhancements: theme toggle, copy buttons on code, "/" to focus search.
(function () {
  "use strict";
  var root = document.documentElement;

  function currentTheme() {
    var set = root.getAttribute("data-theme");
    if (set) return set;
    return window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }

  var toggle = document.querySelector(".theme-toggle");
  if (toggle) {
    var sync = function () {
      var dark = currentTheme() === "dark";
      toggle.setAttribute("aria-pressed", dark ? "true" : "false");
    };
    toggle.hidden = false;
    sync();
    toggle.addEventListener("click", function () {
      var next = currentTheme() === "dark" ? "light" : "dark";
      root.setAttribute("data-theme", next);
      try { localStorage.setItem("trainwreck-theme", next); } catch (e) { /* not persisted */ }
      sync();
    });
  }

  document.querySelectorAll("pre.code, pre.sig, pre.log").forEach(function (pre) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy to clipboard");
    button.addEventListener("click", function () {
      var text = pre.querySelector("code") ? pre.querySelector("code").textContent : pre.textContent;
      navigator.clipboard.writeText(text).then(function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy"; }, 1500);
      }, function () { button.textContent = "Press Ctrl+C"; });
    });
    var wrap = document.createElement("div");
    wrap.className = "copy-wrap";
    pre.parentNode.insertBefore(wrap, pre);
    wrap.appendChild(pre);
    wrap.appendChild(button);
  });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    var typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.isContentEditable);
    if (typing) return;
    if (event.key === "/" || ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "k")) {
      var input = document.querySelector("#search-q") || document.querySelector("#site-q");
      if (input) { event.preventDefault(); input.focus(); }
    }
  });
})();
