import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { equalJSON, exportChain, importChain, parseChain, withoutPositions, DSLError } from './dsl';
import * as edit from './edit';
import * as H from './history';

const chainsDir = join(import.meta.dirname, '..', '..', 'chains');
const files = readdirSync(chainsDir).filter((f) => f.endsWith('.json'));

describe('DSL round trip', () => {
  it('has example chains to check', () => expect(files.length).toBeGreaterThan(3));
  for (const f of files) {
    it(`leaves ${f} unchanged but for positions`, () => {
      const original = JSON.parse(readFileSync(join(chainsDir, f), 'utf8'));
      const out = exportChain(importChain(original));
      expect(withoutPositions(out)).toEqual(withoutPositions(original));
      // A second trip changes nothing at all: positions are now stored.
      expect(exportChain(importChain(out))).toEqual(out);
    });
  }

  it('keeps unknown keys, key order, nodes without ids, dangling connections and firstNodeIndex', () => {
    const original = {
      ruleChain: { id: 'x', name: 'X', root: true, extra: { a: 1 } },
      metadata: {
        endpoints: [{ id: 'e1', type: 'http' }],
        firstNodeIndex: 1,
        nodes: [
          { id: 'a', type: 'jsFilter', name: 'A', debugMode: true, configuration: { jsScript: 'return 1' }, additionalInfo: { layoutX: 5, layoutY: 6, note: 'kept' } },
          { type: 'log', configuration: {} },
          { id: 'c', type: 'end', unknownKey: [1, 2] },
        ],
        connections: [
          { fromId: 'a', toId: 'c', type: 'True', label: 'kept' },
          { fromId: 'a', toId: 'ghost', type: 'False' },
        ],
        ruleChainConnections: [],
      },
      top: 'level',
    };
    const out = exportChain(importChain(original));
    expect(withoutPositions(out)).toEqual(withoutPositions(original));
    expect(Object.keys(out.metadata)).toEqual(Object.keys(original.metadata));
    expect(out.metadata.nodes[0].additionalInfo).toEqual({ layoutX: 5, layoutY: 6, note: 'kept' });
    expect(out.metadata.firstNodeIndex).toBe(1);
  });

  it('lays out chains that carry no positions, first node leftmost', () => {
    const doc = importChain({
      ruleChain: { id: 'x' },
      metadata: {
        nodes: [{ id: 'a', type: 'log' }, { id: 'b', type: 'log' }, { id: 'c', type: 'log' }],
        connections: [
          { fromId: 'a', toId: 'b', type: 'Success' },
          { fromId: 'b', toId: 'c', type: 'Success' },
          { fromId: 'c', toId: 'a', type: 'Failure' },
        ],
      },
    });
    const xs = doc.nodes.map((n) => n.x);
    expect(xs[0]).toBeLessThan(xs[1]);
    expect(xs[1]).toBeLessThan(xs[2]);
  });

  const bad: [string, string, RegExp][] = [
    ['not JSON', '{', /not JSON/],
    ['no ruleChain', '{"metadata":{}}', /ruleChain/],
    ['nodes not an array', '{"ruleChain":{},"metadata":{"nodes":{}}}', /metadata.nodes/],
    ['a node without type', '{"ruleChain":{},"metadata":{"nodes":[{"id":"a"}]}}', /nodes\[0\]/],
  ];
  for (const [name, text, msg] of bad) {
    it(`refuses ${name}`, () => {
      expect(() => parseChain(text)).toThrow(DSLError);
      expect(() => parseChain(text)).toThrow(msg);
    });
  }
});

describe('edits', () => {
  const base = importChain({ ruleChain: { id: 'x', name: 'X' }, metadata: { nodes: [], connections: [] } });

  it('adds, connects, renames, copies, pastes and removes', () => {
    let [doc, agent] = edit.addNode(base, 'ai/agent', 'Agent', { x: 0, y: 0 });
    expect(doc.firstKey).toBe(agent);
    let end: string;
    [doc, end] = edit.addNode(doc, 'end', 'end', { x: 300, y: 0 });
    doc = edit.connect(doc, agent, end, 'Success');
    expect(edit.connect(doc, agent, end, 'Success')).toBe(doc);
    // Renaming a node id keeps its connections.
    doc = edit.updateNode(doc, agent, (n) => ({ ...n, id: 'brain' }));
    let out = exportChain(doc);
    expect(out.metadata.nodes.map((n) => n.id)).toEqual(['brain', 'end1']);
    expect(out.metadata.connections).toEqual([{ fromId: 'brain', toId: 'end1', type: 'Success' }]);

    const [pasted, keys] = edit.paste(doc, edit.copy(doc, new Set([agent, end])));
    out = exportChain(pasted);
    expect(keys).toHaveLength(2);
    expect(out.metadata.nodes.map((n) => n.id)).toEqual(['brain', 'end1', 'agent1', 'end2']);
    expect(out.metadata.connections[1]).toEqual({ fromId: 'agent1', toId: 'end2', type: 'Success' });

    doc = edit.remove(pasted, new Set([agent]), new Set());
    out = exportChain(doc);
    expect(out.metadata.nodes.map((n) => n.id)).toEqual(['end1', 'agent1', 'end2']);
    expect(out.metadata.connections).toEqual([{ fromId: 'agent1', toId: 'end2', type: 'Success' }]);
  });

  it('undoes and redoes, merging edits of one field', () => {
    let h = H.start(base);
    const [a] = edit.addNode(base, 'log', 'log', { x: 0, y: 0 });
    h = H.push(h, a);
    const key = a.nodes[0].key;
    for (const name of ['l', 'lo', 'log!']) h = H.push(h, edit.updateNode(h.present, key, (n) => ({ ...n, name })), 'name');
    expect(h.past).toHaveLength(2);
    h = H.undo(h);
    expect(h.present.nodes[0].node.name).toBe('log');
    h = H.undo(h);
    expect(h.present.nodes).toHaveLength(0);
    h = H.redo(H.redo(h));
    expect(h.present.nodes[0].node.name).toBe('log!');
  });

  it('compares JSON ignoring key order', () => {
    expect(equalJSON({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 })).toBe(true);
    expect(equalJSON({ a: 1 }, { a: 1, b: undefined })).toBe(false);
  });
});
