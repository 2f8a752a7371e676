// Readability.js with jsdom over pages listed on stdin (one `PATH<TAB>URL` a line): one JSON
// line each on stdout, {"text": ..., "ms": ...}, each page decoded as UTF-8 as the benchmark does.
// The one argument is the folder whose node_modules holds jsdom and @mozilla/readability.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { createInterface } from "node:readline";

const require = createRequire(join(process.argv[2], "package.json"));
const { JSDOM, VirtualConsole } = require("jsdom");
const { Readability } = require("@mozilla/readability");

const quiet = new VirtualConsole();
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const [path, url] = line.split("\t");
  const html = readFileSync(path).toString("utf8");
  const started = performance.now();
  let text = "";
  try {
    const dom = new JSDOM(html, { url, virtualConsole: quiet });
    const article = new Readability(dom.window.document).parse();
    text = article?.textContent ?? "";
    dom.window.close();
  } catch {
    text = "";
  }
  const ms = performance.now() - started;
  process.stdout.write(JSON.stringify({ text, ms }) + "\n");
}
