// Applies the saved colour theme before first paint; the toggle itself lives in site.js.
(function () {
  try {
    var saved = localStorage.getItem("trainwreck-theme");
    if (saved === "dark" || saved === "light") document.documentElement.setAttribute("data-theme", saved);
  } catch (e) { /* storage may be disabled; the system preference still applies */ }
})();
