// The editor's document: a chain DSL split into what the canvas edits (nodes
// with positions, edges) and everything else, kept verbatim. Exporting puts
// it back together, so importing and exporting a chain changes nothing but
// the node positions (additionalInfo.layoutX/layoutY, RuleGo's convention).

import type { ChainDSL, Json, JsonObject, RuleConnection, RuleNode } from './types';
import { agentFootprint, autoLayout } from './layout';

export interface DocNode {
  // key identifies the node on the canvas; it stays when the node's id is
  // edited, so edges keep pointing at the node.
  key: string;
  node: RuleNode;
  x: number;
  y: number;
}

export interface DocEdge {
  key: string;
  from: string;
  to: string;
  type: string;
  // rest holds the connection's other keys, if any, written back as they were.
  rest: JsonObject;
}

export interface Doc {
  // top is the DSL's top-level object minus metadata; ruleChain lives there.
  top: JsonObject;
  // meta is the original metadata object; its nodes, connections and
  // firstNodeIndex are rebuilt on export, in the order they had.
  meta: JsonObject;
  nodes: DocNode[];
  edges: DocEdge[];
  // dangling holds connections whose ends are not nodes of the chain: the
  // canvas cannot draw them, but the file keeps them.
  dangling: RuleConnection[];
  firstKey: string | null;
}

export class DSLError extends Error {}

export function chainOf(doc: Doc): ChainDSL['ruleChain'] {
  return (doc.top.ruleChain ?? {}) as ChainDSL['ruleChain'];
}

export function chainId(doc: Doc): string {
  return String(chainOf(doc).id ?? '');
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// parseChain checks the outline of a chain file and returns it as a Doc.
export function parseChain(text: string): Doc {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new DSLError(`not JSON: ${(e as Error).message}`);
  }
  return importChain(value);
}

export function importChain(value: unknown): Doc {
  if (!isObject(value)) throw new DSLError('a chain file is a JSON object');
  if (!isObject(value.ruleChain)) throw new DSLError('ruleChain: missing or not an object');
  const meta = value.metadata === undefined ? {} : value.metadata;
  if (!isObject(meta)) throw new DSLError('metadata: not an object');
  const rawNodes = meta.nodes ?? [];
  const rawConns = meta.connections ?? [];
  if (!Array.isArray(rawNodes)) throw new DSLError('metadata.nodes: not an array');
  if (!Array.isArray(rawConns)) throw new DSLError('metadata.connections: not an array');

  const byId = new Map<string, string>();
  const nodes: DocNode[] = rawNodes.map((n, i) => {
    if (!isObject(n) || typeof n.type !== 'string') throw new DSLError(`metadata.nodes[${i}]: want an object with a type`);
    const node = n as RuleNode;
    const id = typeof node.id === 'string' ? node.id : '';
    const key = id && !byId.has(id) ? id : `_node${i}`;
    if (id && !byId.has(id)) byId.set(id, key);
    const info = isObject(node.additionalInfo) ? node.additionalInfo : {};
    return { key, node, x: num(info.layoutX), y: num(info.layoutY) };
  });

  const edges: DocEdge[] = [];
  const dangling: RuleConnection[] = [];
  rawConns.forEach((c, i) => {
    if (!isObject(c)) throw new DSLError(`metadata.connections[${i}]: not an object`);
    const { fromId, toId, type, ...rest } = c as RuleConnection;
    const from = byId.get(String(fromId));
    const to = byId.get(String(toId));
    if (from === undefined || to === undefined || typeof type !== 'string') {
      dangling.push(c as RuleConnection);
      return;
    }
    edges.push({ key: `e${i}`, from, to, type, rest: rest as JsonObject });
  });

  const first = typeof meta.firstNodeIndex === 'number' ? meta.firstNodeIndex : 0;
  const { metadata: _m, ...top } = value;
  const doc: Doc = {
    top: top as JsonObject,
    meta: meta as JsonObject,
    nodes,
    edges,
    dangling,
    firstKey: nodes[first]?.key ?? nodes[0]?.key ?? null,
  };
  return hasPositions(rawNodes as RuleNode[]) ? doc : withLayout(doc);
}

function num(v: Json | undefined): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function hasPositions(nodes: RuleNode[]): boolean {
  return nodes.some((n) => isObject(n.additionalInfo) && (typeof n.additionalInfo.layoutX === 'number' || typeof n.additionalInfo.layoutY === 'number'));
}

// withLayout places every node with a layered layout, leaving room under
// each agent node for its model and tools (see agentTools.ts).
export function withLayout(doc: Doc): Doc {
  const attached = new Map(doc.nodes.filter((n) => n.node.type === 'ai/agent').map((n) => [n.key, 1 + (Array.isArray(n.node.configuration?.tools) ? n.node.configuration.tools.length : 0)]));
  const pos = autoLayout(
    doc.nodes.map((n) => n.key),
    doc.edges.map((e) => [e.from, e.to]),
    doc.firstKey,
    (k) => agentFootprint(attached.get(k) ?? 0),
  );
  return { ...doc, nodes: doc.nodes.map((n) => ({ ...n, ...pos.get(n.key)! })) };
}

// exportChain rebuilds the chain DSL.
export function exportChain(doc: Doc): ChainDSL {
  const ids = new Map(doc.nodes.map((n) => [n.key, n.node.id ?? '']));
  const nodes = doc.nodes.map((n) => ({
    ...n.node,
    additionalInfo: { ...(isObject(n.node.additionalInfo) ? n.node.additionalInfo : {}), layoutX: Math.round(n.x), layoutY: Math.round(n.y) },
  }));
  const connections: RuleConnection[] = [
    ...doc.edges.map((e) => ({ fromId: ids.get(e.from)!, toId: ids.get(e.to)!, type: e.type, ...e.rest })),
    ...doc.dangling,
  ];
  const firstIndex = Math.max(0, doc.nodes.findIndex((n) => n.key === doc.firstKey));
  const meta: JsonObject = {};
  const order = Object.keys(doc.meta);
  if (!order.includes('firstNodeIndex') && firstIndex !== 0) order.unshift('firstNodeIndex');
  for (const k of ['nodes', 'connections']) if (!order.includes(k)) order.push(k);
  for (const k of order) {
    if (k === 'firstNodeIndex') meta[k] = firstIndex;
    else if (k === 'nodes') meta[k] = nodes as unknown as Json;
    else if (k === 'connections') meta[k] = connections as unknown as Json;
    else meta[k] = doc.meta[k];
  }
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(doc.top)) out[k] = v;
  out.metadata = meta;
  return out as unknown as ChainDSL;
}

// withoutPositions drops what exportChain is allowed to change, for
// comparing a chain with its round trip.
export function withoutPositions(dsl: unknown): unknown {
  const copy = structuredClone(dsl) as { metadata?: { nodes?: RuleNode[] } };
  for (const n of copy.metadata?.nodes ?? []) {
    if (!isObject(n.additionalInfo)) continue;
    delete n.additionalInfo.layoutX;
    delete n.additionalInfo.layoutY;
    if (Object.keys(n.additionalInfo).length === 0) delete n.additionalInfo;
  }
  return copy;
}

// newChain is an empty chain with the given id.
export function newChain(id: string, name: string): Doc {
  return importChain({ ruleChain: { id, name, root: true }, metadata: { nodes: [], connections: [] } });
}

// newNodeId picks an id for a new node of the given type that no node has.
export function newNodeId(doc: Doc, type: string): string {
  const base = (type.split('/').pop() || 'node').replace(/[^A-Za-z0-9_]/g, '') || 'node';
  const taken = new Set(doc.nodes.map((n) => n.node.id));
  for (let i = 1; ; i++) if (!taken.has(`${base}${i}`)) return `${base}${i}`;
}

export function newKey(doc: Doc, id: string): string {
  const taken = new Set(doc.nodes.map((n) => n.key));
  if (!taken.has(id)) return id;
  for (let i = 2; ; i++) if (!taken.has(`${id}~${i}`)) return `${id}~${i}`;
}

export function newEdgeKey(doc: Doc): string {
  const taken = new Set(doc.edges.map((e) => e.key));
  for (let i = doc.edges.length; ; i++) if (!taken.has(`e${i}`)) return `e${i}`;
}

// equalJSON compares two JSON values ignoring key order.
export function equalJSON(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => equalJSON(v, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => k in b && equalJSON(a[k], b[k]));
  }
  return false;
}
