// Mermaid's own parser over charts given as a JSON list on stdin: prints a JSON list of
// {ok, type} or {ok: false, error}. mermaid needs a DOM to load: jsdom gives it one. mermaid
// is the package's own bundle (every dependency in it), unpacked from its tarball.
import { readFileSync } from "node:fs";
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("./mermaid/package/dist/mermaid.esm.min.mjs");
const charts = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const chart of charts) {
  try {
    const parsed = await mermaid.parse(chart);
    results.push({ ok: true, type: parsed.diagramType });
  } catch (error) {
    results.push({ ok: false, error: String(error?.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
