// What the canvas shows of the run going on, folded from the WebSocket
// trace of the open chain: the nodes a run is in (active), has left
// (visited, failed), the edges it took, the steps it made (for the Run
// panel) and, from its AG-UI events, the agent tools being called. A frame
// of another run starts afresh.

import { callViews, entriesOf, type ToolView } from './agentTools';
import type { Doc } from './dsl';
import type { Step } from './messageRun';
import type { Frame } from './trace';
import type { Json } from './types';

export type ToolLight = 'active' | 'done' | 'failed';

export interface Live {
  runId?: string;
  active: Set<string>;
  visited: Set<string>;
  failed: Set<string>;
  edges: Set<string>;
  steps: Step[];
  // tools lights tool views (by id) while their calls run, and after.
  tools: Map<string, ToolLight>;
  // calls maps a running call's toolCallId to the views it lights.
  calls: Map<string, string[]>;
}

export const NO_LIVE: Live = { active: new Set(), visited: new Set(), failed: new Set(), edges: new Set(), steps: [], tools: new Map(), calls: new Map() };

function fresh(runId: string): Live {
  return { ...NO_LIVE, runId, active: new Set(), visited: new Set(), failed: new Set(), edges: new Set(), steps: [], tools: new Map(), calls: new Map() };
}

const str = (v: Json | undefined): string | undefined => (typeof v === 'string' ? v : undefined);

// follow folds one frame of the open chain into the live state.
export function follow(l: Live, f: Frame, doc: Doc | null, views: ToolView[]): Live {
  if (f.type !== 'node' && f.type !== 'event') return l;
  const base = l.runId === f.runId ? l : fresh(f.runId);
  if (f.type === 'node') return followNode(base, f, doc);
  const e = f.event as { type: string; subagentRunId?: string; toolCallId?: string; toolCallName?: string; metadata?: Record<string, Json> };
  switch (e.type) {
    case 'RUN_FINISHED':
    case 'RUN_ERROR': {
      // The run is over: nothing is still executing, whatever order the
      // trace frames came in.
      const tools = new Map([...base.tools].filter(([, v]) => v !== 'active'));
      return { ...base, active: new Set(), visited: new Set([...base.visited, ...base.active]), steps: base.steps.map((s) => ({ ...s, done: true })), tools, calls: new Map() };
    }
    case 'TOOL_CALL_START': {
      // A sub-agent's own calls are not this chain's agents' tools.
      if (e.subagentRunId || !doc || !e.toolCallId) return base;
      const md = e.metadata ?? {};
      // An agent of another chain (inside a rule-chain tool) is not one of
      // this chain's agents.
      if (str(md.chainId) && md.chainId !== f.chainId) return base;
      const hit = callViews(views, entriesOf(doc), { name: e.toolCallName ?? '', toolType: str(md.toolType), targetId: str(md.targetId), nodeId: str(md.nodeId) }, base.active);
      if (!hit.length) return base;
      const tools = new Map(base.tools);
      for (const id of hit) tools.set(id, 'active');
      return { ...base, tools, calls: new Map(base.calls).set(e.toolCallId, hit) };
    }
    case 'TOOL_CALL_RESULT': {
      const hit = e.toolCallId ? base.calls.get(e.toolCallId) : undefined;
      if (e.subagentRunId || !hit) return base;
      const tools = new Map(base.tools);
      const calls = new Map(base.calls);
      calls.delete(e.toolCallId!);
      const still = new Set([...calls.values()].flat());
      for (const id of hit) if (!still.has(id)) tools.set(id, e.metadata?.isError === true ? 'failed' : 'done');
      return { ...base, tools, calls };
    }
  }
  return base;
}

// The trace's IN, OUT and DONE frames of a node come apart (IN and OUT
// from RuleGo's asynchronous debug callback): the k-th of each kind for a
// node belong to its k-th step.
const FLAG = { IN: 'entered', OUT: 'told', DONE: 'done' } as const;

function followNode(l: Live, f: Extract<Frame, { type: 'node' }>, doc: Doc | null): Live {
  const next = { ...l, active: new Set(l.active), visited: new Set(l.visited), failed: new Set(l.failed), edges: new Set(l.edges), steps: [...l.steps] };
  const flag = FLAG[f.flow];
  const i = next.steps.findIndex((s) => s.nodeId === f.nodeId && !s[flag]);
  const step: Step = i >= 0 ? { ...next.steps[i] } : { nodeId: f.nodeId, done: false };
  step[flag] = true;
  if (f.flow !== 'IN') {
    step.relation = f.relation ?? step.relation;
    step.error = f.error ?? step.error;
    step.durationMs = f.durationMs ?? step.durationMs;
  }
  if (i >= 0) next.steps[i] = step;
  else next.steps.push(step);
  if (f.flow === 'IN') {
    if (!step.told && !step.done) next.active.add(f.nodeId);
    return next;
  }
  next.active.delete(f.nodeId);
  next.visited.add(f.nodeId);
  if (f.error || f.relation === 'Failure') next.failed.add(f.nodeId);
  const from = doc?.nodes.find((n) => n.node.id === f.nodeId)?.key;
  for (const e of doc?.edges ?? []) if (e.from === from && e.type === f.relation) next.edges.add(e.key);
  return next;
}
