// A recorded run (README: Recorded runs: replay and fork) as the editor
// shows it after the fact: its events folded into the Run panel's view
// (the timeline, tokens and cost), its node steps lit on the canvas, and
// the LLM steps a fork can start from.

import { apply, newRun, type AGUIEvent, type RunState } from './agui';
import type { Doc } from './dsl';
import { follow, NO_LIVE, type Live } from './live';
import type { Json } from './types';

export interface RecordMeta {
  runId: string;
  threadId?: string;
  chainId: string;
  outcome?: string;
  startedAt: string;
  steps: number;
  llmCalls: number;
  toolCalls: number;
  inputTokens: number;
  outputTokens: number;
  cost?: string;
  currency?: string;
  replayable: boolean;
  parentRunId?: string;
  forkedFrom?: { runId: string; agent?: string; step: number };
}

export interface RecordAgent {
  key: string;
  runId: string;
  chainId: string;
  nodeId: string;
  parent?: string;
  toolCallId?: string;
}

export interface RecordLLMCall {
  agent: string;
  seq: number;
  step?: number;
  atMs: number;
  durationMs: number;
  request: { messages: number[]; tools: number };
}

export interface RecordNodeStep {
  chainId: string;
  nodeId: string;
  relation?: string;
  error?: string;
  atMs: number;
  durationMs: number;
}

export interface StoredRecord {
  meta: RecordMeta;
  agents?: RecordAgent[];
  llmCalls?: RecordLLMCall[];
  messages?: Json[];
  nodes?: RecordNodeStep[];
  events?: AGUIEvent[];
}

// runState folds the record's events into the Run panel's view, at the
// times they were emitted.
export function runState(rec: StoredRecord): RunState {
  const start = Date.parse(rec.meta.startedAt) || 0;
  let s = newRun(start);
  for (const e of rec.events ?? []) s = apply(s, e, typeof e.timestamp === 'number' ? e.timestamp : start);
  return s;
}

// nodeLights are the run's steps on the nodes of chain doc (the record's
// own chain: the steps of the chains its tools ran are not on this
// canvas), as the live trace would have lit them.
export function nodeLights(rec: StoredRecord, doc: Doc | null): Live {
  const start = Date.parse(rec.meta.startedAt) || 0;
  let l: Live = { ...NO_LIVE, runId: rec.meta.runId };
  for (const n of rec.nodes ?? []) {
    if (n.chainId !== rec.meta.chainId) continue;
    const base = { type: 'node' as const, chainId: n.chainId, runId: rec.meta.runId, nodeId: n.nodeId };
    l = follow(l, { ...base, flow: 'IN', ts: start + n.atMs }, doc, []);
    l = follow(l, { ...base, flow: 'OUT', relation: n.relation, error: n.error }, doc, []);
    l = follow(l, { ...base, flow: 'DONE', relation: n.relation, error: n.error, durationMs: n.durationMs }, doc, []);
  }
  return l;
}

export interface StepMessage {
  role: string;
  content: string;
  toolCallId?: string;
}

// ForkPoint is an LLM step a fork can start from: the agent run, its turn
// and the messages that turn sent (what a fork may edit).
export interface ForkPoint {
  agent: string;
  step: number;
  sub: boolean;
  atMs: number;
  messages: StepMessage[];
}

function messageOf(raw: Json | undefined): StepMessage {
  const m = (raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {}) as Record<string, Json>;
  let content = '';
  if (typeof m.content === 'string') content = m.content;
  else if (Array.isArray(m.content)) content = m.content.map((p) => (p && typeof p === 'object' && !Array.isArray(p) && typeof p.text === 'string' ? p.text : '')).join('');
  return { role: typeof m.role === 'string' ? m.role : '', content, toolCallId: typeof m.tool_call_id === 'string' ? m.tool_call_id : undefined };
}

// forkPoints lists the record's LLM steps, the run's own agents' first,
// each turn once (its first attempt: retries and failover resend it).
export function forkPoints(rec: StoredRecord): ForkPoint[] {
  const sub = new Map((rec.agents ?? []).map((a) => [a.key, !!a.parent]));
  const seen = new Set<string>();
  const out: ForkPoint[] = [];
  for (const c of rec.llmCalls ?? []) {
    if (!c.step || !sub.has(c.agent)) continue;
    const k = `${c.agent}\u0000${c.step}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push({ agent: c.agent, step: c.step, sub: !!sub.get(c.agent), atMs: c.atMs, messages: c.request.messages.map((i) => messageOf(rec.messages?.[i])) });
  }
  return out.sort((a, b) => Number(a.sub) - Number(b.sub) || a.atMs - b.atMs);
}

export interface ForkEdits {
  systemPrompt?: string;
  model?: string;
  // toolResults are edited results, by tool call id.
  toolResults?: Record<string, string>;
}

// forkRequest is the body of POST /api/v1/runs/{id}/fork for a fork from
// point p: only what was changed is sent.
export function forkRequest(p: ForkPoint, e: ForkEdits): Record<string, Json> {
  const edits: Record<string, Json> = {};
  const system = p.messages[0]?.role === 'system' ? p.messages[0].content : undefined;
  if (e.systemPrompt !== undefined && system !== undefined && e.systemPrompt !== system) edits.systemPrompt = e.systemPrompt;
  const results = Object.entries(e.toolResults ?? {}).filter(([id, text]) => p.messages.some((m) => m.role === 'tool' && m.toolCallId === id && m.content !== text));
  if (results.length) edits.toolResults = results.map(([toolCallId, content]) => ({ toolCallId, content }));
  const body: Record<string, Json> = { step: p.step, agent: p.agent, edits, stream: true };
  if (e.model) body.model = e.model;
  return body;
}
