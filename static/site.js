// Progressive enhancements: theme toggle, phone menu, contents highlight, copy buttons, "/" to focus search.
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
      toggle.title = dark ? "Dark theme: on" : "Dark theme: off";
    };
    sync();
    // A reader who has not chosen follows the system, which can change while the page is open.
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", sync);
    toggle.addEventListener("click", function () {
      var next = currentTheme() === "dark" ? "light" : "dark";
      root.setAttribute("data-theme", next);
      try { localStorage.setItem("trainwreck-theme", next); } catch (e) { /* not persisted */ }
      sync();
    });
  }

  var header = document.querySelector(".top");
  var menu = document.querySelector(".menu-toggle");
  if (header && menu) {
    var setOpen = function (open) {
      header.classList.toggle("open", open);
      menu.setAttribute("aria-expanded", open ? "true" : "false");
    };
    menu.addEventListener("click", function () { setOpen(!header.classList.contains("open")); });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && header.classList.contains("open")) { setOpen(false); menu.focus(); }
    });
    document.addEventListener("click", function (event) {
      if (!header.contains(event.target)) setOpen(false);
    });
  }

  // The on-page contents mark the section being read.
  var tocLinks = document.querySelectorAll(".toc a[href^='#']");
  if (tocLinks.length && "IntersectionObserver" in window) {
    var byId = {};
    tocLinks.forEach(function (a) { byId[decodeURIComponent(a.hash.slice(1))] = a; });
    var visible = {};
    var observer = new IntersectionObserver(function (changes) {
      changes.forEach(function (c) { visible[c.target.id] = c.isIntersecting; });
      var current = null;
      document.querySelectorAll(".doc-body h2[id], .doc-body h3[id]").forEach(function (h) {
        if (current === null && visible[h.id] && byId[h.id]) current = h.id;
      });
      if (current === null) return;
      tocLinks.forEach(function (a) { a.classList.toggle("here", a === byId[current]); });
    }, { rootMargin: "0px 0px -60% 0px" });
    Object.keys(byId).forEach(function (id) {
      var h = document.getElementById(id);
      if (h) observer.observe(h);
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
