// Runs a diagnosis off the main thread: reads files in slices, scans them, posts progress and the report.
import { Scanner, buildReport, parseIndex, scanFile, scanText } from "./diagnose-core.js";

onmessage = async (event) => {
  const { indexUrl, files, text } = event.data;
  try {
    const response = await fetch(indexUrl);
    if (!response.ok) throw new Error(`could not load the signature index (${response.status})`);
    const scanner = new Scanner(parseIndex(await response.text()));
    const problems = [];
    if (text) {
      scanText(scanner, text, "pasted log");
    } else {
      const total = files.reduce((sum, f) => sum + f.size, 0);
      let done = 0;
      // Timed from the first byte read, not from loading the index, so the page's MB/s is the scan's.
      const started = performance.now();
      for (const file of files) {
        try {
          await scanFile(scanner, file, file.name, (size) => {
            const seconds = (performance.now() - started) / 1000;
            postMessage({ type: "progress", done: done + Math.min(size, file.size), total, seconds });
          });
        } catch (error) {
          problems.push(error.message);
          scanner.file = null;
        }
        done += file.size;
      }
    }
    postMessage({ type: "report", report: buildReport(scanner), problems });
  } catch (error) {
    postMessage({ type: "error", message: String(error.message || error) });
  }
};
