#!/usr/bin/env node
// mcp2-client: drives ruleagent's MCP server with the official client of
// the 2026-07-28 line, @modelcontextprotocol/client (2.x), pinned to the
// stateless revision, over streamable HTTP or stdio, and reports what it
// saw. The Go tests (server/mcp_peer2_test.go, cmd/ruleagent/mcp_test.go)
// judge the report; this script only records.
//
// Usage:
//   node mcp2-client.mjs http URL               [--ask]
//   node mcp2-client.mjs stdio COMMAND [ARG...] [--ask]
// --ask adds the "greet" step, for a server whose chain "greet" asks for a
// name through the input hook.
//
// It prints one JSON object per line, {"step": name, ...}:
//   init      negotiated protocol version, server info and capabilities
//   tools     tools/list: name, title, description, inputSchema
//   helper    calling "helper" with a message
//   progress  calling "reader" with a progress callback: the reports and the
//             result
//   greet     (--ask) calling "greet": the questions the elicitation handler
//             was asked (it answers {"name": "Ada"}) and the result
//   listen    subscriptions/listen for tool changes: the honoured filter;
//             save_rule_chain of a new agent "poet"; whether
//             tools/list_changed arrived; the tools after it; poet's answer
//   done
// On failure: {"step": "error", "message": ...} and exit code 1.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const report = (step, fields = {}) => process.stdout.write(JSON.stringify({ step, ...fields }) + "\n");

const args = process.argv.slice(2);
const ask = args.includes("--ask");
const [mode, target, ...rest] = args.filter((a) => a !== "--ask");

function transport() {
  if (mode === "http" && target) return new StreamableHTTPClientTransport(new URL(target));
  if (mode === "stdio" && target) return new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: "inherit" });
  throw new Error("usage: mcp2-client.mjs http URL | stdio COMMAND [ARG...] [--ask]");
}

const poet = {
  ruleChain: { name: "Poet", additionalInfo: { description: "Writes poems." } },
  metadata: {
    nodes: [{ id: "agent", type: "ai/agent", name: "Agent",
      configuration: { url: "${global.llm_url}", model: "${global.model}", key: "sk-test", systemPrompt: "You are helper." } }],
    connections: [],
  },
};

async function main() {
  const client = new Client({ name: "ruleagent-peer2-test", version: "1.0.0" }, {
    capabilities: { elicitation: {} },
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  const asked = [];
  client.setRequestHandler("elicitation/create", async (request) => {
    asked.push({ message: request.params.message, requestedSchema: request.params.requestedSchema });
    return { action: "accept", content: { name: "Ada" } };
  });
  let listChanged = 0;
  client.setNotificationHandler("notifications/tools/list_changed", () => { listChanged++; });
  await client.connect(transport());
  report("init", { version: client.getNegotiatedProtocolVersion(), server: client.getServerVersion(), capabilities: client.getServerCapabilities() });

  const { tools } = await client.listTools();
  report("tools", { tools: tools.map(({ name, title, description, inputSchema }) => ({ name, title, description, inputSchema })) });

  report("helper", { result: await client.callTool({ name: "helper", arguments: { message: "hello from node" } }) });

  const notes = [];
  const result = await client.callTool({ name: "reader", arguments: { message: "What do the notes say?" } }, { onprogress: (p) => notes.push(p) });
  report("progress", { notes, result });

  if (ask) {
    const greeted = await client.callTool({ name: "greet", arguments: {} });
    report("greet", { asked, result: greeted });
  }

  const subscription = await client.listen({ toolsListChanged: true });
  const saved = await client.callTool({ name: "save_rule_chain", arguments: { id: "poet", dsl: poet } });
  const deadline = Date.now() + 5000;
  while (listChanged === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const names = (await client.listTools()).tools.map((t) => t.name);
  const poem = await client.callTool({ name: "poet", arguments: { message: "a poem" } });
  await subscription.close();
  report("listen", { honored: subscription.honoredFilter, result: saved, listChanged, tools: names, poem });

  await client.close();
  report("done");
}

main().then(() => process.exit(0), (err) => {
  report("error", { message: String(err?.stack ?? err) });
  process.exit(1);
});
