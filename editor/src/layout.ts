// A layered layout for chains that carry no positions: each node sits one
// column right of the nodes that lead to it (longest path from the first
// node), and the nodes of a column are stacked in the order they appear.
// An agent node takes the room of the model and tools drawn under it, so
// they overlap nothing.

export const COLUMN = 260;
export const ROW = 110;
// The nominal size of a rule node on the canvas (its CSS allows 150-240 px).
export const NODE_W = 190;
export const NODE_H = 60;

// The model and tool nodes under an agent: rows of TOOLS_PER_ROW.
export const TOOL_W = 136;
export const TOOL_H = 58;
export const TOOL_GAP = 12;
export const TOOL_DROP = 46;
export const TOOLS_PER_ROW = 3;

export interface Footprint {
  width: number;
  height: number;
  // left is where the node itself starts inside its footprint.
  left: number;
}

const PLAIN: Footprint = { width: NODE_W, height: NODE_H, left: 0 };

function rowWidth(n: number): number {
  return n * TOOL_W + (n - 1) * TOOL_GAP;
}

// agentFootprint is the room of an agent node with count attachments.
export function agentFootprint(count: number): Footprint {
  if (count === 0) return PLAIN;
  const rows = Math.ceil(count / TOOLS_PER_ROW);
  const width = Math.max(NODE_W, rowWidth(Math.min(count, TOOLS_PER_ROW)));
  return { width, height: NODE_H + TOOL_DROP + rows * (TOOL_H + TOOL_GAP), left: (width - NODE_W) / 2 };
}

// toolPositions places count attachments under an agent node at (x, y) of
// the given size: rows centred under it.
export function toolPositions(x: number, y: number, w: number, h: number, count: number): { x: number; y: number }[] {
  const out: { x: number; y: number }[] = [];
  for (let i = 0; i < count; i++) {
    const row = Math.floor(i / TOOLS_PER_ROW);
    const inRow = Math.min(TOOLS_PER_ROW, count - row * TOOLS_PER_ROW);
    const left = x + w / 2 - rowWidth(inRow) / 2;
    out.push({ x: left + (i % TOOLS_PER_ROW) * (TOOL_W + TOOL_GAP), y: y + h + TOOL_DROP + row * (TOOL_H + TOOL_GAP) });
  }
  return out;
}

export function autoLayout(
  keys: string[],
  edges: [string, string][],
  first: string | null,
  footprint: (key: string) => Footprint = () => PLAIN,
): Map<string, { x: number; y: number }> {
  const out = new Map<string, string[]>();
  const indegree = new Map(keys.map((k) => [k, 0]));
  for (const [a, b] of edges) {
    if (!indegree.has(a) || !indegree.has(b) || a === b) continue;
    out.set(a, [...(out.get(a) ?? []), b]);
    indegree.set(b, indegree.get(b)! + 1);
  }
  const layer = new Map<string, number>();
  // Start from the first node, then from every other node nothing leads to,
  // then from whatever remains (nodes only reachable through a cycle).
  const starts = [first, ...keys.filter((k) => indegree.get(k) === 0), ...keys].filter((k): k is string => !!k && indegree.has(k));
  for (const s of starts) {
    if (layer.has(s)) continue;
    layer.set(s, 0);
    // Longest path, bounded so a cycle cannot loop: a node never sits deeper
    // than the number of nodes.
    const queue = [s];
    while (queue.length) {
      const k = queue.shift()!;
      const l = layer.get(k)!;
      for (const next of out.get(k) ?? []) {
        const cur = layer.get(next);
        if ((cur === undefined || cur < l + 1) && l + 1 < keys.length) {
          layer.set(next, l + 1);
          queue.push(next);
        }
      }
    }
  }
  // Each column is as wide as its widest footprint; each node sits below
  // the footprints above it.
  const widths = new Map<number, number>();
  for (const k of keys) {
    const l = layer.get(k) ?? 0;
    widths.set(l, Math.max(widths.get(l) ?? 0, footprint(k).width));
  }
  const lefts = new Map<number, number>();
  let x = 0;
  for (const l of [...widths.keys()].sort((a, b) => a - b)) {
    lefts.set(l, x);
    x += widths.get(l)! + COLUMN - NODE_W;
  }
  const tops = new Map<number, number>();
  const pos = new Map<string, { x: number; y: number }>();
  for (const k of keys) {
    const l = layer.get(k) ?? 0;
    const f = footprint(k);
    const top = tops.get(l) ?? 0;
    tops.set(l, top + f.height + ROW - NODE_H);
    pos.set(k, { x: lefts.get(l)! + (widths.get(l)! - f.width) / 2 + f.left, y: top });
  }
  return pos;
}
