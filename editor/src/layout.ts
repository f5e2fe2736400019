// A layered layout for chains that carry no positions: each node sits one
// column right of the nodes that lead to it (longest path from the first
// node), and the nodes of a column are stacked in the order they appear.

export const COLUMN = 260;
export const ROW = 110;

export function autoLayout(keys: string[], edges: [string, string][], first: string | null): Map<string, { x: number; y: number }> {
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
  const rows = new Map<number, number>();
  const pos = new Map<string, { x: number; y: number }>();
  for (const k of keys) {
    const l = layer.get(k) ?? 0;
    const r = rows.get(l) ?? 0;
    rows.set(l, r + 1);
    pos.set(k, { x: l * COLUMN, y: r * ROW });
  }
  return pos;
}
