// The /diagnose/ page: hands pasted text or chosen files to a worker and renders its report.
// Log text is only ever inserted with textContent, never as HTML.
import { reportMarkdown, where } from "./diagnose-core.js";

const app = document.getElementById("diagnose-app");
const status = document.getElementById("diagnose-status");
const progress = document.getElementById("diagnose-progress");
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

// Fix and verify lines carry `code` spans; show them as code, still without parsing any HTML.
function withCode(tag, label, text, className) {
  const node = el(tag, label, className);
  text.split("`").forEach((part, i) => node.append(i % 2 ? el("code", part) : document.createTextNode(part)));
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
  progress.hidden = false;
  progress.value = 0;
  worker.onmessage = (event) => {
    const data = event.data;
    if (data.type === "progress") {
      progress.value = Math.round((100 * data.done) / Math.max(data.total, 1));
    } else if (data.type === "report") {
      progress.value = 100;
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

app.hidden = false;
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
