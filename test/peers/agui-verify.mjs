#!/usr/bin/env node
// agui-verify: runs AG-UI event streams through the real @ag-ui/client
// validation pipeline, in the order HttpAgent applies it:
//
//   SSE transport (transformHttpEventStream) -> CompatibilityBoundary ->
//   enforceEvents -> transformChunks -> verifyEvents
//
// Only the reducer (apply stage) is left out: it judges state, not the stream.
//
// The client only WARNS (console.warn) when it strips an unknown field, drops
// an unknown event or converts a deprecated shape, and then carries on. We
// never want to produce any of those, so a warning is a rejection here.
//
// Usage:
//   node agui-verify.mjs [file]          one event (JSON text) per line;
//                                        exit 0 accepted, 1 rejected (reason on
//                                        stderr), 2 the harness itself failed.
//   node agui-verify.mjs --batch [file]  one stream per line, as a JSON array of
//                                        event texts (strings, so even invalid
//                                        JSON reaches the client's own parser);
//                                        prints one JSON verdict per line,
//                                        {"accepted":bool,"error"?:string}, exit 0.
// Input comes from stdin when no file is given.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const require = createRequire(import.meta.url);
let client;
let rxjs;
try {
  client = require("@ag-ui/client");
  // The rxjs copy the client itself resolves, so the Observables we build are
  // the same implementation its operators expect.
  rxjs = createRequire(require.resolve("@ag-ui/client"))("rxjs");
} catch (err) {
  process.stderr.write(
    `agui-verify: cannot load @ag-ui/client (${err.message}); run: npm ci --prefix test/peers\n`,
  );
  process.exit(2);
}
const {
  CompatibilityBoundary,
  enforceEvents,
  transformChunks,
  verifyEvents,
  transformHttpEventStream,
} = client;

// The client reads this on every warning; if the caller's environment sets it,
// the very deviations we are here to catch would be silenced.
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

// Frames one event's text the way a Go SSE writer does: `data: <json>\n\n`.
// A text spanning several lines becomes several data lines, which the client's
// parser joins back with "\n" (that is the SSE rule, and what a server must do
// with a payload it has not compacted).
function sseFrame(text) {
  return text.split("\n").map((line) => `data: ${line}`).join("\n") + "\n\n";
}

function describeError(err) {
  if (err && Array.isArray(err.issues)) {
    // ZodError: one line per issue, "path: message", as the enforce stage saw it.
    const issues = err.issues.map((issue) => {
      const path = (issue.path ?? []).join(".");
      return path ? `${path}: ${issue.message}` : issue.message;
    });
    return `ZodError: ${issues.join("; ")}`;
  }
  return err instanceof Error ? err.message : String(err);
}

// Runs one stream (an array of event texts) and resolves to a verdict.
async function verifyStream(texts) {
  const encoder = new TextEncoder();
  const httpEvents = [
    {
      type: "headers",
      status: 200,
      headers: new Headers({ "content-type": "text/event-stream" }),
    },
    ...texts.map((text) => ({ type: "data", data: encoder.encode(sseFrame(text)) })),
  ];
  // Asynchronous like a real response body: the transport pushes into a plain
  // Subject, so anything emitted before the pipeline subscribes would be lost.
  const body$ = rxjs.from(httpEvents).pipe(rxjs.subscribeOn(rxjs.asapScheduler));

  // Index and type of the event being processed, so warnings and errors can
  // say which event caused them (each stage handles one event synchronously).
  let current = { index: -1, type: "" };
  const warnings = [];
  const originalWarn = console.warn;
  console.warn = (...args) => {
    const where = current.index >= 0 ? `event ${current.index} (${current.type}): ` : "";
    warnings.push(where + args.map(String).join(" "));
  };

  const input = { threadId: "thread", runId: "run", messages: [], tools: [], context: [] };
  const wire = {
    run: () =>
      transformHttpEventStream(body$).pipe(
        rxjs.tap({
          next: (event) => {
            current = { index: current.index + 1, type: String(event.type) };
          },
          // A transport error is about the frame AFTER the last one decoded.
          error: () => {
            current = { index: current.index + 1, type: "undecodable frame" };
          },
        }),
      ),
  };
  const pipeline$ = new CompatibilityBoundary()
    .run(input, wire)
    .pipe(enforceEvents(), transformChunks(), verifyEvents(), rxjs.toArray());

  try {
    await rxjs.lastValueFrom(pipeline$);
  } catch (err) {
    const where = current.index >= 0 ? `event ${current.index} (${current.type}): ` : "";
    const extra = warnings.length ? ` [warnings: ${warnings.join(" | ")}]` : "";
    return { accepted: false, error: where + describeError(err) + extra };
  } finally {
    console.warn = originalWarn;
  }
  if (warnings.length) {
    return { accepted: false, error: `accepted with warnings: ${warnings.join(" | ")}` };
  }
  return { accepted: true };
}

function readInput(path) {
  return path ? readFileSync(path, "utf8") : readFileSync(0, "utf8");
}

async function main() {
  const args = process.argv.slice(2);
  const batch = args[0] === "--batch";
  const file = batch ? args[1] : args[0];
  const lines = readInput(file)
    .split("\n")
    .filter((line) => line.trim() !== "");

  if (!batch) {
    const verdict = await verifyStream(lines);
    if (!verdict.accepted) {
      process.stderr.write(verdict.error + "\n");
      process.exit(1);
    }
    return;
  }
  const out = [];
  for (const [n, line] of lines.entries()) {
    let texts;
    try {
      texts = JSON.parse(line);
    } catch (err) {
      throw new Error(`batch line ${n + 1} is not JSON: ${err.message}`);
    }
    if (!Array.isArray(texts) || texts.some((text) => typeof text !== "string")) {
      throw new Error(`batch line ${n + 1} is not an array of event texts`);
    }
    out.push(JSON.stringify(await verifyStream(texts)));
  }
  process.stdout.write(out.map((line) => line + "\n").join(""));
}

main().catch((err) => {
  process.stderr.write(`agui-verify: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
});
