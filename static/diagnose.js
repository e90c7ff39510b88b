// The /diagnose/ page: hands pasted text or chosen files to a worker and renders its report.
// Log text is only ever inserted with textContent, never as HTML.
import { reportMarkdown, timelineSvg, where } from "./diagnose-core.js";

const app = document.getElementById("diagnose-app");
const status = document.getElementById("diagnose-status");
const progress = document.getElementById("diagnose-progress");
const progressText = document.getElementById("diagnose-progress-text");
const result = document.getElementById("diagnosis-result");
const json = document.getElementById("diagnosis-json");
const ROLE = { initiating: "Initiating failure", independent: "Also found", wrapper: "Wrapper", collateral: "Collateral", note: "Note" };
const VIA = { line: "", frames: " (from traceback frames)", metric: " (from metric lines)" };

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  if (className) node.className = className;
  return node;
}

// A long token (a variable with its value, a module path) may wrap after its joints, never mid-word:
// the same rule as the site's pages (markup.py `breakable`).
function appendBreakable(node, text) {
  for (const piece of text.split(/(\S{16,})/)) {
    const parts = /^\S{16,}$/.test(piece) ? piece.split(/(?<=\S[./_:,=|]+)(?=[^\s./_:,=|])/) : [piece];
    parts.forEach((part, i) => {
      if (i) node.append(document.createElement("wbr"));
      if (part) node.append(part);
    });
  }
}

// Fix and verify lines carry `code` spans; show them as code, still without parsing any HTML.
function withCode(tag, label, text, className) {
  const node = el(tag, label, className);
  text.split("`").forEach((part, i) => {
    const target = i % 2 ? node.appendChild(el("code")) : node;
    appendBreakable(target, part);
  });
  return node;
}

function renderFinding(f) {
  const item = el("li", null, `finding role-${f.role}`);
  item.dataset.entry = f.entry;
  item.dataset.role = f.role;
  const heading = el("h3");
  heading.append(el("span", ROLE[f.role], "role"), " ");
  const link = el("a", f.title);
  link.href = f.url.replace(/^https?:\/\/[^/]+/, "");
  heading.append(link);
  item.append(heading);
  const ranks = f.ranks.length ? `ranks ${f.ranks.join(", ")}` : "rank unknown";
  item.append(el("p", `${f.severity} severity · ${f.confidence} confidence · ${f.count} matching line${f.count === 1 ? "" : "s"}${VIA[f.first.via]} · ${ranks} · first at ${where(f.first)}`, "meta"));
  const pre = el("pre", null, "log");
  pre.tabIndex = 0;
  pre.append(el("code", f.evidence.map((e) => `${where(e)}: ${e.text}`).join("\n")));
  item.append(pre);
  if (f.role === "initiating" || f.role === "independent") {
    item.append(withCode("p", "Fix: ", f.fix, "fix"), withCode("p", "Verify: ", f.verify, "verify"));
  }
  return item;
}

function render(report, problems) {
  result.replaceChildren();
  const on = [report.initiating_rank !== null ? `rank ${report.initiating_rank}` : null, report.initiating_host].filter(Boolean);
  const summary = el("h2", report.initiating
    ? `Most likely cause${on.length ? ` on ${on.join(", ")}` : ""}: ${report.initiating.title}`
    : report.findings.every((f) => f.role === "note") ? (report.findings.length ? "No known failure found; the lines below are usually harmless or only leads." : "No known failure found.")
    : on.length ? `Failed first at ${on.join(", ")}; the error that started it is not in the logs, what they show is below.`
    : "No initiating failure found; what the logs show is below.");
  result.append(summary);
  result.append(el("p", `Scanned ${report.inputs.length} log(s), ${report.lines.toLocaleString("en")} lines.`));
  if (problems.length) {
    const list = el("ul", null, "problems");
    problems.forEach((p) => list.append(el("li", p)));
    result.append(list);
  }
  const timeline = renderTimeline(report);
  if (timeline) result.append(timeline);
  const findings = el("ol", null, "findings");
  report.findings.forEach((f) => findings.append(renderFinding(f)));
  result.append(findings);
  if (report.unknown.length) {
    result.append(el("h2", "Exceptions no entry covers yet"));
    const list = el("ul", null, "unknown");
    for (const u of report.unknown) {
      const item = el("li");
      item.append(el("p", `${u.exception}${u.package ? ` raised in ${u.package}` : ""}, at ${where(u.evidence)}`));
      const pre = el("pre", null, "log");
      pre.tabIndex = 0;
      pre.append(el("code", [u.message ? `${u.exception}: ${u.message}` : u.exception, ...u.frames.map((f) => `  in ${f}`)].join("\n")));
      item.append(pre);
      const command = el("p", "Scaffold an entry from it: ");
      command.append(el("code", u.command));
      item.append(command);
      list.append(item);
    }
    result.append(list);
  }
  if (report.suspects.length) {
    result.append(el("p", `Suspect rank${report.suspects.length > 1 ? "s" : ""}: ${report.suspects.join(", ")}`, "suspects"));
  }
  if (report.missing.length) {
    result.append(el("h2", "What would settle it"));
    const list = el("ul", null, "missing");
    report.missing.forEach((m) => list.append(el("li", m)));
    result.append(list);
  }
  result.append(copyMarkdown(report));
  json.textContent = JSON.stringify({ report, problems });
  result.hidden = false;
}

// The rank timeline, as `trainwreck diagnose --html` draws it. The engine writes the SVG text with every
// string from the logs escaped and no script in it; it is parsed as XML, never as HTML.
function renderTimeline(report) {
  const svg = timelineSvg(report);
  if (svg === null) return null;
  const parsed = new DOMParser().parseFromString(svg, "image/svg+xml").documentElement;
  if (parsed.localName !== "svg") return null;
  const figure = el("figure", null, "timeline-figure");
  figure.append(document.importNode(parsed, true));
  return figure;
}

// MB read per second, as "180 MB/s" (or "4.5 MB/s"); null before there is a rate worth showing.
function speed(done, seconds) {
  const rate = seconds > 0 ? done / 1e6 / seconds : 0;
  if (!(rate >= 0.1)) return null;
  return `${rate >= 10 ? String(Math.round(rate)) : rate.toFixed(1)} MB/s`;
}

// "41 % · 180 MB/s · about 3 s left": how far the scan is, how fast it reads, when it should be done.
function progressLine(done, total, seconds) {
  const percent = Math.floor((100 * done) / Math.max(total, 1));
  const rate = speed(done, seconds);
  if (rate === null) return `${percent} %`;
  const left = (total - done) / done * seconds;
  const eta = done >= total ? "finishing" : left < 1 ? "under a second left" : left < 90 ? `about ${Math.round(left)} s left` : `about ${Math.round(left / 60)} min left`;
  return `${percent} % · ${rate} · ${eta}`;
}

// The live region is read aloud: its text changes at most this often.
const PROGRESS_EVERY_MS = 250;

// "Copy as Markdown": the report as `trainwreck diagnose --markdown` prints it, for an issue thread.
function copyMarkdown(report) {
  const box = el("div", null, "copy-report");
  const button = el("button", "Copy as Markdown");
  button.type = "button";
  const note = el("span", "", "copy-note");
  note.setAttribute("role", "status");
  button.addEventListener("click", () => {
    const text = reportMarkdown(report);
    navigator.clipboard.writeText(text).then(
      () => { note.textContent = "Copied: paste it into the issue."; },
      () => {
        // No clipboard access: show the text selected, ready for Ctrl+C.
        const area = el("textarea", text, "markdown-report");
        area.readOnly = true;
        area.rows = 12;
        area.setAttribute("aria-label", "The report as Markdown");
        box.append(area);
        area.select();
        note.textContent = "Press Ctrl+C to copy.";
      },
    );
  });
  box.append(button, " ", note);
  return box;
}

function run(message) {
  const worker = new Worker(app.dataset.worker, { type: "module" });
  status.textContent = "Scanning…";
  progress.classList.remove("idle");
  progress.value = 0;
  progressText.textContent = "";
  let said = -Infinity;
  let last = null;
  worker.onmessage = (event) => {
    const data = event.data;
    if (data.type === "progress") {
      progress.value = Math.round((100 * data.done) / Math.max(data.total, 1));
      last = data;
      const now = performance.now();
      if (now - said >= PROGRESS_EVERY_MS) {
        said = now;
        progressText.textContent = progressLine(data.done, data.total, data.seconds);
      }
    } else if (data.type === "report") {
      progress.value = 100;
      if (last) {
        const rate = speed(last.done, last.seconds);
        progressText.textContent = `100 % · ${rate ? `${rate} · ` : ""}done in ${last.seconds.toFixed(1)} s`;
      }
      status.textContent = `Done: ${data.report.findings.length} finding(s).`;
      render(data.report, data.problems);
      worker.terminate();
    } else {
      status.textContent = `Error: ${data.message}`;
      worker.terminate();
    }
  };
  worker.postMessage({ indexUrl: app.dataset.index, ...message });
}

document.getElementById("paste-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = document.getElementById("log-text").value;
  if (text.trim()) run({ text, files: [] });
});
document.getElementById("log-files").addEventListener("change", (event) => {
  const files = [...event.target.files];
  if (files.length) run({ files });
});
// "Try a real log": fetch an example's files from this site and scan them like chosen files.
document.querySelectorAll("button.try").forEach((button) => {
  button.addEventListener("click", async () => {
    const urls = button.dataset.files.split(" ");
    status.textContent = "Loading the example…";
    try {
      const files = await Promise.all(urls.map(async (url) => {
        const response = await fetch(url);
        if (!response.ok) throw new Error(`${url}: ${response.status}`);
        return new File([await response.blob()], url.split("/").pop());
      }));
      run({ files });
    } catch (error) {
      status.textContent = `Error: could not load the example (${error.message})`;
    }
  });
});
const zone = document.getElementById("drop-zone");
zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
zone.addEventListener("dragleave", () => zone.classList.remove("over"));
zone.addEventListener("drop", (event) => {
  event.preventDefault();
  zone.classList.remove("over");
  const files = [...event.dataTransfer.files];
  if (files.length) run({ files });
});
