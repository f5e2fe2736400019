#!/usr/bin/env node
// mcp2-server: an MCP server built with the official server of the
// 2026-07-28 line, @modelcontextprotocol/server (2.x), for ruleagent's mcp
// tool type to connect to (tools/mcp/peers2_test.go). It serves both eras,
// one factory for both, as the SDK recommends.
//
// Usage:
//   node mcp2-server.mjs stdio
//   PORT=n node mcp2-server.mjs http     (listens on 127.0.0.1:n, path /mcp)
//
// Tools:
//   echo {message}   "Echo: <message>"
//   count            three progress reports (total 3, the second with a
//                    message), then "counted"
//   greet            asks "What is your name?" (input_required), then
//                    "Hello, <name>!"
//   structured       structuredContent that is an array, and a resource link
//   grow             adds the tool "late" and announces tools/list_changed
//   late             (after grow) "I was added later"
//   trace            the W3C trace context the call came with, as JSON:
//                    {"meta": _meta.traceparent, "header": the HTTP
//                    request's traceparent header (http only)}
import http from "node:http";
import { AsyncLocalStorage } from "node:async_hooks";
import { McpServer, createMcpHandler, fromJsonSchema, inputRequired, acceptedContent } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";

const noArgs = fromJsonSchema({ type: "object", properties: {} });
const text = (t) => ({ content: [{ type: "text", text: t }] });

// The HTTP request a tool call came in, for the trace tool.
const httpRequest = new AsyncLocalStorage();

let grown = false;
let announce = () => {};

function factory() {
  const server = new McpServer({ name: "peer2-server", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
  server.registerTool("echo", {
    description: "Echoes the message",
    inputSchema: fromJsonSchema({ type: "object", properties: { message: { type: "string" } }, required: ["message"] }),
  }, async ({ message }) => text(`Echo: ${message}`));
  server.registerTool("count", { description: "Counts to three, reporting progress", inputSchema: noArgs }, async (_args, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    if (token !== undefined) {
      for (let i = 1; i <= 3; i++) {
        const params = { progressToken: token, progress: i, total: 3 };
        if (i === 2) params.message = "halfway";
        await ctx.mcpReq.notify({ method: "notifications/progress", params });
      }
    }
    return text("counted");
  });
  server.registerTool("greet", { description: "Asks your name, then greets you", inputSchema: noArgs }, async (_args, ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses, "user_name");
    if (!answer) {
      return inputRequired({ inputRequests: { user_name: inputRequired.elicit({
        message: "What is your name?",
        requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
      }) } });
    }
    return text(`Hello, ${answer.name}!`);
  });
  server.registerTool("structured", { description: "Returns an array as structured content, and a link", inputSchema: noArgs }, async () => ({
    content: [{ type: "resource_link", uri: "file:///data/report.csv", name: "report.csv", title: "The report", mimeType: "text/csv", size: 2048 }],
    structuredContent: [1, "two", { three: 3 }],
  }));
  server.registerTool("trace", { description: "Tells the trace context the call came with", inputSchema: noArgs }, async (_args, ctx) => text(JSON.stringify({
    meta: ctx.mcpReq._meta?.traceparent ?? "",
    header: httpRequest.getStore()?.headers?.traceparent ?? "",
  })));
  server.registerTool("grow", { description: "Adds the tool late", inputSchema: noArgs }, async () => {
    grown = true;
    announce();
    return text("grown");
  });
  if (grown) {
    server.registerTool("late", { description: "Added after start", inputSchema: noArgs }, async () => text("I was added later"));
  }
  return server;
}

// serve answers node:http requests with the web-standard handler.
async function serve(handler, req, res) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = chunks.length ? Buffer.concat(chunks) : undefined;
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
  const controller = new AbortController();
  res.on("close", () => controller.abort());
  const response = await handler.fetch(new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method, headers, body: req.method === "GET" || req.method === "HEAD" ? undefined : body, signal: controller.signal,
  }));
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) return res.end();
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch {
    // the client went away
  }
  res.end();
}

const mode = process.argv[2];
if (mode === "stdio") {
  serveStdio(factory);
} else if (mode === "http") {
  const handler = createMcpHandler(factory);
  announce = () => handler.notify.toolsChanged();
  http.createServer((req, res) => {
    httpRequest.run(req, () => serve(handler, req, res)).catch((err) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  }).listen(Number(process.env.PORT), "127.0.0.1");
} else {
  console.error("usage: mcp2-server.mjs stdio | http (PORT from the environment)");
  process.exit(2);
}
