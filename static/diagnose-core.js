// The diagnosis engine for the browser: the interpreter of the tables in diagnose-rules.js, which
// `trainwreck build` generates from generator/diagnose/rules.py. It follows generator/diagnose/
// collect.py and judge.py step by step; the test suite runs both on every corpus case and vector
// and requires the same JSON report.
import RULES from "./diagnose-rules.js";

export const REPORT_VERSION = RULES.REPORT_VERSION;
const INDEX_VERSION = RULES.INDEX_VERSION;
const LIMITS = RULES.LIMITS;
const SEVERITY_RANK = Object.fromEntries(RULES.SEVERITIES.map((s, i) => [s, i]));

// Python's re (with re.ASCII) and JavaScript differ on \s (JavaScript adds Unicode spaces) and on
// "." (JavaScript also stops at \r); rewrite both so a pattern means what it means in Python.
export function portable(source) {
  let out = "";
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const ch = source[i];
    if (ch === "\\") {
      const next = source[i + 1];
      if (next === "s") out += inClass ? "\\t\\n\\v\\f\\r " : "[\\t\\n\\v\\f\\r ]";
      else if (next === "S" && !inClass) out += "[^\\t\\n\\v\\f\\r ]";
      else out += ch + next;
      i++;
      continue;
    }
    if (inClass) {
      if (ch === "]") inClass = false;
    } else if (ch === "[") {
      inClass = true;
      // A leading ']' (or '^]') is literal in Python: keep it literal here too.
      if (source[i + 1] === "^") { out += "[^"; i++; }
      else out += "[";
      if (source[i + 1] === "]") { out += "\\]"; i++; }
      continue;
    } else if (ch === ".") {
      out += "[^\\n]";
      continue;
    }
    out += ch;
  }
  return out;
}

const rx = (source, flags = "") => new RegExp(portable(source), flags);
const ANSI = rx(RULES.ANSI, "g");
const RANK_MARKERS = RULES.RANK_MARKERS.map((s) => rx(s, "g"));
const MESSAGE_RANKS = RULES.MESSAGE_RANKS.map((s) => rx(s));
const SLURM_PREFIX = rx(RULES.SLURM_PREFIX);
const PDSH_PREFIX = rx(RULES.PDSH_PREFIX);
const NCCL_HEADER = rx(RULES.NCCL_HEADER);
const SYSLOG = rx(RULES.SYSLOG);
const TIMES = RULES.TIMES.map((t) => ({ ...t, re: rx(t.regex) }));
const MONTHS = Object.fromEntries(RULES.MONTHS.map((m, i) => [m, i + 1]));
const FILE_RANK = rx(RULES.FILE_RANK, "i");
const FILE_HOST = rx(RULES.FILE_HOST);
const DECORATION = rx(RULES.DECORATION);
const HEADER = rx(RULES.TRACEBACK.header);
const FRAME = rx(RULES.TRACEBACK.frame);
const BOX_FRAME = rx(RULES.TRACEBACK.box_frame);
const FRAME_PARTIAL = rx(RULES.TRACEBACK.frame_partial);
const BOX_PARTIAL = rx(RULES.TRACEBACK.box_partial);
const CHAIN = rx(RULES.TRACEBACK.chain);
const EXCEPTION = rx(RULES.TRACEBACK.exception);
const PACKAGE = rx(RULES.TRACEBACK.package);
const STDLIB = rx(RULES.TRACEBACK.stdlib);
const METRIC_LIST = rx(RULES.METRIC.list, "g");
const METRIC_ITEM = rx(RULES.METRIC.item);
const METRIC_PAIR = rx(RULES.METRIC.pair, "g");
const RECORD_OPEN = rx(RULES.LAUNCHER_RECORD.open);
const RECORD_FIELD = rx(RULES.LAUNCHER_RECORD.field);
const RECORD_CLOSE = rx(RULES.LAUNCHER_RECORD.close);
// The count of capture groups: the length of a match of the pattern or'ed with the empty one.
const groupCount = (re) => new RegExp(`${re.source}|`).exec("").length - 1;
const ERROR_LINES = RULES.ERROR_LINES.map((e) => [e.kind, rx(e.regex), groupCount(rx(e.regex)), e.package]);
const DOTTED = /^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$/;

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
// Python slices strings by code point, JavaScript by UTF-16 unit: cut the way Python does.
const cut = (s, n) => (s.length <= n ? s : Array.from(s).slice(0, n).join(""));
const fmt = (template, values) => template.replace(/\{(\w+)\}/g, (_, k) => String(values[k]));

export function parseIndex(text) {
  const signatures = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const r = JSON.parse(line);
    if (r.schema_version !== INDEX_VERSION) throw new Error(`index schema_version ${r.schema_version} is not supported`);
    const isLine = r.kind === "literal" || r.kind === "regex";
    const source = r.kind === "literal" ? escapeRegExp(r.pattern) : r.kind === "regex" ? r.pattern : "";
    signatures.push({
      record: r, position: signatures.length, entry: r.entry, isLine, source,
      regex: isLine ? rx(source) : null, specificity: specificity(r),
    });
  }
  return signatures;
}

function specificity(r) {
  if (r.kind === "regex") return Array.from(r.pattern.replace(/\\.|[\[\](){}*+?|^$]/g, "")).length;
  return r.kind === "literal" ? Array.from(r.pattern).length : 0;
}

function fraction(digits) {
  return parseInt((digits || "0").padEnd(6, "0").slice(0, 6), 10);
}

export function readTime(line) {
  for (const spec of TIMES) {
    const m = spec.re.exec(line);
    if (!m) continue;
    if (spec.clock === "boot") {
      const [whole, frac] = m[1].split(".");
      return [m[spec.text], [parseInt(whole, 10) * 1000000 + fraction(frac)], "boot"];
    }
    const f = spec.fields;
    let month;
    if (spec.month_name) {
      month = MONTHS[m[f[0]]];
      if (month === undefined) continue;
    } else {
      month = parseInt(m[f[0]], 10);
    }
    const values = [month, ...f.slice(1, 5).map((g) => parseInt(m[g], 10)), f[5] ? fraction(m[f[5]]) : 0];
    return [m[spec.text], values, "wall"];
  }
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
      if (m[0].length === 0) marker.lastIndex++;
    }
  }
  let host = null;
  let m;
  if ((m = NCCL_HEADER.exec(line))) host = m[1];
  else if ((m = SYSLOG.exec(line))) host = m[1];
  if (rank === null && (m = SLURM_PREFIX.exec(line))) rank = parseInt(m[1], 10);
  if (rank === null) {
    for (const marker of MESSAGE_RANKS) {
      if ((m = marker.exec(line))) { rank = parseInt(m[1], 10); break; }
    }
  }
  if (host === null && (m = PDSH_PREFIX.exec(line)) && !m[1].toLowerCase().startsWith("rank")) host = m[1];
  const [time, order, clock] = readTime(line);
  return { rank: rank !== null ? rank : defaultRank, host: host || defaultHost, time, order, clock };
}

export function visible(line, at) {
  const start = line.lastIndexOf("\r", at - 1) + 1;
  const end = line.indexOf("\r", at);
  return end === -1 ? line.slice(start) : line.slice(start, end);
}

export function payload(line) {
  for (let i = 0; i < LIMITS.decoration_passes; i++) {
    const m = DECORATION.exec(line);
    if (!m || m[0].length === 0) break;
    line = line.slice(m[0].length);
  }
  return line.replace(/^[ \t]+/, "");
}

export function normalise(text) {
  return text.includes("\x1b") ? text.replace(ANSI, "") : text;
}

function quoteVariants(source) {
  return source.includes('"') ? [source, source.split('"').join('\\\\"')] : [source];
}

const METRIC_SEPARATORS = rx(RULES.METRIC_SEPARATORS, "g");

export function metricKey(name) {
  return name.toLowerCase().replace(METRIC_SEPARATORS, "_");
}

function reading(text) {
  const bare = text.toLowerCase().replace(/^[+-]+/, "");
  if (bare === "nan") return NaN;
  if (bare === "inf" || bare === "infinity") return text.startsWith("-") ? -Infinity : Infinity;
  return Number(text);
}

function compareLists(a, b) {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return a.length - b.length;
}

// Aho-Corasick over UTF-16 code units, ASCII letters folded to lower case and every non-ASCII unit
// one class: a few hundred literals in one pass, several times faster than a regex alternation.
// A hit is checked against the literal itself (exact, or ignoring case), so only real hits count.
const CLASSES = 129;
const FOLD = new Uint8Array(65536);
for (let c = 0; c < 65536; c++) FOLD[c] = c >= 65 && c <= 90 ? c + 32 : c < 128 ? c : 128;

class Prefilter {
  constructor(literals) {
    this.literals = literals;
    const goto = [new Int32Array(CLASSES).fill(-1)];
    const outputs = [[]];
    literals.forEach(([lit], id) => {
      let s = 0;
      for (let i = 0; i < lit.length; i++) {
        const c = FOLD[lit.charCodeAt(i)];
        if (goto[s][c] === -1) { goto[s][c] = goto.length; goto.push(new Int32Array(CLASSES).fill(-1)); outputs.push([]); }
        s = goto[s][c];
      }
      outputs[s].push(id);
    });
    const n = goto.length;
    const next = new Int32Array(n * CLASSES);
    const fail = new Int32Array(n);
    const queue = [];
    for (let c = 0; c < CLASSES; c++) {
      const t = goto[0][c];
      next[c] = t === -1 ? 0 : t;
      if (t !== -1) queue.push(t);
    }
    for (let head = 0; head < queue.length; head++) {
      const s = queue[head];
      outputs[s] = outputs[s].concat(outputs[fail[s]]);
      for (let c = 0; c < CLASSES; c++) {
        const t = goto[s][c];
        if (t === -1) next[s * CLASSES + c] = next[fail[s] * CLASSES + c];
        else { fail[t] = next[fail[s] * CLASSES + c]; next[s * CLASSES + c] = t; queue.push(t); }
      }
    }
    // States are stored pre-multiplied by the class count, so a step is one add and one load.
    this.next = next.map((t) => t * CLASSES);
    this.outputs = new Map();
    for (let s = 0; s < n; s++) if (outputs[s].length) this.outputs.set(s * CLASSES, outputs[s]);
    this.accepting = new Uint8Array(n * CLASSES);
    for (const s of this.outputs.keys()) this.accepting[s] = 1;
  }

  // The start offsets of the lines that hold a literal, in order.
  lineStarts(text) {
    const { next, accepting } = this;
    const starts = [];
    let s = 0;
    for (let i = 0, n = text.length; i < n; i++) {
      s = next[s + FOLD[text.charCodeAt(i)]];
      if (accepting[s] !== 0 && this.confirm(text, i, s)) {
        starts.push(text.lastIndexOf("\n", i) + 1);
        const stop = text.indexOf("\n", i);
        if (stop === -1) break;
        i = stop;
        s = 0;
      }
    }
    return starts;
  }

  confirm(text, end, state) {
    for (const id of this.outputs.get(state)) {
      const [lit, exact] = this.literals[id];
      const piece = text.slice(end - lit.length + 1, end + 1);
      if (exact ? piece === lit : piece.toLowerCase() === lit.toLowerCase()) return true;
    }
    return false;
  }
}

const BUILT = new WeakMap();

// Scans line-aligned chunks of text and keeps bounded state: the same steps as collect.py.
export class Scanner {
  constructor(signatures) {
    this.signatures = signatures;
    const built = BUILT.get(signatures);
    this.lineSignatures = signatures.filter((s) => s.isLine);
    this.frameSignatures = signatures.filter((s) => s.record.kind === "frames");
    this.watched = new Map();
    for (const s of signatures) {
      for (const metric of s.record.detector ? s.record.detector.metrics : []) {
        if (!this.watched.has(metric)) this.watched.set(metric, []);
        this.watched.get(metric).push(s);
      }
    }
    // The texts that make a line worth reading: every line signature's required text, the grammar's
    // literals, and each watched metric's last word before its ':' or '='.
    const literals = [];
    const slow = [];
    for (const sig of this.lineSignatures) {
      if (sig.record.required) literals.push([sig.record.required, true]);
      else slow.push(sig.source);
    }
    for (const item of RULES.STRUCTURE) for (const lit of item.literals) literals.push([lit, true]);
    for (const metric of this.watched.keys()) {
      const last = metric.split("_").pop();
      for (const join of RULES.METRIC_JOINS) literals.push([last + join, false]);
    }
    const withQuotes = literals.flatMap(([lit, exact]) => (lit.includes('"') ? [[lit, exact], [lit.split('"').join('\\"'), exact]] : [[lit, exact]]));
    // Building the automaton takes longer than scanning a small log: one per index.
    this.prefilter = built ? built[0] : new Prefilter(withQuotes);
    // Patterns without a required text (only a foreign index has them) get a regex pass of their own.
    this.slow = built ? built[1] : slow.length ? new RegExp(slow.flatMap(quoteVariants).map(portable).join("|"), "gm") : null;
    if (!built) BUILT.set(signatures, [this.prefilter, this.slow]);
    this.groups = new Map();
    this.inputs = [];
    this.lines = 0;
    this.bytes = 0;
    this.clocks = new Set();
    this.logRanks = new Map();
    this.exceptions = [];
    this.truncated = false;
    this.file = null;
  }

  begin(name, position, rank, host) {
    this.file = { name, position, rank, host, lastOrder: null, streams: new Map(), record: null };
  }

  end() {
    for (const [rank, stream] of this.file.streams) if (stream.traceback) this.close(stream, rank, null);
    this.file = null;
  }

  // Scan one chunk of complete lines; `base` is the count of lines before it. Returns its line count.
  scanChunk(text, base) {
    // The prefilter reads the text as it is; colour codes come off the proposed lines only, so a code
    // inside a signature's required text hides that line (the command line does the same).
    const starts = this.prefilter.lineStarts(text);
    if (this.slow) {
      const re = this.slow;
      re.lastIndex = 0;
      let m;
      while ((m = re.exec(text))) {
        starts.push(text.lastIndexOf("\n", m.index - 1) + 1);
        const stop = text.indexOf("\n", m.index);
        re.lastIndex = stop === -1 ? text.length + 1 : stop + 1;
      }
      starts.sort((a, b) => a - b);
    }
    let lineStart = 0;
    let lineNumber = base + 1;
    let previous = -1;
    for (const start of starts) {
      if (start === previous) continue;
      previous = start;
      for (let i = text.indexOf("\n", lineStart); i !== -1 && i < start; i = text.indexOf("\n", i + 1)) lineNumber++;
      lineStart = start;
      let stop = text.indexOf("\n", start);
      if (stop === -1) stop = text.length;
      let line = text.slice(start, stop);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      let following = null;
      if (stop < text.length) {
        let after = text.indexOf("\n", stop + 1);
        if (after === -1) after = text.length;
        following = text.slice(stop + 1, after);
        if (following.endsWith("\r")) following = following.slice(0, -1);
        following = normalise(following);
      }
      this.line(lineNumber, normalise(line), following);
    }
    let newlines = 0;
    for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) newlines++;
    return newlines;
  }

  line(number, text, following = null) {
    const f = this.file;
    let rank = f.rank;
    let host = f.host;
    if (f.record !== null) {
      // Inside the launcher's record of a failed worker: its lines are that worker's.
      if (/^\d+$/.test(f.record.rank || "")) rank = parseInt(f.record.rank, 10);
      if (f.record.host !== undefined) host = f.record.host;
    }
    const where = origin(text, 0, rank, host);
    if (where.clock === "wall" && where.order !== null) f.lastOrder = where.order;
    if (where.clock) this.clocks.add(where.clock);
    const [matched, proof] = this.matchSignatures(number, text, where);
    const escaped = text.includes("\\n") && (text.includes("Traceback") || text.includes('File \\"'));
    const subs = escaped ? text.split("\\n").map((s) => s.split('\\"').join('"')) : [text];
    // Only a plain line can continue on the next one.
    const next = !escaped && !text.includes("\r") ? following : null;
    for (const sub of subs) {
      for (const segment of sub.split("\r")) if (segment) this.grammar(segment, number, where, matched, proof, next);
    }
  }

  matchSignatures(number, text, where) {
    const escaped = text.includes('\\"');
    const unescaped = escaped ? text.split('\\"').join('"') : text;
    const hits = [];
    for (const sig of this.lineSignatures) {
      let hit = sig.regex.exec(text);
      if (hit) hits.push([sig, text, hit.index]);
      else if (escaped && (hit = sig.regex.exec(unescaped))) hits.push([sig, unescaped, hit.index]);
    }
    if (!hits.length) return [false, false];
    const refined = new Set(hits.flatMap(([sig]) => sig.record.refines));
    for (const [sig, view, at] of hits) {
      if (!refined.has(sig.entry)) this.add(sig, number, view, at, origin(view, at, where.rank, where.host), "line", null);
    }
    return [true, hits.some(([sig]) => !(sig.record.lead || sig.record.search_key))];
  }

  grammar(segment, number, where, matched, proof, following) {
    const f = this.file;
    const body = payload(segment);
    let r;
    if (RECORD_OPEN.test(body)) f.record = {};
    else if (f.record !== null && (r = RECORD_FIELD.exec(body))) f.record[r[1]] = r[2];
    else if (RECORD_CLOSE.test(body)) f.record = null;
    let stream = f.streams.get(where.rank);
    if (!stream) { stream = { traceback: null, detectors: new Map() }; f.streams.set(where.rank, stream); }
    if (proof && stream.traceback) stream.traceback.named = true;
    if (HEADER.test(body)) {
      if (stream.traceback && stream.traceback.frames.length) this.close(stream, where.rank, null);
      stream.traceback = { start: number, frames: [], named: false };
      return;
    }
    let m = FRAME.exec(body) || BOX_FRAME.exec(body);
    if (!m && following !== null) m = unwrappedFrame(body, payload(following));
    if (m) {
      // The excerpt starts inside a traceback.
      if (!stream.traceback) stream.traceback = { start: number, frames: [], named: proof };
      const frames = stream.traceback.frames;
      frames.push({ path: m[1].split("\\").join("/"), line: parseInt(m[2], 10), function: m[3], number, text: segment });
      if (frames.length > LIMITS.frames_kept) frames.shift();
      return;
    }
    if (CHAIN.test(body)) return;
    m = EXCEPTION.exec(body);
    if (m) {
      const record = {
        type: m[1], message: cut(m[2] || "", LIMITS.text_limit), frames: [], file: f.name, number, where,
        text: cut(segment, LIMITS.text_limit), matched,
      };
      if (stream.traceback) {
        record.frames = stream.traceback.frames;
        this.close(stream, where.rank, record);
      } else {
        this.record(record);
      }
      return;
    }
    for (const [kind, re, groups, pkg] of ERROR_LINES) {
      const e = re.exec(body);
      if (e) {
        // With two groups the first names the error (the Xid number), the second describes it.
        const [name, message] = groups > 1 ? [`${kind} ${e[1]}`, e[2]] : [kind, e[1]];
        this.record({
          type: name, message: cut(message, LIMITS.text_limit), frames: [], file: f.name, number, where,
          text: cut(segment, LIMITS.text_limit), matched, package: pkg,
        });
        return;
      }
    }
    if (this.watched.size) this.metrics(body, segment, number, where, stream);
  }

  // Feed the line's metric readings to the detectors that watch them.
  metrics(body, segment, number, where, stream) {
    const read = new Set();
    let found;
    METRIC_LIST.lastIndex = 0;
    while ((found = METRIC_LIST.exec(body))) {
      const detectors = this.watched.get(metricKey(found[1]));
      if (!detectors) continue;
      // Every item of a list is a reading, in order.
      let at = found.index + found[0].lastIndexOf("[") + 1;
      for (const piece of found[2].split(",")) {
        const item = METRIC_ITEM.exec(piece);
        if (item) {
          const value = reading(item[1]);
          const itemAt = at + piece.indexOf(item[1]);
          for (const sig of detectors) {
            read.add(sig.position);
            if (this.evaluate(sig, stream, value)) this.add(sig, number, segment, itemAt, where, "metric", null);
          }
        }
        at += piece.length + 1;
      }
    }
    METRIC_PAIR.lastIndex = 0;
    while ((found = METRIC_PAIR.exec(body))) {
      if (found[0].length === 0) METRIC_PAIR.lastIndex++;
      const detectors = this.watched.get(metricKey(found[1])) || [];
      for (const sig of detectors) {
        // One reading per detector and line: "loss=nan, train_loss=nan" is one step, not two.
        if (read.has(sig.position)) continue;
        read.add(sig.position);
        const at = found.index + found[0].length - found[2].length;
        if (this.evaluate(sig, stream, reading(found[2]))) this.add(sig, number, segment, at, where, "metric", null);
      }
    }
  }

  close(stream, rank, record) {
    const tb = stream.traceback;
    stream.traceback = null;
    if (!tb) return;
    if (record === null) {
      if (tb.frames.length) this.truncated = true;
    } else {
      this.record(record);
    }
    // Frames name the failure only when nothing in the traceback did.
    if ((record !== null && record.matched) || tb.named) return;
    for (const sig of this.frameSignatures) {
      const frame = findCalls(tb.frames, sig);
      if (frame) this.add(sig, frame.number, frame.text, 0, origin(frame.text, 0, rank, this.file.host), "frames", rank);
    }
  }

  record(record) {
    if (this.exceptions.length < LIMITS.exceptions_kept) this.exceptions.push(record);
  }

  evaluate(sig, stream, value) {
    const d = sig.record.detector;
    let state = stream.detectors.get(sig.position);
    if (!state) {
      state = { run: 0, last: null, low: null, readings: 0, finite: false, start: 0, primed: false };
      stream.detectors.set(sig.position, state);
    }
    const finite = Number.isFinite(value);
    const last = state.last;
    let holds = false;
    if (d.condition === "non-finite") {
      state.run = finite ? 0 : state.run + 1;
      holds = !finite;
    } else if (d.condition === "below" || d.condition === "above") {
      holds = finite && (d.condition === "below" ? value < d.threshold : value > d.threshold);
      state.run = holds ? state.run + 1 : 0;
    } else if (d.condition === "halved") {
      if (last !== null && finite && Number.isFinite(last) && last > 0) {
        if (value <= last / 2) { state.run++; holds = true; }
        else if (value !== last) state.run = 0;
      }
    } else if (d.condition === "jump") {
      holds = finite && state.low !== null && value >= state.low * 10 ** d.threshold;
      state.run = holds ? state.run + 1 : 0;
      if (finite && value > 0 && (state.low === null || value < state.low)) state.low = value;
    } else if (d.condition === "rising") {
      if (last !== null && finite && Number.isFinite(last)) {
        if (value > last) { state.run++; holds = true; }
        else if (value < last) state.run = 0;
      }
    }
    state.last = value;
    state.readings++;
    if (holds && state.run === 1) { state.start = state.readings; state.primed = state.finite; }
    state.finite = state.finite || finite;
    if (d.within !== null && d.within !== undefined && state.start > d.within) return false;
    if (d.after_finite && !state.primed) return false;
    return holds && state.run >= d.count;
  }

  add(sig, number, view, at, where, via, rank) {
    const f = this.file;
    let g = this.groups.get(sig.entry);
    if (g && g.lastFile === f.position && g.lastLine === number) {
      // Two signatures of one entry on one line: one line of evidence, the stronger signature.
      if (stronger(sig, g.signature)) g.signature = sig;
      return;
    }
    const lineRank = where.rank !== null ? where.rank : rank;
    const order = where.clock === "wall" && where.order !== null ? where.order : f.lastOrder;
    const evidence = {
      file: f.name, line: number, rank: lineRank, host: where.host, time: where.time,
      order: order !== null ? [...order] : null, text: cut(visible(view, at), LIMITS.text_limit),
      signature: sig.record.id, via,
    };
    if (!g) {
      g = {
        signature: sig, count: 0, ranks: new Set(), hosts: new Set(), evidence: [], firstSeen: null,
        firstSeenAt: null, firstTimed: null, firstTimedAt: null, vias: new Set(), lastFile: -1, lastLine: -1,
        onsets: new Map(),
      };
      this.groups.set(sig.entry, g);
    } else if (stronger(sig, g.signature)) {
      g.signature = sig;
    }
    g.lastFile = f.position;
    g.lastLine = number;
    g.count++;
    g.vias.add(via);
    if (lineRank !== null) g.ranks.add(lineRank);
    if (where.host) g.hosts.add(where.host);
    if (g.evidence.length < LIMITS.evidence_lines) g.evidence.push(evidence);
    const seen = [f.position, number];
    if (g.firstSeen === null || compareLists(seen, g.firstSeenAt) < 0) { g.firstSeen = evidence; g.firstSeenAt = seen; }
    const timed = order !== null ? [order, f.position, number] : null;
    if (timed !== null && (g.firstTimed === null || compareTimed(timed, g.firstTimedAt) < 0)) { g.firstTimed = evidence; g.firstTimedAt = timed; }
    addOnset(g, evidence, seen, timed);
  }
}

// A finding's onsets are keyed by rank, or by host for a line without a rank: rank rows sort first,
// then the hosts (collect.py `onset_key`).
function onsetKey(e) {
  if (e.rank !== null) return [0, e.rank, ""];
  return e.host ? [1, 0, e.host] : null;
}

function compareOnsetKeys(a, b) {
  return a[0] - b[0] || a[1] - b[1] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0);
}

// The earliest line of each rank (or host), in file order and in wall-clock order (collect.py `Group.onset`).
function addOnset(g, e, seenAt, timedAt) {
  const key = onsetKey(e);
  if (key === null) return;
  const id = key.join(":");
  const kept = g.onsets.get(id);
  if (!kept) {
    g.onsets.set(id, { key, seen: e, seenAt, timed: timedAt !== null ? e : null, timedAt });
    // Only the lowest keys are reported; one dropped here could never be, and memory stays bounded.
    if (g.onsets.size > 2 * LIMITS.onsets_kept) {
      const sorted = [...g.onsets.values()].sort((a, b) => compareOnsetKeys(a.key, b.key));
      for (const o of sorted.slice(LIMITS.onsets_kept)) g.onsets.delete(o.key.join(":"));
    }
    return;
  }
  if (compareLists(seenAt, kept.seenAt) < 0) { kept.seen = e; kept.seenAt = seenAt; }
  if (timedAt !== null && (kept.timed === null || compareTimed(timedAt, kept.timedAt) < 0)) { kept.timed = e; kept.timedAt = timedAt; }
}

// Which of an entry's signatures speaks for its finding: proof over a lead, then the more specific.
function stronger(a, b) {
  const proof = (s) => (s.record.lead || s.record.search_key ? 0 : 1);
  return proof(a) !== proof(b) ? proof(a) > proof(b) : a.specificity > b.specificity;
}

function compareTimed(a, b) {
  return compareLists(a[0], b[0]) || a[1] - b[1] || a[2] - b[2];
}

// A frame line the terminal wrapped onto the next line, read as the one line it was.
function unwrappedFrame(body, following) {
  if (FRAME_PARTIAL.test(body)) {
    const head = body.replace(/[ \t]+$/, "");
    const tail = following.replace(/^[ \t]+|[ \t]+$/g, "");
    return FRAME.exec(head + tail) || FRAME.exec(`${head} ${tail}`);
  }
  if (BOX_PARTIAL.test(body)) {
    const edges = /^[ \t\u2502]+|[ \t\u2502]+$/g;
    const inner = body.replace(edges, "") + following.replace(edges, "");
    return BOX_FRAME.exec(`\u2502 ${inner}`);
  }
  return null;
}

function findCalls(frames, sig) {
  const calls = sig.record.calls;
  for (let i = 0; i + calls.length <= frames.length; i++) {
    const run = frames.slice(i, i + calls.length);
    if (run.every((f, k) => f.function === calls[k].function && ("/" + f.path).endsWith("/" + calls[k].path))) {
      return run[run.length - 1];
    }
  }
  return null;
}

// -- judge: the same steps as judge.py ------------------------------------------------------------

function confidence(g) {
  const r = g.signature.record;
  if (r.search_key || r.lead || r.severity === "low") return "low";
  if (r.severity === "medium" || !g.vias.has("line")) return "medium";
  return "high";
}

function orderKey(g, positions, byTime) {
  if (byTime && g.firstTimed !== null && g.firstTimed.order !== null) {
    const e = g.firstTimed;
    return [0, e.order, positions.get(e.file), e.line];
  }
  const e = g.firstSeen;
  return [byTime ? 1 : 0, [], positions.get(e.file), e.line];
}

function compareKeys(a, b) {
  return a[0] - b[0] || compareLists(a[1], b[1]) || a[2] - b[2] || a[3] - b[3];
}

function carries(wrapper, other) {
  const wraps = wrapper.signature.record.wraps;
  return other !== wrapper && (wraps.includes("*") || wraps.includes(other.signature.entry));
}

export function buildReport(scanner) {
  let groups = [...scanner.groups.values()];
  const positions = new Map(scanner.inputs.map((name, i) => [name, i]));
  const byTime = scanner.inputs.length > 1;
  const keys = new Map(groups.map((g) => [g, orderKey(g, positions, byTime)]));
  const conf = new Map(groups.map((g) => [g, confidence(g)]));
  const causes = groups.filter((g) => conf.get(g) !== "low" && !g.signature.record.collateral && !g.signature.record.wraps.length);
  if (!causes.length && scanner.exceptions.some((r) => !r.matched)) {
    // A launcher that reports "any failure" of its worker carries an exception no entry covers
    // (the user's own KeyError, say): that exception is the account of the failure, not the launcher.
    for (const g of groups) if (g.signature.record.wraps.includes("*")) conf.set(g, "low");
  }
  const confident = groups.filter((g) => conf.get(g) !== "low");
  const wrappers = new Set(confident.filter((w) => w.signature.record.wraps.length
    && confident.some((c) => !c.signature.record.wraps.length && carries(w, c))));
  for (const g of confident) {
    if (g.signature.record.wraps.length && !wrappers.has(g) && !g.signature.record.collateral) causes.push(g);
  }
  let initiating = null;
  for (const g of causes) if (initiating === null || compareKeys(keys.get(g), keys.get(initiating)) < 0) initiating = g;
  const role = (g) => {
    if (conf.get(g) === "low") return "note";
    if (g === initiating) return "initiating";
    if (wrappers.has(g)) return "wrapper";
    return g.signature.record.collateral ? "collateral" : "independent";
  };
  const order = Object.fromEntries(RULES.ROLE_ORDER.map((r, i) => [r, i]));
  const roles = new Map(groups.map((g) => [g, role(g)]));
  groups.sort((a, b) => order[roles.get(a)] - order[roles.get(b)]
    || SEVERITY_RANK[b.signature.record.severity] - SEVERITY_RANK[a.signature.record.severity]
    || compareKeys(keys.get(a), keys.get(b)));
  const findings = groups.map((g) => {
    const r = g.signature.record;
    return {
      entry: r.entry, title: r.title, url: r.url, severity: r.severity, confidence: conf.get(g), role: roles.get(g),
      count: g.count, ranks: [...g.ranks].sort((x, y) => x - y), hosts: [...g.hosts].sort(),
      first: byTime && g.firstTimed !== null ? g.firstTimed : g.firstSeen, evidence: g.evidence,
      onsets: [...g.onsets.values()].sort((a, b) => compareOnsetKeys(a.key, b.key)).slice(0, LIMITS.onsets_kept)
        .map((o) => (byTime && o.timed !== null ? o.timed : o.seen)),
      fix: r.fix, verify: r.verify,
    };
  });
  const first = findings.length && findings[0].role === "initiating" ? findings[0] : null;
  let rank = first ? first.first.rank : null;
  if (first !== null && rank === null) {
    // A launcher in the same log names the worker that failed ("local_rank: 5") when the error does not.
    const wrapperEntries = new Set(groups.filter((g) => g.signature.record.wraps.length).map((g) => g.signature.entry));
    const named = findings.find((f) => (f.role === "wrapper" || f.role === "collateral") && f.first.rank !== null
      && wrapperEntries.has(f.entry) && f.first.file === first.first.file);
    rank = named ? named.first.rank : null;
  }
  let host = first ? first.first.host : null;
  const placed = first ? null : placedAt(groups.filter((g) => roles.get(g) === "collateral" && g.signature.record.local));
  if (placed) [rank, host] = placed;
  const suspects = suspectRanks(scanner, findings);
  const unknown = findings.some((f) => f.role !== "note") ? [] : unknownFailures(scanner);
  return {
    schema_version: REPORT_VERSION, inputs: scanner.inputs, lines: scanner.lines, bytes: scanner.bytes,
    initiating: first, initiating_rank: rank, initiating_host: host, suspects, findings,
    unknown, missing: missing(scanner, findings, first, suspects, new Set(groups.filter((g) => g.signature.record.wraps.length).map((g) => g.signature.entry)), placed),
  };
}

// The one rank or host that reports failures of its own (a sticky CUDA error, its GPU's Xid), if one.
function placedAt(local) {
  const ranks = new Set(local.flatMap((g) => [...g.ranks]));
  const hosts = new Set(local.flatMap((g) => [...g.hosts]));
  if (ranks.size > 1 || hosts.size > 1 || !(ranks.size || hosts.size)) return null;
  return [ranks.size ? [...ranks][0] : null, hosts.size ? [...hosts][0] : null, local[0].signature.record.title];
}

function packageOfType(type) {
  const head = type.split(".")[0];
  return DOTTED.test(type) && !RULES.BUILTIN_MODULES.includes(head) ? head : null;
}

function packageOf(record) {
  if (record.package) return record.package;
  if (record.frames.length) {
    const path = record.frames[record.frames.length - 1].path;
    let m;
    if ((m = PACKAGE.exec(path))) return m[1];
    if (STDLIB.test(path)) return "python";
  }
  return packageOfType(record.type);
}

function unknownFailures(scanner) {
  const out = [];
  const seen = new Set();
  for (const record of scanner.exceptions) {
    const key = `${record.type}\u0000${cut(record.message, 80)}`;
    if (record.matched || seen.has(key)) continue;
    seen.add(key);
    const w = record.where;
    out.push({
      exception: record.type, message: record.message, package: packageOf(record),
      frames: record.frames.slice(-3).map((f) => `${f.path}:${f.line} in ${f.function}`),
      evidence: {
        file: record.file, line: record.number, rank: w.rank, host: w.host, time: w.time,
        order: w.order !== null && w.clock === "wall" ? [...w.order] : null, text: record.text, signature: "", via: "line",
      },
      command: fmt(RULES.NEW_COMMAND, { file: record.file, line: record.number }),
    });
    if (out.length === LIMITS.unknown_shown) break;
  }
  return out;
}

function suspectRanks(scanner, findings) {
  const reporting = new Set(findings.filter((f) => f.role === "collateral").flatMap((f) => f.ranks));
  if (!reporting.size || scanner.logRanks.size < 2) return [];
  return [...new Set([...scanner.logRanks.values()].filter((r) => !reporting.has(r)))].sort((a, b) => a - b);
}

function missing(scanner, findings, initiating, suspects, wrapping, placed) {
  const S = RULES.SENTENCES;
  const out = [];
  const confident = findings.filter((f) => f.role !== "note");
  const ranks = [...new Set(confident.flatMap((f) => f.ranks))].sort((a, b) => a - b);
  if (placed) {
    const where = [placed[0] !== null ? `rank ${placed[0]}` : null, placed[1]].filter(Boolean).join(", ");
    out.push(fmt(S.placed, { title: placed[2], where }));
  } else if (suspects.length && initiating === null) {
    const noun = suspects.length === 1 ? "Rank" : "Ranks";
    out.push(fmt(S.suspects, { noun, noun_lower: noun.toLowerCase(), names: suspects.join(", ") }));
  } else if (confident.length && initiating === null) {
    const titles = confident.slice(0, 3).map((f) => f.title).join("; ");
    if (confident.every((f) => wrapping.has(f.entry))) {
      // Only errors that carry another inside them: the one they carry is not in these logs.
      out.push(fmt(S.wrapper_only, { title: confident[0].title }));
    } else if (ranks.length <= 1 && scanner.inputs.length === 1) {
      out.push(fmt(S.only_collateral_one_log, { who: ranks.length ? `rank ${ranks[0]}'s log` : "one log", titles }));
    } else {
      out.push(fmt(S.only_collateral, { titles, seen: ranks.length ? ranks.join(", ") : "none named" }));
    }
  }
  if (initiating !== null && confident.length > 1 && !scanner.clocks.has("wall")) out.push(S.no_clock);
  if (scanner.truncated && !confident.length) out.push(S.truncated);
  return out;
}

// -- inputs: read a file (a browser File, or a Blob under Node) in slices of whole lines -----------

const SLICE = 4 << 20;
// A "line" longer than this is scanned in pieces, as the CLI does: a log without line breaks must not
// be held whole (at a few hundred MB it no longer fits in one string).
const MAX_LINE = 1 << 20;
// Control bytes a text log does not contain; tab, line breaks, backspace and ESC it does.
const NOT_TEXT = new Set([...Array(32).keys()].filter((b) => ![8, 9, 10, 12, 13, 27].includes(b)).concat([127]));

// Binary data rather than a log, by the share of control bytes with NULs set aside (generator/diagnose/inputs.py).
export function isBinary(bytes) {
  let kept = 0;
  let bad = 0;
  for (const b of bytes) {
    if (b === 0) continue;
    kept += 1;
    if (NOT_TEXT.has(b)) bad += 1;
  }
  return kept > 0 && bad > 0.05 * kept;
}

export function scanText(scanner, text, name) {
  scanner.begin(name, scanner.inputs.length, null, null);
  scanner.lines += scanner.scanChunk(text, 0);
  scanner.end();
  scanner.bytes += new TextEncoder().encode(text).length;
  scanner.inputs.push(name);
}

export async function scanFile(scanner, file, name, onProgress = () => {}) {
  const [rank, host] = fileOrigin(name);
  let stream = file.stream();
  if (name.endsWith(".gz")) stream = stream.pipeThrough(new DecompressionStream("gzip"));
  const reader = stream.getReader();
  const decoder = new TextDecoder("utf-8");
  scanner.begin(name, scanner.inputs.length, rank, host);
  let carry = "";
  let base = 0;
  let size = 0;
  let pending = "";
  for (;;) {
    let next;
    try {
      next = await reader.read();
    } catch (error) {
      throw new Error(`${name}: cannot be read as ${name.endsWith(".gz") ? "gzip" : "a log"} (${error.message})`);
    }
    const { value, done: finished } = next;
    if (value) {
      if (size === 0 && isBinary(value.subarray(0, 32768))) throw new Error(`${name}: this is a binary file, not a text log`);
      size += value.length;
      const decoded = decoder.decode(value, { stream: true });
      // NULs a crash left in the file are dropped from the text.
      pending += decoded.includes("\u0000") ? decoded.replaceAll("\u0000", "") : decoded;
    }
    if (finished) pending += decoder.decode();
    // Scan in slices of whole lines, so memory stays flat whatever the size of the file.
    if (pending.length >= SLICE || finished) {
      const text = carry + pending;
      pending = "";
      let cutAt = finished ? text.length : text.lastIndexOf("\n") + 1;
      if (cutAt === 0 && text.length > MAX_LINE) {
        // A piece of an endless line is scanned, but the line is counted once, where its newline comes
        // (match.py `scan` does the same), so the two engines number it alike.
        scanner.scanChunk(`${text}\n`, base);
        cutAt = text.length;
      } else if (cutAt > 0) base += scanner.scanChunk(text.slice(0, cutAt), base);
      carry = text.slice(cutAt);
      onProgress(size);
    }
    if (finished) break;
  }
  if (size === 0) throw new Error(`${name}: the log is empty`);
  scanner.end();
  scanner.lines += base;
  scanner.bytes += size;
  scanner.inputs.push(name);
  if (rank !== null) scanner.logRanks.set(name, rank);
}

// The report as Markdown for an issue thread; generator/diagnose/text.py render_markdown writes the same.
const MD_LABELS = { initiating: "initiating", independent: "also found", wrapper: "wrapper", collateral: "collateral", note: "note" };

// Where a line was printed: "file:line, rank 3, node07, <time>" (text.py `_where`).
export function where(e) {
  const parts = [`${e.file}:${e.line}`];
  if (e.rank !== null) parts.push(`rank ${e.rank}`);
  if (e.host) parts.push(e.host);
  if (e.time) parts.push(e.time);
  return parts.join(", ");
}

function mdSpan(ranks) {
  return ranks.length <= 8 ? ranks.join(", ") : `${ranks[0]}–${ranks[ranks.length - 1]} (${ranks.length} ranks)`;
}

function mdAt(report) {
  const rank = report.initiating_rank !== null ? `rank ${report.initiating_rank}` : "";
  return [rank, report.initiating_host || ""].filter((x) => x).join(", ");
}

function mdCell(text) {
  return text.replaceAll("\\", "\\\\").replaceAll("|", "\\|").replaceAll("\n", " ");
}

function mdFence(lines) {
  const longest = Math.max(0, ...lines.flatMap((line) => (line.match(/`+/g) || []).map((run) => run.length)));
  const fence = "`".repeat(Math.max(3, longest + 1));
  return [`${fence}text`, ...lines, fence];
}

// Control characters shown as symbols, as the terminal report does (text.py `visible`).
function mdVisible(text) {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => {
    const code = c.charCodeAt(0);
    if (code < 0x20) return String.fromCharCode(0x2400 + code);
    return code === 0x7f ? "\u2421" : `<${code.toString(16).toUpperCase().padStart(2, "0")}>`;
  });
}

export function reportMarkdown(report) {
  const out = [`**Trainwreck diagnosis** of ${report.inputs.length} log(s), ${report.lines.toLocaleString("en")} lines`, ""];
  const at = mdAt(report);
  if (report.initiating !== null) {
    out.push(`**Most likely cause${at ? ` on ${at}` : ""}: [${report.initiating.title}](${report.initiating.url})**`);
  } else if (report.findings.length && report.findings.every((f) => f.role === "note")) {
    out.push("No known failure found; the lines below are usually harmless or only leads.");
  } else if (at) {
    out.push(`**Failed first at ${at}**; the error that started it is not in the logs.`);
  } else if (report.findings.length) {
    out.push("No initiating failure found; what the logs show is below.");
  } else {
    out.push("No known failure found.");
  }
  if (report.findings.length) {
    out.push("", "| # | Role | Failure | Ranks | First at |", "|---|---|---|---|---|");
    report.findings.forEach((f, i) => {
      const ranks = f.ranks.length ? mdSpan(f.ranks) : "unknown";
      out.push(`| ${i + 1} | ${MD_LABELS[f.role]} | [${mdCell(f.title)}](${f.url}) | ${ranks} | ${mdCell(where(f.first))} |`);
    });
  }
  report.findings.forEach((f, i) => {
    const actedOn = f.role === "initiating" || f.role === "independent";
    if (!actedOn && i > 0) return;
    out.push("", `**${i + 1}. ${mdCell(f.title)}**`, "");
    out.push(...mdFence(f.evidence.slice(0, 3).map((e) => `${where(e)}: ${e.text}`)));
    if (actedOn) out.push("", `- **Fix:** ${f.fix}`, `- **Verify:** ${f.verify}`);
  });
  for (const u of report.unknown) {
    const pkg = u.package ? ` raised in ${u.package}` : "";
    out.push("", `**Not covered yet:** \`${u.exception}\`${pkg}, at ${where(u.evidence)}`, "");
    out.push(...mdFence([u.message ? `${u.exception}: ${u.message}` : u.exception, ...u.frames.map((f) => `  in ${f}`)]));
  }
  if (report.missing.length) out.push("", "**What would settle it:**", ...report.missing.map((fact) => `- ${fact}`));
  return `${mdVisible(out.join("\n"))}\n`;
}

// -- the rank timeline: the same SVG text as generator/diagnose/timeline.py, byte for byte -----------

const TL = RULES.TIMELINE;
const TL_TEXT = TL.text;
const TL_STYLE = { initiating: "initiating", independent: "failure", collateral: "collateral", wrapper: "collateral" };
const TL_DRAW_ORDER = { collateral: 0, failure: 1, initiating: 2 };
const DAYS_BEFORE = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
// XML 1.0 and HTML both refuse these; a file name or a host is shown with U+FFFD in their place.
const TL_UNSAFE = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff]/g;

function tlEsc(text) {
  return text.replace(TL_UNSAFE, "\ufffd").replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");
}

const tlCut = (text, n) => (Array.from(text).length <= n ? text : `${cut(text, n)}\u2026`);
const pad = (n, width) => String(n).padStart(width, "0");
const six = (order) => [...order, 0, 0, 0, 0, 0, 0].slice(0, 6);

// A timestamp as microseconds since the start of its year (the logs print no year).
function micro(order) {
  const [mo, d, h, mi, s, us] = six(order);
  const month = Math.min(Math.max(mo, 1), 12);
  return ((((DAYS_BEFORE[month - 1] + d - 1) * 24 + h) * 60 + mi) * 60 + s) * 1000000 + us;
}

function clock(order, dated, fine) {
  const [mo, d, h, mi, s, us] = six(order);
  const day = dated ? `${pad(mo, 2)}-${pad(d, 2)} ` : "";
  return `${day}${pad(h, 2)}:${pad(mi, 2)}:${pad(s, 2)}${fine ? `.${pad(Math.floor(us / 1000), 3)}` : ""}`;
}

function spanText(us) {
  if (us < 1000000) return `${Math.floor(us / 1000)} ms`;
  const seconds = Math.floor(us / 1000000);
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor(seconds / 60) % 60} min`;
}

const tlLabel = (key) => (key[0] === 0 ? `rank ${key[1]}` : tlCut(key[2], TL.label_chars));
const tlWho = (key) => (key[0] === 0 ? `rank ${key[1]}` : key[2]);
const tlId = (key) => key.join(":");
const sameKey = (a, b) => a !== null && b !== null && a[0] === b[0] && a[1] === b[1] && a[2] === b[2];

function tlTitles(findings) {
  const names = findings.slice(0, 2).map((f) => f.title).join("; ");
  return names + (findings.length > 2 ? ` and ${findings.length - 2} more` : "");
}

function tlShape(m, x, cy, row) {
  const tip = `<title>${tlEsc(`${row}: ${m.title}, ${where(m.e)}`)}</title>`;
  if (m.style === "initiating") {
    const points = `${x},${cy - 6} ${x + 6},${cy} ${x},${cy + 6} ${x - 6},${cy}`;
    return `<polygon class="tl-initiating" points="${points}" fill="currentColor">${tip}</polygon>`;
  }
  if (m.style === "failure") return `<rect class="tl-failure" x="${x - 4}" y="${cy - 4}" width="8" height="8" fill="currentColor">${tip}</rect>`;
  return `<circle class="tl-collateral" cx="${x}" cy="${cy}" r="4" fill="none" stroke="currentColor" stroke-width="1.5">${tip}</circle>`;
}

function tlLegend() {
  const [a, b, c, d] = TL_TEXT.legend;
  return [
    '<g class="tl-legend">',
    '<polygon class="tl-initiating" points="10,4 16,10 10,16 4,10" fill="currentColor"/>',
    `<text x="20" y="14">${tlEsc(a)}</text>`,
    '<rect class="tl-failure" x="88" y="6" width="8" height="8" fill="currentColor"/>',
    `<text x="100" y="14">${tlEsc(b)}</text>`,
    '<circle class="tl-collateral" cx="180" cy="10" r="4" fill="none" stroke="currentColor" stroke-width="1.5"/>',
    `<text x="188" y="14">${tlEsc(c)}</text>`,
    '<rect class="tl-missing" x="262" y="5" width="16" height="10" fill="none" stroke="currentColor" stroke-dasharray="4 3"/>',
    `<text x="282" y="14">${tlEsc(d)}</text>`,
    "</g>",
  ];
}

// The report's rank timeline as SVG text: where each finding first appeared on each rank (or host),
// and which ranks printed none of it; null when it would have fewer than two rows.
export function timelineSvg(report) {
  const [W, X0, X1, TOP, ROW] = [TL.width, TL.plot_left, TL.plot_right, TL.rows_top, TL.row_height];
  const drawn = report.findings.filter((f) => f.role !== "note");
  const init = report.initiating;
  // A launcher named the rank whose error names none ("local_rank: 5"): draw its line on that row.
  const fallback = init !== null && init.first.rank === null && report.initiating_rank !== null
    && !init.onsets.some((e) => e.rank === report.initiating_rank);
  const marks = new Map();
  const addMark = (key, mark) => {
    const id = tlId(key);
    if (!marks.has(id)) marks.set(id, { key, marks: [] });
    marks.get(id).marks.push(mark);
  };
  drawn.forEach((f, i) => {
    for (const e of f.onsets) {
      const key = onsetKey(e);
      if (key === null || (fallback && f.role === "initiating" && e.file === f.first.file && e.line === f.first.line)) continue;
      addMark(key, { e, style: TL_STYLE[f.role], title: f.title, finding: i });
    }
  });
  if (fallback) {
    const index = drawn.findIndex((f) => f.role === "initiating");
    addMark([0, report.initiating_rank, ""], { e: init.first, style: "initiating", title: init.title, finding: index });
  }
  if (!marks.size) return null;
  const keysOf = [...marks.values()].map((v) => v.key);
  const seen = new Set([...drawn.flatMap((f) => f.ranks), ...keysOf.filter((k) => k[0] === 0).map((k) => k[1])]);
  let top = -1;
  for (const r of [...seen, ...report.suspects]) if (r > top) top = r;
  const hosts = keysOf.filter((k) => k[0] === 1).sort(compareOnsetKeys);
  const total = top + 1 + hosts.length;
  if (total < 2) return null;
  const silentTotal = top + 1 - seen.size;
  // The first silent ranks, found without walking a range as long as the largest rank printed.
  const silent = [];
  for (let r = 0; r <= top && silent.length < TL.rows_shown; r++) if (!seen.has(r)) silent.push(r);
  const limit = TL.rows_shown;
  const marksOf = (key) => (marks.has(tlId(key)) ? marks.get(tlId(key)).marks : []);
  let keys;
  let hidden = 0;
  if (total <= limit) {
    keys = [...Array(top + 1).keys()].map((r) => [0, r, ""]).concat(hosts);
  } else {
    const tier = (key) => {
      const ms = marksOf(key);
      if (ms.some((m) => m.style === "initiating") || (key[0] === 0 && key[1] === report.initiating_rank)) return 0;
      if (!ms.length) return report.suspects.includes(key[1]) ? 1 : 2;
      return ms.some((m) => m.style === "failure") ? 3 : 4;
    };
    const pool = new Map(keysOf.map((k) => [tlId(k), k]));
    for (const r of silent) pool.set(tlId([0, r, ""]), [0, r, ""]);
    for (const r of report.suspects) if (!seen.has(r)) pool.set(tlId([0, r, ""]), [0, r, ""]);
    const ordered = [...pool.values()].sort((a, b) => tier(a) - tier(b) || compareOnsetKeys(a, b));
    // Silent rows take at most half the room while rows with marks are left out, and the rest when not.
    const quiet = ordered.filter((k) => tier(k) === 1 || tier(k) === 2);
    const loud = ordered.filter((k) => tier(k) !== 1 && tier(k) !== 2);
    const room = limit - 1;
    const take = Math.min(quiet.length, Math.max(Math.floor(room / 2), room - loud.length));
    keys = quiet.slice(0, take).concat(loud.slice(0, room - take)).sort(compareOnsetKeys);
    hidden = total - keys.length;
  }
  const rows = keys.map((k) => ({ key: k, marks: marksOf(k), silent: k[0] === 0 && !seen.has(k[1]) }));
  const visible = rows.flatMap((row) => row.marks);
  if (!visible.length) return null;
  const timed = visible.every((m) => m.e.order !== null);
  const at = (m) => (timed && m.e.order !== null ? micro(m.e.order) : m.e.line);
  let low = visible[0];
  let high = visible[0];
  for (const m of visible) {
    if (at(m) < at(low)) low = m;
    if (at(m) > at(high)) high = m;
  }
  const t0 = at(low);
  const t1 = at(high);
  const span = t1 - t0;
  const x = (m) => (span > 0 ? X0 + Math.floor(((at(m) - t0) * (X1 - X0)) / span) : X0);
  const dated = timed && low.e.order !== null && high.e.order !== null
    && (low.e.order[0] !== high.e.order[0] || low.e.order[1] !== high.e.order[1]);
  const fine = span < 60000000;
  const when = (e) => (timed && e.order !== null ? clock(e.order, dated, fine) : `line ${e.line} of ${e.file.split("/").pop()}`);

  // The words: who went first, who reported after it, who printed nothing.
  const noun = top >= 0 ? "rank" : "host";
  const said = [];
  if (init !== null) {
    const who = report.initiating_rank !== null ? `Rank ${report.initiating_rank}` : report.initiating_host || "An unnamed rank";
    said.push(fmt(TL_TEXT.first, { who, when: when(init.first), title: init.title }));
  } else if (report.initiating_rank !== null || report.initiating_host) {
    const who = report.initiating_rank !== null ? `Rank ${report.initiating_rank}` : report.initiating_host;
    said.push(fmt(TL_TEXT.placed, { who }));
  } else {
    const firstRow = rows.find((row) => row.marks.includes(low));
    said.push(fmt(TL_TEXT.earliest, { who: tlWho(firstRow.key), when: when(low.e) }));
  }
  const down = drawn.filter((f) => TL_STYLE[f.role] === "collateral");
  if (down.length) {
    let count = new Set(down.flatMap((f) => f.ranks)).size;
    const what = count ? "rank" : "host";
    count = count || new Set(down.flatMap((f) => f.hosts)).size;
    if (count) {
      const start = visible.filter((m) => m.style === "initiating").map(at);
      const later = visible.filter((m) => m.style === "collateral").map(at);
      const after = timed && start.length && later.length && Math.min(...start) <= Math.min(...later) ? " after it" : "";
      said.push(fmt(TL_TEXT.downstream, {
        count, noun: count === 1 ? what : `${what}s`, verb: count === 1 ? "reports" : "report", after, titles: tlTitles(down),
      }));
    }
  }
  const also = drawn.filter((f) => f.role === "independent");
  if (also.length) said.push(fmt(TL_TEXT.also, { titles: tlTitles(also) }));
  if (silentTotal) {
    let names = silent.slice(0, TL.named).join(", ");
    if (silentTotal > TL.named) names += ` and ${silentTotal - TL.named} more`;
    said.push(fmt(TL_TEXT.silent, { Noun: silentTotal === 1 ? "Rank" : "Ranks", names }));
  }
  if (hidden) said.push(fmt(TL_TEXT.shown, { shown: keys.length, total }));
  const caption = timed ? fmt(TL_TEXT.timed, { span: spanText(span) }) : TL_TEXT.untimed;
  said.push(caption);

  // The row of the rank (or host) the report names as where the job failed first is labelled in bold.
  const lead = report.initiating_rank !== null ? [0, report.initiating_rank, ""] : report.initiating_host ? [1, 0, report.initiating_host] : null;
  const countRows = rows.length + (hidden ? 1 : 0);
  const height = TOP + countRows * ROW + 20;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" role="img" aria-labelledby="timeline-title timeline-desc" viewBox="0 0 ${W} ${height}" width="100%" fill="currentColor" font-family="system-ui, sans-serif" font-size="10">`,
    `<title id="timeline-title">${tlEsc(fmt(TL_TEXT.title, { Noun: noun[0].toUpperCase() + noun.slice(1), noun }))}</title>`,
    `<desc id="timeline-desc">${tlEsc(said.join(" "))}</desc>`,
    ...tlLegend(),
  ];
  const [startLabel, endLabel] = timed && low.e.order !== null && high.e.order !== null
    ? [clock(low.e.order, dated, fine), clock(high.e.order, dated, fine)] : [`line ${t0}`, `line ${t1}`];
  out.push('<g class="tl-axis">', `<text x="${X0}" y="30">${tlEsc(startLabel)}</text>`);
  if (span > 0) out.push(`<text x="${X1}" y="30" text-anchor="end">${tlEsc(endLabel)}</text>`);
  out.push(`<line x1="${X0}" y1="34" x2="${X1}" y2="34" stroke="currentColor"/>`, "</g>");
  rows.forEach((row, i) => {
    const y = TOP + i * ROW;
    const cy = y + Math.floor(ROW / 2);
    const attribute = row.key[0] === 0 ? `data-rank="${row.key[1]}"` : `data-host="${tlEsc(row.key[2])}"`;
    out.push(`<g class="tl-row${row.silent ? " tl-silent" : ""}" ${attribute}>`);
    out.push(`<text x="4" y="${y + 12}"${sameKey(row.key, lead) ? ' font-weight="bold"' : ""}>${tlEsc(tlLabel(row.key))}</text>`);
    if (row.silent) {
      out.push(`<rect class="tl-missing" x="${X0}" y="${y + 2}" width="${X1 - X0}" height="12" fill="none" stroke="currentColor" stroke-dasharray="4 3"/>`);
      out.push(`<text x="${Math.floor((X0 + X1) / 2)}" y="${y + 11}" text-anchor="middle" font-size="9">${tlEsc(TL_TEXT.no_line)}</text>`);
    } else {
      out.push(`<line class="tl-grid" x1="${X0}" y1="${cy}" x2="${X1}" y2="${cy}" stroke="currentColor" stroke-opacity="0.3"/>`);
    }
    const ordered = [...row.marks].sort((a, b) => TL_DRAW_ORDER[a.style] - TL_DRAW_ORDER[b.style] || at(a) - at(b) || a.finding - b.finding);
    for (const m of ordered) out.push(tlShape(m, x(m), cy, tlWho(row.key)));
    out.push("</g>");
  });
  if (hidden) {
    const y = TOP + rows.length * ROW;
    const hiddenHosts = hosts.length - keys.filter((k) => k[0] === 1).length;
    const what = hiddenHosts === hidden ? "host" : hiddenHosts === 0 ? "rank" : "row";
    const more = fmt(TL_TEXT.more, { count: hidden, noun: hidden === 1 ? what : `${what}s` });
    out.push(`<g class="tl-row tl-more"><text x="4" y="${y + 12}">${tlEsc(more)}</text></g>`);
  }
  out.push(`<text class="tl-caption" x="4" y="${TOP + countRows * ROW + 14}">${tlEsc(caption)}</text>`, "</svg>");
  return out.join("\n");
}
