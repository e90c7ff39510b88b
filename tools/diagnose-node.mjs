// Runs the browser's diagnosis engine under Node, for the test suite's parity checks.
//   node diagnose-node.mjs INDEX LOG…        one report: {"report": …, "problems": […]}
//   node diagnose-node.mjs INDEX --batch F   F is a JSON list of log lists; prints a list of those
//   TRAINWRECK_MARKDOWN=1 adds each report as Markdown ("markdown"), as the page's Copy button writes it
// The engine is imported from the folder in TRAINWRECK_STATIC (a built site's static/, which holds
// the generated diagnose-rules.js beside diagnose-core.js).
import { openAsBlob } from "node:fs";
import { readFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";

const core = await import(pathToFileURL(`${process.env.TRAINWRECK_STATIC}/diagnose-core.js`).href);
const [indexPath, ...rest] = process.argv.slice(2);
const signatures = core.parseIndex(await readFile(indexPath, "utf8"));

async function run(logs) {
  const scanner = new core.Scanner(signatures);
  const problems = [];
  for (const path of logs) {
    try {
      await core.scanFile(scanner, await openAsBlob(path), path);
    } catch (error) {
      problems.push(error.message);
      scanner.file = null;
    }
  }
  const report = core.buildReport(scanner);
  return process.env.TRAINWRECK_MARKDOWN ? { report, problems, markdown: core.reportMarkdown(report) } : { report, problems };
}

if (rest[0] === "--batch") {
  const jobs = JSON.parse(await readFile(rest[1], "utf8"));
  const out = [];
  for (const logs of jobs) out.push(await run(logs));
  process.stdout.write(JSON.stringify(out));
} else {
  process.stdout.write(JSON.stringify(await run(rest)));
}
