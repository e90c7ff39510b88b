// Faceted search over the Pagefind index: a text query plus category, system, severity and tag filters.
const FACETS = [["category", "Category"], ["system", "System"], ["severity", "Severity"], ["tag", "Tag"]];
const LIMIT = 30;

const app = document.getElementById("search-app");
const form = document.getElementById("search-form");
const input = document.getElementById("search-q");
const status = document.getElementById("search-status");
const list = document.getElementById("search-results");
const filterBox = document.getElementById("search-filters");
const chosen = {};
let generation = 0;

// Excerpts come from our own pages, escaped by Pagefind; keep only its <mark> highlighting.
function excerptNode(html) {
  const p = document.createElement("p");
  p.className = "excerpt";
  const parts = html.split(/(<mark>|<\/mark>)/);
  let mark = null;
  for (const part of parts) {
    if (part === "<mark>") { mark = document.createElement("mark"); continue; }
    if (part === "</mark>") { if (mark) p.appendChild(mark); mark = null; continue; }
    const text = document.createTextNode(part.replace(/<[^>]*>/g, "").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, "\"").replace(/&#39;/g, "'").replace(/&amp;/g, "&"));
    (mark || p).appendChild(text);
  }
  return p;
}

function buildFilters(available) {
  for (const [key, label] of FACETS) {
    const values = available[key];
    if (!values || Object.keys(values).length === 0) continue;
    const fieldset = document.createElement("fieldset");
    const legend = document.createElement("legend");
    legend.textContent = label;
    fieldset.appendChild(legend);
    for (const value of Object.keys(values).sort()) {
      const id = `f-${key}-${value}`.replace(/[^A-Za-z0-9_-]/g, "_");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.id = id;
      box.value = value;
      box.addEventListener("change", () => {
        const set = new Set(chosen[key] || []);
        if (box.checked) set.add(value); else set.delete(value);
        if (set.size) chosen[key] = [...set]; else delete chosen[key];
        run();
      });
      const labelEl = document.createElement("label");
      labelEl.htmlFor = id;
      labelEl.textContent = `${value} (${values[value]})`;
      const row = document.createElement("div");
      row.className = "filter-option";
      row.append(box, labelEl);
      fieldset.appendChild(row);
    }
    filterBox.appendChild(fieldset);
  }
}

async function run() {
  const query = input.value.trim();
  const mine = ++generation;
  const url = new URL(window.location.href);
  if (query) url.searchParams.set("q", query); else url.searchParams.delete("q");
  history.replaceState(null, "", url);
  const filters = {};
  for (const [key, values] of Object.entries(chosen)) filters[key] = { any: values };
  if (!query && Object.keys(filters).length === 0) {
    list.replaceChildren();
    status.textContent = "Type an error message, or pick a filter.";
    return;
  }
  const search = await pagefind.search(query || null, { filters });
  if (mine !== generation || !search) return;
  const data = await Promise.all(search.results.slice(0, LIMIT).map((r) => r.data()));
  if (mine !== generation) return;
  const items = data.map((d) => {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = d.url;
    a.textContent = (d.meta && d.meta.title) || d.url;
    const h = document.createElement("h2");
    h.appendChild(a);
    li.append(h, excerptNode(d.excerpt || ""));
    return li;
  });
  list.replaceChildren(...items);
  const n = search.results.length;
  status.textContent = `${n} ${n === 1 ? "result" : "results"}${query ? ` for “${query}”` : ""}`;
}

// A large site's index comes in shards: the first bundle lists the others, which are merged into it.
const [pagefind, shards] = await Promise.all([
  import(`${app.dataset.bundle}pagefind.js`),
  fetch(`${app.dataset.bundle}shards.json`).then((r) => (r.ok ? r.json() : [])).catch(() => []),
]);
await pagefind.options({ excerptLength: 24, baseUrl: app.dataset.base });
await pagefind.init();
// All at once: each is two requests before the first search, which one after another add up on a slow link.
// Pagefind adds each index to its list when asked, so the order of the list stays the order of shards.json.
const bundle = new URL(app.dataset.bundle, location.href);
await Promise.all(shards.map((shard) => pagefind.mergeIndex(new URL(shard, bundle).pathname)));
// Filters start open on a wide screen, beside the results; on a phone they would push the results
// down as they fill in, so there they start closed.
if (window.matchMedia("(max-width: 48rem)").matches) app.querySelector(".filter-box").open = false;
form.addEventListener("submit", (event) => { event.preventDefault(); run(); });
input.addEventListener("input", () => { run(); });
const initial = new URLSearchParams(window.location.search).get("q");
if (initial) input.value = initial;
// The first results come before the filters: a search reads one word chunk a shard, the filters four
// files a shard, and a page's requests queue behind each other on a slow link.
await run();
buildFilters(await pagefind.filters());
