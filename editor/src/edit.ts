// Edits of the document, as pure functions: the canvas and the panels call
// these and push the result onto the undo history.

import type { Doc, DocEdge, DocNode } from './dsl';
import { newEdgeKey, newKey, newNodeId } from './dsl';
import type { RuleNode } from './types';

// addNode adds a node of the given type. Its configuration starts empty:
// RuleGo gives an absent key its component's default, so the chain holds
// only what the person sets (the forms show the defaults).
export function addNode(doc: Doc, type: string, name: string, at: { x: number; y: number }): [Doc, string] {
  const id = newNodeId(doc, type);
  const key = newKey(doc, id);
  const node: RuleNode = { id, type, name, configuration: {} };
  const next: Doc = { ...doc, nodes: [...doc.nodes, { key, node, x: at.x, y: at.y }] };
  if (!doc.nodes.length) next.firstKey = key;
  return [next, key];
}

export function updateNode(doc: Doc, key: string, f: (n: RuleNode) => RuleNode): Doc {
  return { ...doc, nodes: doc.nodes.map((n) => (n.key === key ? { ...n, node: f(n.node) } : n)) };
}

export function moveNodes(doc: Doc, moves: Map<string, { x: number; y: number }>): Doc {
  return { ...doc, nodes: doc.nodes.map((n) => (moves.has(n.key) ? { ...n, ...moves.get(n.key)! } : n)) };
}

// remove deletes nodes (with their edges) and edges.
export function remove(doc: Doc, nodes: Set<string>, edges: Set<string>): Doc {
  const kept = doc.nodes.filter((n) => !nodes.has(n.key));
  return {
    ...doc,
    nodes: kept,
    edges: doc.edges.filter((e) => !edges.has(e.key) && !nodes.has(e.from) && !nodes.has(e.to)),
    firstKey: doc.firstKey && nodes.has(doc.firstKey) ? (kept[0]?.key ?? null) : doc.firstKey,
  };
}

export function connect(doc: Doc, from: string, to: string, type: string): Doc {
  if (doc.edges.some((e) => e.from === from && e.to === to && e.type === type)) return doc;
  return { ...doc, edges: [...doc.edges, { key: newEdgeKey(doc), from, to, type, rest: {} }] };
}

export function setEdgeType(doc: Doc, key: string, type: string): Doc {
  return { ...doc, edges: doc.edges.map((e) => (e.key === key ? { ...e, type } : e)) };
}

export function setFirst(doc: Doc, key: string): Doc {
  return { ...doc, firstKey: key };
}

export interface Clip {
  nodes: DocNode[];
  edges: DocEdge[];
}

export function copy(doc: Doc, keys: Set<string>): Clip {
  return {
    nodes: structuredClone(doc.nodes.filter((n) => keys.has(n.key))),
    edges: structuredClone(doc.edges.filter((e) => keys.has(e.from) && keys.has(e.to))),
  };
}

// paste adds the clip's nodes with new ids, offset so they do not hide the
// originals, and returns the new keys (to select them).
export function paste(doc: Doc, clip: Clip, offset = 40): [Doc, string[]] {
  let next = doc;
  const keyMap = new Map<string, string>();
  for (const n of clip.nodes) {
    const id = newNodeId(next, n.node.type);
    const key = newKey(next, id);
    keyMap.set(n.key, key);
    next = { ...next, nodes: [...next.nodes, { key, node: { ...structuredClone(n.node), id }, x: n.x + offset, y: n.y + offset }] };
  }
  for (const e of clip.edges) next = connect(next, keyMap.get(e.from)!, keyMap.get(e.to)!, e.type);
  if (!doc.nodes.length && clip.nodes.length) next.firstKey = keyMap.get(clip.nodes[0].key)!;
  return [next, [...keyMap.values()]];
}
