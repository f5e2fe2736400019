// The run panel's model: AG-UI events folded into a view of one run, with
// sub-agent runs (events carrying subagentRunId) nested under the tool call
// that started them.

import { addCost } from './cost';
import type { Json } from './types';

export interface AGUIEvent {
  type: string;
  timestamp?: number;
  subagentRunId?: string;
  metadata?: Record<string, Json>;
  [k: string]: Json | undefined;
}

export interface ToolCallView {
  key: string;
  id: string;
  run: string;
  name: string;
  args: string;
  result?: string;
  toolType?: string;
  targetId?: string;
  durationMs?: number;
  isError?: boolean;
  errorKind?: string;
  truncated?: boolean;
  start: number;
  end?: number;
  subRuns: string[];
}

export type Item =
  | { kind: 'text'; id: string; text: string; done: boolean }
  | { kind: 'reasoning'; id: string; text: string; done: boolean }
  | { kind: 'tool'; key: string };

export interface StepView {
  name: string;
  start: number;
  end?: number;
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
  // cost is the turn's (metadata.cost, in currency); firstOutput is when
  // its first text, reasoning or tool call arrived (time to first token:
  // firstOutput - start).
  cost?: string;
  currency?: string;
  firstOutput?: number;
}

export type RunStatus = 'running' | 'finished' | 'error' | 'cancelled' | 'waiting';

// InterruptView is what a paused run waits for: a person's approval of a
// tool call, or a form's answer (AG-UI RUN_FINISHED outcome interrupt).
export interface InterruptView {
  id: string;
  reason: string;
  message?: string;
  toolCallId?: string;
  responseSchema?: Record<string, Json>;
  expiresAt?: string;
  metadata?: Record<string, Json>;
  subagentRunId?: string;
}

export interface RunView {
  id: string;
  name?: string;
  status: RunStatus;
  items: Item[];
  steps: StepView[];
  start: number;
  end?: number;
  error?: string;
  parentToolCall?: string;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

export interface RunState {
  root: string;
  runs: Record<string, RunView>;
  toolCalls: Record<string, ToolCallView>;
  // usage sums the turns seen so far, until RUN_FINISHED reports the total.
  usage: Usage;
  finalUsage: boolean;
  // cost adds up the terminal events' cost (each resumed run reports its
  // own), in currency; absent when no price table priced the run.
  cost?: string;
  currency?: string;
  pendingToolCalls: string[];
  // interrupts are what the run waits for; a resumed run clears them.
  interrupts: InterruptView[];
}

export const ROOT = 'root';

export function newRun(now: number): RunState {
  return {
    root: ROOT,
    runs: { [ROOT]: { id: ROOT, status: 'running', items: [], steps: [], start: now } },
    toolCalls: {},
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    finalUsage: false,
    pendingToolCalls: [],
    interrupts: [],
  };
}

const str = (v: Json | undefined): string | undefined => (typeof v === 'string' ? v : undefined);
const numOf = (v: Json | undefined): number | undefined => (typeof v === 'number' ? v : undefined);

function runOf(s: RunState, e: AGUIEvent, now: number): [RunState, string] {
  const id = e.subagentRunId || ROOT;
  if (s.runs[id]) return [s, id];
  return [{ ...s, runs: { ...s.runs, [id]: { id, status: 'running', items: [], steps: [], start: now } } }, id];
}

function patchRun(s: RunState, id: string, f: (r: RunView) => RunView): RunState {
  return { ...s, runs: { ...s.runs, [id]: f(s.runs[id]) } };
}

function patchCall(s: RunState, key: string, f: (c: ToolCallView) => ToolCallView): RunState {
  const c = s.toolCalls[key];
  return c ? { ...s, toolCalls: { ...s.toolCalls, [key]: f(c) } } : s;
}

function appendText(r: RunView, kind: 'text' | 'reasoning', id: string, delta: string, done = false): RunView {
  const i = r.items.findIndex((it) => it.kind === kind && it.id === id);
  if (i < 0) return { ...r, items: [...r.items, { kind, id, text: delta, done }] };
  const items = [...r.items];
  const it = items[i] as { kind: typeof kind; id: string; text: string; done: boolean };
  items[i] = { ...it, text: it.text + delta, done: it.done || done };
  return { ...r, items };
}

// firstOutput marks the time of the run's first output in its open turn.
function firstOutput(r: RunView, ts: number): RunView {
  for (let i = r.steps.length - 1; i >= 0; i--) {
    const st = r.steps[i];
    if (!/^turn\b/i.test(st.name)) continue;
    if (st.end !== undefined || st.firstOutput !== undefined) return r;
    const steps = [...r.steps];
    steps[i] = { ...st, firstOutput: ts };
    return { ...r, steps };
  }
  return r;
}

// withCost adds a terminal event's cost to the run's.
function withCost(s: RunState, md: Record<string, Json>): RunState {
  const cost = str(md.cost);
  return cost === undefined ? s : { ...s, cost: addCost(s.cost, cost), currency: str(md.currency) ?? s.currency };
}

function sumUsage(v: Json | undefined): Usage | null {
  if (!Array.isArray(v)) return null;
  const u = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  for (const e of v) {
    if (typeof e !== 'object' || e === null || Array.isArray(e)) continue;
    u.inputTokens += numOf(e.inputTokens) ?? 0;
    u.outputTokens += numOf(e.outputTokens) ?? 0;
    u.totalTokens += numOf(e.totalTokens) ?? (numOf(e.inputTokens) ?? 0) + (numOf(e.outputTokens) ?? 0);
  }
  return u;
}

function addUsage(a: Usage, b: Usage): Usage {
  return { inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens, totalTokens: a.totalTokens + b.totalTokens };
}

// apply folds one event into the state; now is when it arrived, used when
// the event has no timestamp.
export function apply(s0: RunState, e: AGUIEvent, now: number): RunState {
  const ts = numOf(e.timestamp) ?? now;
  const [s, run] = runOf(s0, e, ts);
  const md = e.metadata ?? {};
  const callKey = (id: Json | undefined) => `${run}/${String(id)}`;
  switch (e.type) {
    case 'TEXT_MESSAGE_START':
      return patchRun(s, run, (r) => appendText(r, 'text', String(e.messageId), ''));
    case 'TEXT_MESSAGE_CONTENT':
    case 'TEXT_MESSAGE_CHUNK':
      return patchRun(s, run, (r) => firstOutput(appendText(r, 'text', String(e.messageId), str(e.delta) ?? ''), ts));
    case 'TEXT_MESSAGE_END':
      return patchRun(s, run, (r) => appendText(r, 'text', String(e.messageId), '', true));
    case 'REASONING_MESSAGE_START':
    case 'THINKING_TEXT_MESSAGE_START':
      return patchRun(s, run, (r) => appendText(r, 'reasoning', String(e.messageId ?? 'thinking'), ''));
    case 'REASONING_MESSAGE_CONTENT':
    case 'REASONING_MESSAGE_CHUNK':
    case 'THINKING_TEXT_MESSAGE_CONTENT':
      return patchRun(s, run, (r) => firstOutput(appendText(r, 'reasoning', String(e.messageId ?? 'thinking'), str(e.delta) ?? ''), ts));
    case 'REASONING_MESSAGE_END':
    case 'THINKING_TEXT_MESSAGE_END':
      return patchRun(s, run, (r) => appendText(r, 'reasoning', String(e.messageId ?? 'thinking'), '', true));
    case 'TOOL_CALL_START': {
      const key = callKey(e.toolCallId);
      if (s.toolCalls[key]) return s;
      const call: ToolCallView = {
        key,
        id: String(e.toolCallId),
        run,
        name: str(e.toolCallName) ?? '',
        args: '',
        toolType: str(md.toolType),
        targetId: str(md.targetId),
        start: ts,
        subRuns: [],
      };
      const next = { ...s, toolCalls: { ...s.toolCalls, [key]: call } };
      return patchRun(next, run, (r) => firstOutput({ ...r, items: [...r.items, { kind: 'tool', key }] }, ts));
    }
    case 'TOOL_CALL_ARGS':
      return patchCall(s, callKey(e.toolCallId), (c) => ({ ...c, args: c.args + (str(e.delta) ?? '') }));
    case 'TOOL_CALL_END':
      return patchCall(s, callKey(e.toolCallId), (c) => ({ ...c, toolType: c.toolType ?? str(md.toolType), targetId: c.targetId ?? str(md.targetId) }));
    case 'TOOL_CALL_RESULT':
      return patchCall(s, callKey(e.toolCallId), (c) => ({
        ...c,
        result: str(e.content) ?? JSON.stringify(e.content),
        end: ts,
        toolType: c.toolType ?? str(md.toolType),
        targetId: c.targetId ?? str(md.targetId),
        // The server leaves durationMs out when it is 0 (under a
        // millisecond); a result without metadata is timed from its start.
        durationMs: numOf(md.durationMs) ?? (e.metadata ? 0 : ts - c.start),
        isError: md.isError === true,
        errorKind: str(md.errorKind),
        truncated: md.truncated === true,
      }));
    case 'STEP_STARTED':
      return patchRun(s, run, (r) => ({ ...r, steps: [...r.steps, { name: String(e.stepName), start: ts, model: str(md.model) }] }));
    case 'STEP_FINISHED': {
      const input = numOf(md.inputTokens);
      const output = numOf(md.outputTokens);
      let next = patchRun(s, run, (r) => {
        const steps = [...r.steps];
        for (let i = steps.length - 1; i >= 0; i--) {
          if (steps[i].name === e.stepName && steps[i].end === undefined) {
            steps[i] = { ...steps[i], end: ts, model: steps[i].model ?? str(md.model), inputTokens: input, outputTokens: output,
              cost: str(md.cost), currency: str(md.currency) };
            break;
          }
        }
        return { ...r, steps };
      });
      if (!next.finalUsage && (input || output)) {
        const u = next.usage;
        next = { ...next, usage: { inputTokens: u.inputTokens + (input ?? 0), outputTokens: u.outputTokens + (output ?? 0), totalTokens: u.totalTokens + (input ?? 0) + (output ?? 0) } };
      }
      return next;
    }
    case 'SUBAGENT_STARTED': {
      const parentRun = str(e.parentSubagentRunId) || ROOT;
      const parentKey = `${parentRun}/${String(e.parentToolCallId)}`;
      // A sub-agent a pause suspended starts again in the resumed run: same card, same start.
      const again = s.runs[run]?.parentToolCall === parentKey;
      let next = patchRun(s, run, (r) => ({ ...r, name: str(e.name), start: again ? r.start : ts, parentToolCall: parentKey, status: 'running', end: undefined }));
      next = patchCall(next, parentKey, (c) => (c.subRuns.includes(run) ? c : { ...c, subRuns: [...c.subRuns, run] }));
      return next;
    }
    case 'SUBAGENT_FINISHED': {
      // outcome suspended: the sub-agent waits with its parent's paused run.
      const suspended = (e.outcome as { type?: string } | undefined)?.type === 'suspended';
      return patchRun(s, run, (r) => ({ ...r, status: suspended ? 'waiting' : 'finished', end: ts }));
    }
    case 'SUBAGENT_ERROR':
      return patchRun(s, run, (r) => ({ ...r, status: 'error', end: ts, error: str(e.message) }));
    case 'RUN_STARTED':
      // A resumed run goes on in the same view.
      return s.interrupts.length ? patchRun({ ...s, interrupts: [] }, ROOT, (r) => ({ ...r, status: 'running', end: undefined })) : s;
    case 'RUN_FINISHED': {
      const outcome = e.outcome as { type?: string; pendingToolCallIds?: string[]; interrupts?: InterruptView[] } | undefined;
      const usage = sumUsage(e.usage);
      // Each resumed run reports its own usage: add them up.
      const total = usage && s.finalUsage ? addUsage(s.usage, usage) : usage;
      const next: RunState = {
        ...withCost(s, md),
        usage: total ?? s.usage,
        finalUsage: s.finalUsage || !!usage,
        pendingToolCalls: outcome?.pendingToolCallIds ?? [],
        interrupts: outcome?.type === 'interrupt' ? (outcome.interrupts ?? []) : [],
      };
      const status: RunStatus = outcome?.type === 'cancelled' ? 'cancelled' : outcome?.type === 'interrupt' ? 'waiting' : 'finished';
      return patchRun(next, ROOT, (r) => ({ ...r, status, end: ts }));
    }
    case 'RUN_ERROR': {
      const usage = sumUsage(e.usage);
      const next: RunState = { ...withCost(s, md), usage: usage ?? s.usage, finalUsage: s.finalUsage || !!usage };
      return patchRun(next, ROOT, (r) => ({ ...r, status: 'error', end: ts, error: str(e.message) ?? 'run failed' }));
    }
  }
  return s;
}

// finalText is the root run's answer: its text messages joined.
export function finalText(s: RunState): string {
  return s.runs[ROOT].items
    .filter((i): i is Extract<Item, { kind: 'text' }> => i.kind === 'text')
    .map((i) => i.text)
    .join('');
}

// readSSE calls onEvent for each `data:` frame of a server-sent event stream.
export async function readSSE(body: ReadableStream<Uint8Array>, onEvent: (e: AGUIEvent) => void): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let data: string[] = [];
  const flush = () => {
    if (!data.length) return;
    const text = data.join('\n');
    data = [];
    onEvent(JSON.parse(text) as AGUIEvent);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
      if (line === '') flush();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
  }
  flush();
}
