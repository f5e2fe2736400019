// What the canvas draws under an agent node: its model and each entry of
// its tools array. They are a view of the node's configuration, never
// RuleGo nodes or connections: the chain file does not change because of
// them, and editing them edits the tools array.

import type { Doc, DocNode } from './dsl';
import { isObject } from './dsl';
import { functionName, toolsOf, type ToolEntry } from './tools';
import type { ChainInfo, Json } from './types';

export interface ToolView {
  // id is the canvas node's id: "<agent key>#<index>", or "<agent key>#model".
  id: string;
  agentKey: string;
  // agentId is the agent node's id in the chain (the trace names it).
  agentId: string;
  // index in the tools array; -1 for the model.
  index: number;
  kind: 'builtin' | 'rulechain' | 'agent' | 'mcp' | 'model' | 'unknown';
  // label is the name the model sees (an MCP entry's "<prefix>__*").
  label: string;
  // detail is a second line: the chain a tool runs, an MCP server.
  detail: string;
  // target is the chain a rulechain or agent tool opens.
  target?: string;
}

const str = (v: Json | undefined): string => (typeof v === 'string' ? v : '');

export function modelOf(config: Record<string, Json> | undefined): string {
  return str(config?.model) || '${global.model}';
}

// toolName is the name the model sees for an entry (README: the tools
// array): a builtin's, a rulechain's own name, a sub-agent's name or its
// chain's made a function name; for MCP, the prefix of its tools' names
// (empty when the server derives it).
export function toolName(t: ToolEntry, chains: ChainInfo[]): string {
  const name = str(t.name);
  if (t.type === 'agent' && !name) {
    const c = chains.find((x) => x.id === t.targetId);
    return c ? functionName(c.name || c.id) : str(t.targetId);
  }
  return name;
}

function viewOf(n: DocNode, t: ToolEntry, index: number, chains: ChainInfo[]): ToolView {
  const base = { id: `${n.key}#${index}`, agentKey: n.key, agentId: n.node.id ?? '', index };
  const name = toolName(t, chains);
  switch (t.type) {
    case 'builtin':
      return { ...base, kind: 'builtin', label: name || '(pick a tool)', detail: 'built-in' };
    case 'rulechain':
    case 'agent': {
      const target = str(t.targetId);
      return { ...base, kind: t.type, label: name || '(new)', detail: target ? `chain ${target}` : 'no chain yet', target: target || undefined };
    }
    case 'mcp': {
      const c = isObject(t.config) ? t.config : {};
      const server = str(c.server) || str(c.command);
      const filter = Array.isArray(c.tools) ? `${c.tools.length} of its tools` : 'all its tools';
      return { ...base, kind: 'mcp', label: name ? `${name}__*` : '(server’s name)__*', detail: server ? `${server}, ${filter}` : 'no server yet' };
    }
  }
  return { ...base, kind: 'unknown', label: name || String(t.type), detail: 'unknown tool type' };
}

// toolViews lists the model and the tools of every agent node of the chain.
export function toolViews(doc: Doc, chains: ChainInfo[]): ToolView[] {
  const out: ToolView[] = [];
  for (const n of doc.nodes) {
    if (n.node.type !== 'ai/agent') continue;
    out.push({ id: `${n.key}#model`, agentKey: n.key, agentId: n.node.id ?? '', index: -1, kind: 'model', label: modelOf(n.node.configuration), detail: 'model' });
    toolsOf(n.node.configuration).forEach((t, i) => out.push(viewOf(n, t, i, chains)));
  }
  return out;
}

export interface CallInfo {
  name: string;
  toolType?: string;
  targetId?: string;
  // nodeId is the agent node that made the call (the event's
  // metadata.nodeId), when the server says.
  nodeId?: string;
}

// callViews finds the tool views a call belongs to, from the name the
// model called and the type and target the server reports. MCP tools are
// "<prefix>__<tool>"; an entry whose prefix the server derives takes the
// MCP calls no named entry claims. When agents of the chain share a tool,
// the agent node the server names (call.nodeId) decides; without it (an
// older server), those the trace shows running (activeAgents) are
// preferred.
export function callViews(views: ToolView[], entries: Map<string, ToolEntry>, call: CallInfo, activeAgents: Set<string>): string[] {
  const tools = views.filter((v) => v.kind !== 'model' && (!call.nodeId || v.agentId === call.nodeId));
  let hits: ToolView[];
  if ((call.toolType === 'rulechain' || call.toolType === 'agent') && call.targetId) {
    hits = tools.filter((v) => v.kind === call.toolType && v.target === call.targetId);
    const named = hits.filter((v) => v.label === call.name);
    if (named.length) hits = named;
  } else if (call.toolType === 'mcp' || (!call.toolType && call.name.includes('__'))) {
    const mcp = tools.filter((v) => v.kind === 'mcp');
    hits = mcp.filter((v) => {
      const prefix = str(entries.get(v.id)?.name);
      return prefix !== '' && call.name.startsWith(`${prefix}__`);
    });
    if (!hits.length) hits = mcp.filter((v) => !str(entries.get(v.id)?.name));
  } else {
    hits = tools.filter((v) => v.label === call.name && (!call.toolType || v.kind === call.toolType));
  }
  const running = hits.filter((v) => activeAgents.has(v.agentId));
  return (running.length ? running : hits).map((v) => v.id);
}

// entriesOf maps each tool view's id to its entry of the tools array.
export function entriesOf(doc: Doc): Map<string, ToolEntry> {
  const m = new Map<string, ToolEntry>();
  for (const n of doc.nodes) if (n.node.type === 'ai/agent') toolsOf(n.node.configuration).forEach((t, i) => m.set(`${n.key}#${i}`, t));
  return m;
}
