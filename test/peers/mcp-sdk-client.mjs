#!/usr/bin/env node
// mcp-sdk-client: drives ruleagent's MCP server with the official
// @modelcontextprotocol/sdk client, over streamable HTTP or stdio, and
// reports what it saw. The Go tests (server/mcp_peer_test.go,
// cmd/ruleagent/mcp_test.go) judge the report; this script only records.
//
// Usage:
//   node mcp-sdk-client.mjs http URL               (MCP_TOKEN: bearer token)
//   node mcp-sdk-client.mjs stdio COMMAND [ARG...] (the server's stderr is
//                                                   passed through)
//
// It prints one JSON object per line, {"step": name, ...}, in this order:
//   init          server info and negotiated protocol version
//   tools         tools/list: name, title, description, inputSchema
//   helper        calling "helper" with a message
//   progress      calling "reader" with a progressToken: the notifications
//                 and the result
//   save          save_rule_chain of a new agent "poet", whether
//                 tools/list_changed arrived, the tools after it, and poet's
//                 answer
//   save-invalid  save_rule_chain of a broken "helper"
//   after-invalid calling "helper" again
//   list, get     list_rule_chains, get_rule_chain {id: "upper"}
//   parallel      four calls to "reader" at once, each with a progressToken:
//                 for each, the progress it saw and its result
//   cancel-wait   the call to "slow" is in flight; the script then waits for
//                 the line "cancel" on stdin and aborts the call
//   cancel        how the aborted call ended; the script then waits for the
//                 line "drained" (the server has ended the cancelled run)
//   done          with "errors": what the SDK reported through onerror, such
//                 as progress for a call already answered ("unknown token")
//                 or a response to the cancelled call ("unknown message ID")
// The cancelled call comes last: the SDK gives up on it at once, while the
// server may still be finishing it, and mcp-go v1.2.1 hands a session's
// notifications to whichever of its requests is open, so a tools/list_changed
// sent meanwhile could be lost on the abandoned stream.
// On failure: {"step": "error", "message": ...} and exit code 1.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const report = (step, fields = {}) => process.stdout.write(JSON.stringify({ step, ...fields }) + "\n");

const stdinLines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

function transportFor(argv) {
  const [mode, target, ...rest] = argv;
  if (mode === "http" && target) {
    const headers = process.env.MCP_TOKEN ? { Authorization: `Bearer ${process.env.MCP_TOKEN}` } : {};
    return new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
  }
  if (mode === "stdio" && target) {
    return new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: "inherit" });
  }
  throw new Error("usage: mcp-sdk-client.mjs http URL | stdio COMMAND [ARG...]");
}

const withTimeout = (promise, ms, what) =>
  Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms))]);

const poet = {
  ruleChain: { name: "Poet", additionalInfo: { description: "Writes poems." } },
  metadata: {
    nodes: [{ id: "agent", type: "ai/agent", name: "Agent",
      configuration: { url: "${global.llm_url}", model: "${global.model}", key: "sk-test", systemPrompt: "You are helper." } }],
    connections: [],
  },
};

async function main() {
  const client = new Client({ name: "ruleagent-peer-test", version: "1.0.0" });
  let listChanged = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged++; });
  const errors = [];
  client.onerror = (e) => errors.push(String(e?.message ?? e));
  await client.connect(transportFor(process.argv.slice(2)));
  report("init", { server: client.getServerVersion(), capabilities: client.getServerCapabilities() });

  const { tools } = await client.listTools();
  report("tools", { tools: tools.map(({ name, title, description, inputSchema }) => ({ name, title, description, inputSchema })) });

  report("helper", { result: await client.callTool({ name: "helper", arguments: { message: "hello from node" } }) });

  const notes = [];
  const result = await client.callTool({ name: "reader", arguments: { message: "What do the notes say?" } }, undefined,
    { onprogress: (p) => notes.push(p) });
  report("progress", { notes, result });

  const saved = await client.callTool({ name: "save_rule_chain", arguments: { id: "poet", dsl: poet } });
  const deadline = Date.now() + 5000;
  while (listChanged === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const names = (await client.listTools()).tools.map((t) => t.name);
  const poem = await client.callTool({ name: "poet", arguments: { message: "a poem" } });
  report("save", { result: saved, listChanged, tools: names, poem });

  const broken = { ruleChain: { id: "helper", name: "Broken" }, metadata: { nodes: [{ id: "x", type: "no/such", configuration: {} }] } };
  report("save-invalid", { result: await client.callTool({ name: "save_rule_chain", arguments: { dsl: broken } }) });
  report("after-invalid", { result: await client.callTool({ name: "helper", arguments: { message: "still there?" } }) });

  report("list", { result: await client.callTool({ name: "list_rule_chains", arguments: {} }) });
  report("get", { result: await client.callTool({ name: "get_rule_chain", arguments: { id: "upper" } }) });

  const parallel = await Promise.all([0, 1, 2, 3].map(async () => {
    const notes = [];
    const result = await client.callTool({ name: "reader", arguments: { message: "What do the notes say?" } }, undefined,
      { onprogress: (p) => notes.push(p) });
    return { notes, result };
  }));
  report("parallel", { calls: parallel });

  const abort = new AbortController();
  const slow = client.callTool({ name: "slow", arguments: { message: "take your time" } }, undefined, { signal: abort.signal })
    .then((r) => ({ resolved: r }), (e) => ({ rejected: String(e?.name ?? "") + ": " + String(e?.message ?? e) }));
  report("cancel-wait");
  const line = await withTimeout(stdinLines.next(), 20000, "the cancel line on stdin");
  if (line.value?.trim() !== "cancel") throw new Error(`expected "cancel" on stdin, got ${JSON.stringify(line.value)}`);
  abort.abort("the test cancels");
  report("cancel", await withTimeout(slow, 10000, "the aborted call to end"));
  const drained = await withTimeout(stdinLines.next(), 20000, "the drained line on stdin");
  if (drained.value?.trim() !== "drained") throw new Error(`expected "drained" on stdin, got ${JSON.stringify(drained.value)}`);

  await client.close();
  report("done", { errors });
}

main().then(() => process.exit(0), (err) => {
  report("error", { message: String(err?.stack ?? err) });
  process.exit(1);
});
