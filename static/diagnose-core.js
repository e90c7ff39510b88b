// The diagnosis engine for the browser: the same rules as generator/diagnose/*.py, in the same order.
// The shared test vectors under tests/vectors/ run through both, so the two cannot drift apart.

export const REPORT_VERSION = 1;
const EVIDENCE_LINES = 5;
const TEXT_LIMIT = 400;
const SEVERITY_RANK = { critical: 3, high: 2, medium: 1, low: 0 };

const ANSI = /\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07/g;
const RANK_MARKERS = [
  /\[(?:rank|default)(\d+)\]:/g,
  /\[\d+,(\d+)\]<std(?:out|err)>:/g,
  /\((?:VllmWorker|Worker)[\w-]* rank=(\d+)[^)]*\)/g,
  /\[Rank (\d+)\]/g,
  /\(EngineCore_DP(\d+) pid=\d+\)/g,
];
const SLURM_PREFIX = /^\s*(\d{1,6}): /;
const PDSH_PREFIX = /^([A-Za-z][\w-]*\d[\w.-]*): /;
const NCCL_HEADER = /(?:^|[\s:>\]])([A-Za-z][\w.-]*):(\d+):(\d+) \[(\d+)\] (?:\S+:\d+ )?NCCL /;
const SYSLOG = /^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT[\d:.+-]+) ([A-Za-z][\w.-]*) \w[\w./-]*(?:\[\d+\])?: /;
const MONTHS = { Jan: 1, Feb: 2, Mar: 3, Apr: 4, May: 5, Jun: 6, Jul: 7, Aug: 8, Sep: 9, Oct: 10, Nov: 11, Dec: 12 };
const ISO = /(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?/;
const GLOG = /[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,9})/;
const VLLM = /(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)/;
const CTIME = /\[?[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\]?/;
const SYSLOG_TIME = /^([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) /;
const DMESG = /^\[\s*(\d+\.\d+)\]/;
const FILE_RANK = /(?:^|[^a-z])(?:rank|proc|worker)[-_.]?(\d+)/i;
const FILE_HOST = /^([A-Za-z][A-Za-z-]*\d+)(?:[._-]|$)/;

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

export function parseIndex(text) {
  const signatures = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const r = JSON.parse(line);
    if (r.schema_version !== 1) throw new Error(`index schema_version ${r.schema_version} is not supported`);
    const source = r.kind === "literal" ? escapeRegExp(r.pattern) : r.pattern;
    signatures.push({ ...r, source, regex: new RegExp(source), specificity: specificity(r) });
  }
  return signatures;
}

function specificity(r) {
  return r.kind === "regex" ? r.pattern.replace(/\\.|[\[\](){}*+?|^$]/g, "").length : r.pattern.length;
}

function frac(digits) {
  return parseInt((digits || "0").padEnd(6, "0").slice(0, 6), 10);
}

function timeOf(line) {
  let m;
  if ((m = ISO.exec(line))) return [m[0], [+m[2], +m[3], +m[4], +m[5], +m[6], frac(m[7])], "wall"];
  if ((m = GLOG.exec(line))) return [m[0].slice(1), [+m[1], +m[2], +m[3], +m[4], +m[5], frac(m[6])], "wall"];
  if ((m = VLLM.exec(line))) return [m[0].split(" ").slice(1).join(" "), [+m[1], +m[2], +m[3], +m[4], +m[5], 0], "wall"];
  if ((m = CTIME.exec(line)) && MONTHS[m[1]]) return [m[0].replace(/^\[|\]$/g, ""), [MONTHS[m[1]], +m[2], +m[3], +m[4], +m[5], 0], "wall"];
  if ((m = SYSLOG_TIME.exec(line)) && MONTHS[m[1]]) return [m[0].trim(), [MONTHS[m[1]], +m[2], +m[3], +m[4], +m[5], 0], "wall"];
  if ((m = DMESG.exec(line))) return [m[1], [Math.trunc(parseFloat(m[1]) * 1000000)], "boot"];
  return [null, null, null];
}

export function fileOrigin(name) {
  const stem = name.split("/").pop();
  const rank = FILE_RANK.exec(stem);
  const host = FILE_HOST.exec(stem);
  return [rank ? parseInt(rank[1], 10) : null, host && !rank ? host[1] : null];
}

export function origin(line, at, defaultRank, defaultHost) {
  let rank = null;
  let best = -1;
  for (const marker of RANK_MARKERS) {
    marker.lastIndex = 0;
    let m;
    while ((m = marker.exec(line)) && m.index <= at) {
      if (m.index > best) { best = m.index; rank = parseInt(m[1], 10); }
    }
  }
  let host = null;
  let m;
  if ((m = NCCL_HEADER.exec(line))) host = m[1];
  else if ((m = SYSLOG.exec(line))) host = m[1];
  if (rank === null && (m = SLURM_PREFIX.exec(line))) rank = parseInt(m[1], 10);
  if (host === null && (m = PDSH_PREFIX.exec(line)) && !/^rank/i.test(m[1])) host = m[1];
  const [time, order, clock] = timeOf(line);
  return { rank: rank !== null ? rank : defaultRank, host: host || defaultHost, time, order, clock };
}

export function visible(line, at) {
  const start = line.lastIndexOf("\r", at - 1) + 1;
  const end = line.indexOf("\r", at);
  return end === -1 ? line.slice(start) : line.slice(start, end);
}

export function normalise(text) {
  return text.includes("\x1b") ? text.replace(ANSI, "") : text;
}

// The pattern, and for patterns with a double quote also its JSON-escaped form.
function quoteVariants(source) {
  return source.includes('"') ? [source, source.split('"').join('\\\\"')] : [source];
}

// Scans line-aligned chunks of text; keeps only bounded per-entry groups.
export class Scanner {
  constructor(signatures) {
    this.signatures = signatures;
    const pieces = [...new Set(signatures.flatMap((s) => quoteVariants(s.required ? escapeRegExp(s.required) : s.source)))];
    this.prefilter = new RegExp(pieces.join("|"), "g");
    this.groups = new Map();
    this.inputs = [];
    this.lines = 0;
    this.bytes = 0;
    this.clocks = new Set();
    this.logRanks = new Map();
  }

  // Scan one file's text chunk (complete lines only); `base` is the count of lines before it.
  scanChunk(raw, file, fileIndex, base, defaultRank, defaultHost) {
    const text = normalise(raw);
    const rx = this.prefilter;
    rx.lastIndex = 0;
    let m;
    let lineStart = 0;
    let lineNumber = base + 1;
    while ((m = rx.exec(text))) {
      const start = text.lastIndexOf("\n", m.index - 1) + 1;
      for (let i = lineStart; i < start; i++) if (text.charCodeAt(i) === 10) lineNumber++;
      lineStart = start;
      let stop = text.indexOf("\n", m.index);
      if (stop === -1) stop = text.length;
      let line = text.slice(start, stop);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      const escaped = line.includes('\\"');
      const unescaped = escaped ? line.split('\\"').join('"') : line;
      this.signatures.forEach((sig) => {
        let hit = sig.regex.exec(line);
        if (hit) {
          this.add(sig, line, hit.index, file, fileIndex, lineNumber, defaultRank, defaultHost);
        } else if (escaped && (hit = sig.regex.exec(unescaped))) {
          // A line logged inside a JSON string: match it as it was printed.
          this.add(sig, unescaped, hit.index, file, fileIndex, lineNumber, defaultRank, defaultHost);
        }
      });
      rx.lastIndex = stop;
    }
    let newlines = 0;
    for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) newlines++;
    return newlines;
  }

  add(sig, line, at, file, fileIndex, lineNumber, defaultRank, defaultHost) {
    let g = this.groups.get(sig.entry);
    if (g && g.lastFile === fileIndex && g.lastLine === lineNumber) {
      // Two signatures of one entry on one line: one line of evidence, the more specific pattern.
      if (sig.specificity > g.signature.specificity) g.signature = sig;
      return;
    }
    const where = origin(line, at, defaultRank, defaultHost);
    const evidence = {
      file, line: lineNumber, rank: where.rank, host: where.host, time: where.time,
      text: visible(line, at).slice(0, TEXT_LIMIT), signature: sig.id,
    };
    if (!g) {
      g = { signature: sig, entry: sig.entry, count: 0, ranks: new Set(), hosts: new Set(), evidence: [], first: null, firstKey: null };
      this.groups.set(sig.entry, g);
    } else if (sig.specificity > g.signature.specificity) {
      g.signature = sig;
    }
    g.lastFile = fileIndex;
    g.lastLine = lineNumber;
    g.count++;
    if (where.rank !== null) g.ranks.add(where.rank);
    if (where.host) g.hosts.add(where.host);
    if (g.evidence.length < EVIDENCE_LINES) g.evidence.push(evidence);
    if (where.clock) this.clocks.add(where.clock);
    const key = where.order && where.clock === "wall" ? [0, where.order, fileIndex, lineNumber] : [1, [], fileIndex, lineNumber];
    if (g.first === null || compareKeys(key, g.firstKey) < 0) { g.first = evidence; g.firstKey = key; }
  }
}

function compareLists(a, b) {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return a.length - b.length;
}

function compareKeys(a, b) {
  if (a[0] !== b[0]) return a[0] - b[0];
  const c = compareLists(a[1], b[1]);
  if (c) return c;
  if (a[2] !== b[2]) return a[2] - b[2];
  return a[3] - b[3];
}

function confidence(sig) {
  if (sig.search_key || sig.severity === "low") return "low";
  return sig.severity === "high" || sig.severity === "critical" ? "high" : "medium";
}

export function buildReport(scanner) {
  let groups = [...scanner.groups.values()];
  const shadowed = new Set();
  for (const g of groups) {
    for (const o of g.signature.overlaps) {
      const other = scanner.groups.get(o);
      if (other && g.signature.specificity > other.signature.specificity && g.count >= other.count) shadowed.add(o);
    }
  }
  groups = groups.filter((g) => !shadowed.has(g.entry));
  const origins = groups.filter((g) => confidence(g.signature) !== "low" && !g.signature.collateral);
  let initiating = null;
  for (const g of origins) if (initiating === null || compareKeys(g.firstKey, initiating.firstKey) < 0) initiating = g;
  const role = (g) => {
    if (confidence(g.signature) === "low") return "note";
    if (g === initiating) return "initiating";
    return g.signature.collateral ? "collateral" : "independent";
  };
  const order = { initiating: 0, independent: 1, collateral: 2, note: 3 };
  groups.sort((a, b) => order[role(a)] - order[role(b)]
    || SEVERITY_RANK[b.signature.severity] - SEVERITY_RANK[a.signature.severity]
    || compareKeys(a.firstKey, b.firstKey));
  const findings = groups.map((g) => ({
    entry: g.entry, title: g.signature.title, url: g.signature.url, severity: g.signature.severity,
    confidence: confidence(g.signature), role: role(g), count: g.count,
    ranks: [...g.ranks].sort((x, y) => x - y), hosts: [...g.hosts].sort(),
    first: g.first, evidence: g.evidence, fix: g.signature.fix, verify: g.signature.verify,
  }));
  const first = findings.length && findings[0].role === "initiating" ? findings[0] : null;
  const suspects = suspectRanks(scanner, findings);
  return {
    schema_version: REPORT_VERSION, inputs: scanner.inputs, lines: scanner.lines, bytes: scanner.bytes,
    initiating: first, initiating_rank: first ? first.first.rank : null,
    initiating_host: first ? first.first.host : null, suspects, findings,
    missing: missing(scanner, findings, first, suspects),
  };
}

function suspectRanks(scanner, findings) {
  const reporting = new Set(findings.filter((f) => f.role === "collateral").flatMap((f) => f.ranks));
  if (!reporting.size || scanner.logRanks.size < 2) return [];
  return [...new Set([...scanner.logRanks.values()].filter((r) => !reporting.has(r)))].sort((a, b) => a - b);
}

function missing(scanner, findings, initiating, suspects) {
  const out = [];
  const confident = findings.filter((f) => f.role !== "note");
  const ranks = [...new Set(confident.flatMap((f) => f.ranks))].sort((a, b) => a - b);
  if (suspects.length && initiating === null) {
    const names = suspects.join(", ");
    const noun = suspects.length === 1 ? "Rank" : "Ranks";
    out.push(`${noun} ${names} printed none of the downstream errors that the other ranks printed, so the `
      + `collectives were most likely waiting for ${noun.toLowerCase()} ${names}. Read the end of that log and `
      + "the kernel log (dmesg -T) of its node: an OOM kill, an Xid or a Python traceback there is the origin.");
  } else if (confident.length && initiating === null) {
    const titles = confident.slice(0, 3).map((f) => f.title).join("; ");
    if (ranks.length <= 1 && scanner.inputs.length === 1) {
      const who = ranks.length ? `rank ${ranks[0]}'s log` : "one log";
      out.push(`Only ${who} was given, and what it shows is usually collateral (${titles}). Add the other `
        + "ranks' logs and each node's kernel log (dmesg -T), or rerun with TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
        + "and TORCH_NCCL_TRACE_BUFFER_SIZE=2000 so the flight recorder names the rank that stopped first.");
    } else {
      const seen = ranks.length ? ranks.join(", ") : "none named";
      out.push(`Every finding is usually a downstream report (${titles}); the failure that started it is not in `
        + `these logs (ranks seen: ${seen}). Add the logs of the remaining ranks and each node's kernel `
        + "log (dmesg -T).");
    }
  }
  if (initiating !== null && confident.length > 1 && !scanner.clocks.has("wall")) {
    out.push("These logs carry no wall-clock timestamps, so the initiating failure is chosen by order of "
      + "appearance. Timestamped logs (torchrun --log-dir, or TORCH_CPP_LOG_LEVEL=INFO for glog headers) "
      + "would settle which rank failed first.");
  }
  return out;
}
