#!/usr/bin/env node
// openai-client: drives ruleagent's OpenAI-compatible endpoint with the
// official `openai` npm client, and reports what the SDK made of it.
//
// Input (stdin), JSON: {"baseURL": "http://127.0.0.1:PORT/v1", "apiKey":
//   "...", "scenarios": [{"name", "kind", "model", "messages", "tools"?,
//   "toolResult"?, "extra"?}]}, where kind is:
//   - "stream":   client.chat.completions.stream(...).finalChatCompletion(),
//                 with stream_options.include_usage; also the chunks seen;
//   - "create":   client.chat.completions.create(...) without streaming;
//   - "tools":    a round trip with client-offered tools: the first answer's
//                 tool_calls are answered with toolResult and sent back;
//   - "models":   client.models.list();
//   - "error":    a request expected to fail: the SDK error's class, status,
//                 code and message.
//   - "repeat":   the same request "times" times, one after the other
//                 (streamed when "stream" is set): each attempt's completion
//                 (and chunks) or error, in "attempts".
// A scenario's "options" are the SDK's request options (maxRetries,
// timeout, headers: the SDK retries as it would for a user).
// Output (stdout), JSON: [{"name", "completion"?, "chunks"?, "second"?,
//   "models"?, "error"?: {"class", "status", "code", "type", "message"},
//   "attempts"?: [{"completion"?, "chunks"?, "error"?}]}].
import OpenAI from "openai";
import { readFileSync } from "node:fs";

const input = JSON.parse(readFileSync(0, "utf8"));
const client = new OpenAI({ baseURL: input.baseURL, apiKey: input.apiKey ?? "none", maxRetries: 0, timeout: 60_000 });

function describe(e) {
  return { class: e?.constructor?.name, status: e?.status, code: e?.code, type: e?.type, message: e?.message };
}

async function scenario(sc) {
  const out = { name: sc.name };
  const params = { model: sc.model, messages: sc.messages, ...(sc.tools ? { tools: sc.tools } : {}), ...(sc.extra ?? {}) };
  try {
    switch (sc.kind) {
      case "stream": {
        const chunks = [];
        const stream = client.chat.completions.stream({ ...params, stream_options: { include_usage: true } });
        stream.on("chunk", (c) => chunks.push(c));
        out.completion = await stream.finalChatCompletion();
        out.chunks = chunks;
        break;
      }
      case "create":
        out.completion = await client.chat.completions.create(params, sc.options);
        break;
      case "tools": {
        const first = await client.chat.completions.create(params);
        out.completion = first;
        const msg = first.choices[0].message;
        const messages = [...sc.messages, msg];
        for (const call of msg.tool_calls ?? []) {
          messages.push({ role: "tool", tool_call_id: call.id, content: sc.toolResult });
        }
        const stream = client.chat.completions.stream({ ...params, messages, stream_options: { include_usage: true } });
        out.second = await stream.finalChatCompletion();
        break;
      }
      case "models":
        out.models = [];
        for await (const m of client.models.list()) out.models.push(m);
        break;
      case "error":
        out.completion = await client.chat.completions.create(params, sc.options);
        out.error = { class: "none" };
        break;
      case "repeat":
        out.attempts = [];
        for (let i = 0; i < (sc.times ?? 2); i++) {
          const attempt = {};
          try {
            if (sc.stream) {
              const chunks = [];
              const stream = client.chat.completions.stream({ ...params, stream_options: { include_usage: true } }, sc.options);
              stream.on("chunk", (c) => chunks.push(c));
              attempt.completion = await stream.finalChatCompletion();
              attempt.chunks = chunks;
            } else {
              attempt.completion = await client.chat.completions.create(params, sc.options);
            }
          } catch (e) {
            attempt.error = describe(e);
          }
          out.attempts.push(attempt);
        }
        break;
      default:
        throw new Error(`unknown kind ${sc.kind}`);
    }
  } catch (e) {
    out.error = describe(e);
  }
  return out;
}

const results = [];
for (const sc of input.scenarios) results.push(await scenario(sc));
process.stdout.write(JSON.stringify(results));
