// Runs a diagnosis off the main thread: reads files in slices, scans them, posts progress and the report.
import { Scanner, buildReport, fileOrigin, parseIndex } from "./diagnose-core.js";

const SLICE = 4 << 20;

async function scanText(scanner, text, name, fileIndex, rank, host) {
  const lines = scanner.scanChunk(text, name, fileIndex, 0, rank, host);
  scanner.lines += lines;
  scanner.bytes += new TextEncoder().encode(text).length;
  scanner.inputs.push(name);
}

async function scanFile(scanner, file, fileIndex, done, total) {
  const [rank, host] = fileOrigin(file.name);
  let stream = file.stream();
  if (file.name.endsWith(".gz")) stream = stream.pipeThrough(new DecompressionStream("gzip"));
  const reader = stream.getReader();
  const decoder = new TextDecoder("utf-8");
  let carry = "";
  let base = 0;
  let size = 0;
  let pending = "";
  for (;;) {
    let next;
    try {
      next = await reader.read();
    } catch (error) {
      throw new Error(`${file.name}: cannot be read as ${file.name.endsWith(".gz") ? "gzip" : "a log"} (${error.message})`);
    }
    const { value, done: finished } = next;
    if (value) {
      if (size === 0 && value.subarray(0, 8192).includes(0)) throw new Error(`${file.name}: this is a binary file, not a text log`);
      size += value.length;
      pending += decoder.decode(value, { stream: true });
    }
    if (finished) pending += decoder.decode();
    // Scan in slices of whole lines, so memory stays flat whatever the size of the file.
    if (pending.length >= SLICE || finished) {
      const text = carry + pending;
      pending = "";
      const cut = finished ? text.length : text.lastIndexOf("\n") + 1;
      carry = text.slice(cut);
      if (cut > 0) base += scanner.scanChunk(text.slice(0, cut), file.name, fileIndex, base, rank, host);
      postMessage({ type: "progress", done: done + Math.min(size, file.size), total });
    }
    if (finished) break;
  }
  if (size === 0) throw new Error(`${file.name}: the log is empty`);
  scanner.lines += base;
  scanner.bytes += size;
  scanner.inputs.push(file.name);
  if (rank !== null) scanner.logRanks.set(file.name, rank);
}

onmessage = async (event) => {
  const { indexUrl, files, text } = event.data;
  try {
    const response = await fetch(indexUrl);
    if (!response.ok) throw new Error(`could not load the signature index (${response.status})`);
    const scanner = new Scanner(parseIndex(await response.text()));
    const problems = [];
    if (text) {
      await scanText(scanner, text, "pasted log", 0, null, null);
    } else {
      const total = files.reduce((sum, f) => sum + f.size, 0);
      let done = 0;
      for (const [i, file] of files.entries()) {
        try {
          await scanFile(scanner, file, i, done, total);
        } catch (error) {
          problems.push(error.message);
        }
        done += file.size;
      }
    }
    postMessage({ type: "report", report: buildReport(scanner), problems });
  } catch (error) {
    postMessage({ type: "error", message: String(error.message || error) });
  }
};
