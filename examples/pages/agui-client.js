// A small AG-UI client with no dependencies, to copy: it runs a ruleagent
// chain over its AG-UI endpoint (POST /api/v1/chains/{id}/agui), keeps the
// conversation, and answers the calls of the front-end tools the page
// offers. @ag-ui/client's HttpAgent does the same with more options; this
// is what it comes down to.
//
//   const agent = new AgentClient({
//     url: '/api/v1/chains/page-helper/agui',
//     tools: [{ name: 'set_theme', description: '...', parameters: { /* JSON Schema */ } }],
//     handlers: { set_theme: ({ theme }) => { document.body.dataset.theme = theme; return { theme }; } },
//     onEvent: (event) => console.log(event.type, event),
//   });
//   await agent.send('Switch to the dark theme');

export class AgentClient {
  constructor({ url, tools = [], handlers = {}, onEvent = () => {}, headers = {}, threadId = newID('thread') }) {
    Object.assign(this, { url, tools, handlers, onEvent, headers, threadId });
    // The conversation as AG-UI messages: the client keeps it and sends it
    // with every run.
    this.messages = [];
  }

  // send adds a user message and runs the agent until it answers without
  // waiting on a front-end tool: each run that ends with
  // outcome.pendingToolCallIds gets the tools' results in the next run.
  async send(text, { signal } = {}) {
    this.messages.push({ id: newID('msg'), role: 'user', content: text });
    for (let round = 0; round < 10; round++) {
      const pending = await this.run(signal);
      if (pending.length === 0) return;
      for (const call of pending) {
        const content = await this.callTool(call);
        this.messages.push({ id: newID('msg'), role: 'tool', toolCallId: call.id, content });
        this.onEvent({ type: 'FRONTEND_TOOL_RESULT', toolCallId: call.id, toolCallName: call.name, content });
      }
    }
    throw new Error('the agent kept calling front-end tools');
  }

  // callTool runs one front-end tool; a failure is the result the model
  // reads, as a server tool's would be.
  async callTool(call) {
    try {
      const handler = this.handlers[call.name];
      if (!handler) throw new Error(`this page has no tool ${call.name}`);
      const result = await handler(JSON.parse(call.arguments || '{}'));
      return typeof result === 'string' ? result : JSON.stringify(result ?? { ok: true });
    } catch (e) {
      return JSON.stringify({ error: String(e?.message ?? e) });
    }
  }

  // run posts one RunAgentInput and reads its events to the end. It
  // returns the front-end tool calls the run ended on.
  async run(signal) {
    const res = await fetch(this.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', ...this.headers },
      body: JSON.stringify({ threadId: this.threadId, runId: newID('run'), messages: this.messages, tools: this.tools, context: [], state: {}, forwardedProps: {} }),
      signal,
    });
    if (!res.ok) throw new Error(`${res.status} ${res.statusText}: ${await res.text()}`);
    const calls = new Map();
    let pending = [];
    for await (const event of readEvents(res.body)) {
      this.onEvent(event);
      // A sub-agent's events show its own conversation, not this one.
      if (event.subagentRunId) continue;
      switch (event.type) {
        case 'TEXT_MESSAGE_START':
          this.assistant(event.messageId);
          break;
        case 'TEXT_MESSAGE_CONTENT':
          this.assistant(event.messageId).content += event.delta;
          break;
        case 'TOOL_CALL_START': {
          const call = { id: event.toolCallId, type: 'function', function: { name: event.toolCallName, arguments: '' } };
          const owner = this.assistant(event.parentMessageId ?? newID('msg'));
          (owner.toolCalls ??= []).push(call);
          calls.set(call.id, call);
          break;
        }
        case 'TOOL_CALL_ARGS':
          calls.get(event.toolCallId).function.arguments += event.delta;
          break;
        case 'TOOL_CALL_RESULT':
          this.messages.push({ id: event.messageId, role: 'tool', toolCallId: event.toolCallId, content: event.content });
          break;
        case 'RUN_FINISHED':
          pending = event.outcome?.pendingToolCallIds ?? [];
          break;
        case 'RUN_ERROR':
          throw new Error(event.message);
      }
    }
    return pending.map((id) => ({ id, name: calls.get(id)?.function.name, arguments: calls.get(id)?.function.arguments }));
  }

  // assistant is the assistant message with this id, added if new.
  assistant(id) {
    let m = this.messages.find((x) => x.id === id && x.role === 'assistant');
    if (!m) {
      m = { id, role: 'assistant', content: '' };
      this.messages.push(m);
    }
    return m;
  }
}

// readEvents reads a server-sent events body: one JSON event per `data:`
// frame (comments such as `: ping` are skipped).
export async function* readEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data) yield JSON.parse(data);
    }
  }
}

function newID(prefix) {
  // randomUUID needs a secure context (https, or a loopback address).
  const id = crypto.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  return `${prefix}-${id}`;
}
