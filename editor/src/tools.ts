// The tools array of an ai/agent node, as the tools editor changes it. Each
// operation returns a new array; entries keep every key they had.

import type { BuiltinInfo, ChainInfo, DiscoveredTool, Json, JsonObject, JSONSchema } from './types';
import { isObject } from './dsl';

export type ToolType = 'builtin' | 'rulechain' | 'agent' | 'mcp';
export const TOOL_TYPES: ToolType[] = ['builtin', 'rulechain', 'agent', 'mcp'];
export type ToolEntry = JsonObject & { type?: Json };

export function toolsOf(config: JsonObject | undefined): ToolEntry[] {
  const t = config?.tools;
  return Array.isArray(t) ? (t.filter(isObject) as ToolEntry[]) : [];
}

export function newTool(type: ToolType): ToolEntry {
  switch (type) {
    case 'builtin':
      return { type, name: '' };
    case 'rulechain':
      return { type, name: '', description: '', targetId: '' };
    case 'agent':
      return { type, targetId: '' };
    case 'mcp':
      return { type, name: '', config: { server: '' } };
  }
}

export function addTool(list: ToolEntry[], type: ToolType): ToolEntry[] {
  return [...list, newTool(type)];
}

export function removeTool(list: ToolEntry[], i: number): ToolEntry[] {
  return list.filter((_, j) => j !== i);
}

export function moveTool(list: ToolEntry[], i: number, by: -1 | 1): ToolEntry[] {
  const j = i + by;
  if (j < 0 || j >= list.length) return list;
  const out = [...list];
  [out[i], out[j]] = [out[j], out[i]];
  return out;
}

export function updateTool(list: ToolEntry[], i: number, patch: Record<string, Json | undefined>): ToolEntry[] {
  return list.map((t, j) => (j === i ? setKeys(t, patch) : t));
}

// setKeys sets each key of patch, deleting those whose value is undefined.
export function setKeys(obj: JsonObject, patch: Record<string, Json | undefined>): JsonObject {
  const out: JsonObject = { ...obj };
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) delete out[k];
    else out[k] = v;
  }
  return out;
}

// pickBuiltin makes the entry use the named builtin. Another builtin's
// config would be refused (their schemas allow no unknown keys), so it goes;
// the form shows the new one's defaults without writing them into the chain.
export function pickBuiltin(entry: ToolEntry, b: BuiltinInfo): ToolEntry {
  return setKeys(entry, { name: b.name, config: entry.name === b.name ? entry.config : undefined });
}

// functionName makes a chain's name a valid tool name, as the server does
// for agent tools ("Code Reviewer" becomes "Code_Reviewer").
export function functionName(s: string): string {
  const n = s.trim().replace(/[^A-Za-z0-9_-]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 64);
  return n || 'tool';
}

// pickTarget points a rulechain or agent entry at a chain and fills in its
// name, description and parameters from the chain.
export function pickTarget(entry: ToolEntry, chain: ChainInfo): ToolEntry {
  const patch: Record<string, Json | undefined> = {
    targetId: chain.id,
    name: functionName(chain.name || chain.id),
    description: chain.description || undefined,
  };
  if (chain.inputSchema) patch.parameters = chain.inputSchema;
  else if (entry.type === 'rulechain') patch.parameters = { type: 'object', properties: {} };
  else patch.parameters = undefined;
  const out = setKeys(entry, patch);
  // A binding of a parameter the new target does not have would be refused.
  const params = parameterNames(out);
  if (isObject(out.bind)) {
    const bind = Object.fromEntries(Object.entries(out.bind).filter(([k]) => params.includes(k)));
    return setKeys(out, { bind: Object.keys(bind).length ? bind : undefined });
  }
  return out;
}

export function schemaOf(entry: ToolEntry): JSONSchema | undefined {
  let p = entry.parameters;
  if (typeof p === 'string') {
    try {
      p = JSON.parse(p) as Json;
    } catch {
      return undefined;
    }
  }
  return isObject(p) ? (p as JSONSchema) : undefined;
}

export function parameterNames(entry: ToolEntry): string[] {
  return Object.keys(schemaOf(entry)?.properties ?? {});
}

export function bindingsOf(entry: ToolEntry): Record<string, string> {
  return isObject(entry.bind) ? Object.fromEntries(Object.entries(entry.bind).map(([k, v]) => [k, String(v)])) : {};
}

// setBinding binds (or, with an empty source, unbinds) one parameter.
export function setBinding(entry: ToolEntry, param: string, source: string): ToolEntry {
  const bind = bindingsOf(entry);
  if (source.trim()) bind[param] = source.trim();
  else delete bind[param];
  return setKeys(entry, { bind: Object.keys(bind).length ? bind : undefined });
}

const BIND_SOURCE = /^(metadata|vars|global)\.[A-Za-z0-9_.-]+$|^const:/;

export function bindingProblem(source: string): string | null {
  return BIND_SOURCE.test(source) ? null : 'Use metadata.<key>, vars.<key>, global.<key> or const:<value>';
}

// toolProblems are the editor's own checks of one entry, by field.
export function toolProblems(entry: ToolEntry, builtins: BuiltinInfo[]): Record<string, string> {
  const out: Record<string, string> = {};
  const name = typeof entry.name === 'string' ? entry.name : '';
  if (name && !/^[A-Za-z0-9_-]{1,64}$/.test(name)) out.name = 'Letters, digits, _ and - only (at most 64)';
  switch (entry.type) {
    case 'builtin':
      if (!name) out.name = 'Pick a built-in tool';
      else if (builtins.length && !builtins.some((b) => b.name === name)) out.name = `No built-in tool named ${name}`;
      break;
    case 'rulechain':
      if (!name) out.name = 'A rule-chain tool needs a name';
      if (!entry.targetId) out.targetId = 'Pick the chain to run';
      break;
    case 'agent':
      if (!entry.targetId) out.targetId = 'Pick the agent to call';
      break;
    case 'mcp': {
      const c = isObject(entry.config) ? entry.config : {};
      if (!c.server && !c.command) out.server = 'Give the server: self, an http(s) URL or stdio:<command>';
      break;
    }
    default:
      out.type = 'Unknown tool type';
  }
  for (const [param, source] of Object.entries(bindingsOf(entry))) {
    const m = bindingProblem(source);
    if (m) out[`bind.${param}`] = m;
  }
  return out;
}

// remoteName is a discovered MCP tool's name on its server, which the tool
// filter matches: the server says it, or it is what follows the first "__"
// of the name the model sees (<prefix>__<tool>).
export function remoteName(t: DiscoveredTool): string {
  if (t.remoteName) return t.remoteName;
  const i = t.name.indexOf('__');
  return i < 0 ? t.name : t.name.slice(i + 2);
}
