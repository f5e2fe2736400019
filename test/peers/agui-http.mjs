#!/usr/bin/env node
// agui-http: drives a ruleagent AG-UI endpoint with the real @ag-ui/client
// HttpAgent, the way a CopilotKit-style front end does, and reports what it
// saw. The client's whole pipeline runs (SSE parsing, the compatibility
// boundary, event verification, the state reducer); a warning it prints
// (console.warn: an unknown field stripped, an unknown event dropped) is a
// failure, as is any error.
//
// Input (stdin), JSON:
//   {"url": "http://127.0.0.1:PORT", "token"?: "...", "concurrent"?: bool,
//    "scenarios": [{
//      "name": "...", "chain": "chain-id",
//      "threadId"?, "runId"?, "messages": [AG-UI messages],
//      "tools"?, "context"?, "state"?, "forwardedProps"?,
//      "toolResults"?: {"toolName": "result text"},  // answer pending
//                       // front-end calls and run again, as a front end does
//      "cancelOn"?: "EVENT_TYPE",  // POST /api/v1/runs/{runId}/cancel when
//                       // the first event of this type arrives
//      "answers"?: {"toolName": payload | {"status": "cancelled"}}
//                       // answer interrupts (approvals, forms) by the tool
//                       // they are about, and resume, as a front end does
//    }]}
// Output (stdout), JSON: [{"name", "runs": [{"runId", "events": [...],
//   "error"?, "warnings": [...], "finished"?: {outcome, pendingToolCallIds,
//   result}}], "messages": [...]}]. Exit 0 unless the harness itself fails.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const require = createRequire(import.meta.url);
const { HttpAgent } = require("@ag-ui/client");

delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;
const warnings = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));

const input = JSON.parse(readFileSync(0, "utf8"));
const headers = input.token ? { Authorization: `Bearer ${input.token}` } : {};

async function runOnce(agent, sc, params) {
  const events = [];
  const before = warnings.length;
  let cancelled = false;
  const run = { runId: params.runId, events, warnings: [] };
  const subscriber = {
    onEvent({ event }) {
      events.push(event);
      if (sc.cancelOn && !cancelled && event.type === sc.cancelOn) {
        cancelled = true;
        fetch(`${input.url}/api/v1/runs/${encodeURIComponent(params.runId)}/cancel`, {
          method: "POST",
          headers,
        }).catch((e) => warnings.push(`cancel request failed: ${e.message}`));
      }
    },
    onRunFinishedEvent(p) {
      run.finished = { outcome: p.outcome, pendingToolCallIds: p.pendingToolCallIds ?? [], result: p.result, interrupts: p.interrupts ?? [] };
    },
  };
  try {
    await agent.runAgent(params, subscriber);
  } catch (e) {
    run.error = String(e?.message ?? e);
  }
  run.warnings = warnings.slice(before);
  return run;
}

async function scenario(sc, i) {
  const agent = new HttpAgent({
    url: `${input.url}/api/v1/chains/${encodeURIComponent(sc.chain)}/agui`,
    headers,
    threadId: sc.threadId ?? `thread-${i}`,
    initialMessages: sc.messages ?? [],
    initialState: sc.state ?? {},
  });
  const out = { name: sc.name, runs: [] };
  let runNo = 0;
  const nextRunId = () => (runNo++ === 0 && sc.runId ? sc.runId : `run-${i}-${runNo}-${Date.now()}`);
  let run = await runOnce(agent, sc, {
    runId: nextRunId(),
    tools: sc.tools ?? [],
    context: sc.context ?? [],
    forwardedProps: sc.forwardedProps ?? {},
  });
  out.runs.push(run);
  // A front end answers the calls of its own tools, then runs again.
  while (sc.toolResults && run.finished?.pendingToolCallIds?.length && out.runs.length < 4) {
    for (const id of run.finished.pendingToolCallIds) {
      const call = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === id);
      const content = sc.toolResults[call?.function?.name] ?? "no result";
      agent.addMessage({ id: `tool-${id}`, role: "tool", toolCallId: id, content });
    }
    run = await runOnce(agent, sc, {
      runId: nextRunId(),
      tools: sc.tools ?? [],
      context: sc.context ?? [],
      forwardedProps: sc.forwardedProps ?? {},
    });
    out.runs.push(run);
  }
  // A front end answers what the run waits for, then resumes.
  while (sc.answers && run.finished?.outcome === "interrupt" && out.runs.length < 6) {
    const resume = run.finished.interrupts.map((it) => {
      let tool = "";
      try {
        tool = it.metadata?.tool ?? "";
      } catch {}
      const a = sc.answers[tool];
      if (a && a.status === "cancelled") return { interruptId: it.id, status: "cancelled" };
      return { interruptId: it.id, status: "resolved", payload: a ?? { approved: true } };
    });
    run = await runOnce(agent, sc, {
      runId: nextRunId(),
      tools: sc.tools ?? [],
      context: sc.context ?? [],
      forwardedProps: sc.forwardedProps ?? {},
      resume,
    });
    out.runs.push(run);
  }
  out.messages = agent.messages;
  return out;
}

const results = input.concurrent
  ? await Promise.all(input.scenarios.map(scenario))
  : await input.scenarios.reduce(async (acc, sc, i) => [...(await acc), await scenario(sc, i)], Promise.resolve([]));
process.stdout.write(JSON.stringify(results));
