// `rss mcp` driven by the official TypeScript SDK's client over stdio (the client behind
// most MCP hosts). Run by tests/integration/mcp_ts.rs with:
//   NODE_PATH=<node_modules> node tests/mcp_client.mjs
// and RSS_BIN, RSS_CACHE_DIR, FEED_URL, COOL_URL, TOOLS (comma-separated names) in the
// environment. Prints one JSON object of findings on stdout; exits non-zero on a failure.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH, "x.js"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const env = { ...process.env, RSS_CACHE_DIR: process.env.RSS_CACHE_DIR };
const transport = new StdioClientTransport({
  command: process.env.RSS_BIN,
  args: ["mcp", "--call-timeout", process.env.CALL_TIMEOUT || "50"],
  env,
  stderr: process.env.RSS_STDERR_LOG ? "pipe" : "ignore",
});
if (process.env.RSS_STDERR_LOG) {
  transport.stderr?.on("data", (d) => process.stderr.write(d));
}
const client = new Client({ name: "rss-ts-test", version: "1.0.0" });
await client.connect(transport);
const found = {};

// A result's JSON is its last text block; an error's object is that, or its first `errors`.
const errorOf = (r) => {
  const v = JSON.parse(r.content[r.content.length - 1].text);
  return v.errors ? v.errors[0] : v;
};

const tools = await client.listTools();
found.tools = tools.tools.map((t) => t.name);
const want = process.env.TOOLS.split(",");
if (JSON.stringify(found.tools) !== JSON.stringify(want)) {
  throw new Error(`tools ${found.tools} != ${want}`);
}

const ok = await client.callTool({ name: "fetch_feed", arguments: { url: process.env.FEED_URL } });
found.feed_status = ok.structuredContent?.feeds?.[0]?.status;

// A host that refuses with Retry-After: 8 and then never answers. The server waits the
// 8 s out (they fit the call) and asks again, and no answer comes before the call's
// --call-timeout. The client gives up after CLIENT_TIMEOUT_MS without progress; the
// server's heartbeats reset that clock, and the server answers by its own deadline, with
// the wait, instead of the client's opaque "Request timed out".
const progress = [];
const started = Date.now();
let second;
try {
  second = await client.callTool(
    { name: "fetch_feed", arguments: { url: process.env.COOL_URL } },
    undefined,
    {
      timeout: Number(process.env.CLIENT_TIMEOUT_MS),
      resetTimeoutOnProgress: true,
      onprogress: (p) => progress.push(p),
    },
  );
} catch (e) {
  found.slow_error = String(e);
}
found.slow_ms = Date.now() - started;
found.progress = progress.length;
found.messages = progress.map((p) => p.message);
found.progress_increases = progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress);
if (second) {
  found.slow_code = second.isError ? errorOf(second).code : second.structuredContent?.feeds?.[0]?.status;
  if (second.isError) {
    found.slow_retry_after_ms = errorOf(second).details.retry_after_ms;
  }
}

// A call's own timeout_seconds, shorter than the wait the host still asks for: answered
// at once with that wait, nothing sent.
await client.callTool({ name: "fetch_feed", arguments: { url: process.env.COOL2_URL } });
const t0 = Date.now();
const quick = await client.callTool({
  name: "fetch_feed",
  arguments: { url: process.env.COOL2_URL, timeout_seconds: 2 },
});
found.quick_ms = Date.now() - t0;
found.quick_code = quick.isError ? errorOf(quick).code : "ok";

await client.close();
console.log(JSON.stringify(found));
