// Runs before first paint: marks the page as scripted (so controls that need JavaScript take their
// space from the start and nothing shifts) and applies the saved colour theme. The toggle is in site.js.
(function () {
  var root = document.documentElement;
  root.classList.add("js");
  try {
    var saved = localStorage.getItem("trainwreck-theme");
    if (saved === "dark" || saved === "light") root.setAttribute("data-theme", saved);
  } catch (e) { /* storage may be disabled; the system preference still applies */ }
})();
