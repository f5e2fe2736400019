import { describe, expect, it } from 'vitest';
import { callViews, entriesOf, toolName, toolViews } from './agentTools';
import { importChain } from './dsl';
import { agentFootprint, autoLayout, NODE_H, NODE_W, toolPositions } from './layout';
import { follow, NO_LIVE, type Live } from './live';
import type { Frame } from './trace';
import type { ChainInfo } from './types';

const chains: ChainInfo[] = [
  { id: 'code-reviewer', name: 'Code Reviewer', isAgent: true },
  { id: 'order-status', name: 'Order status' },
];

const doc = importChain({
  ruleChain: { id: 'c' },
  metadata: {
    nodes: [
      {
        id: 'brain',
        type: 'ai/agent',
        configuration: {
          model: 'gpt-4o',
          tools: [
            { type: 'builtin', name: 'read' },
            { type: 'rulechain', name: 'get_order_status', targetId: 'order-status' },
            { type: 'agent', targetId: 'code-reviewer' },
            { type: 'mcp', name: 'gh', config: { server: 'https://mcp.example.com/mcp', tools: ['search_*'] } },
            { type: 'mcp', config: { server: 'self' } },
          ],
        },
      },
      { id: 'other', type: 'ai/agent', configuration: { tools: [{ type: 'builtin', name: 'read' }] } },
      { id: 'end', type: 'end' },
    ],
    connections: [{ fromId: 'brain', toId: 'end', type: 'Success' }],
  },
});
const views = toolViews(doc, chains);

describe('an agent’s tools on the canvas', () => {
  it('are its model and each entry of its tools array, named as the model sees them', () => {
    expect(views.filter((v) => v.agentId === 'brain').map((v) => [v.kind, v.label, v.target ?? ''])).toEqual([
      ['model', 'gpt-4o', ''],
      ['builtin', 'read', ''],
      ['rulechain', 'get_order_status', 'order-status'],
      ['agent', 'Code_Reviewer', 'code-reviewer'],
      ['mcp', 'gh__*', ''],
      ['mcp', '(server’s name)__*', ''],
    ]);
    expect(views.find((v) => v.id === 'other#model')!.label).toBe('${global.model}');
    expect(toolName({ type: 'agent', targetId: 'gone' }, chains)).toBe('gone');
  });

  it('map a call to the entry it came from: by target, by name, by MCP prefix', () => {
    const entries = entriesOf(doc);
    const none = new Set<string>();
    expect(callViews(views, entries, { name: 'get_order_status', toolType: 'rulechain', targetId: 'order-status' }, none)).toEqual(['brain#1']);
    expect(callViews(views, entries, { name: 'Code_Reviewer', toolType: 'agent', targetId: 'code-reviewer' }, none)).toEqual(['brain#2']);
    expect(callViews(views, entries, { name: 'gh__search_issues', toolType: 'mcp' }, none)).toEqual(['brain#3']);
    // A prefix the server derives: the entry without a name takes the call.
    expect(callViews(views, entries, { name: 'self__list_rule_chains', toolType: 'mcp' }, none)).toEqual(['brain#4']);
    // Two agents have read: the one the trace shows running wins.
    expect(callViews(views, entries, { name: 'read', toolType: 'builtin' }, none)).toEqual(['brain#0', 'other#0']);
    expect(callViews(views, entries, { name: 'read', toolType: 'builtin' }, new Set(['other']))).toEqual(['other#0']);
    expect(callViews(views, entries, { name: 'show_chart', toolType: 'client' }, none)).toEqual([]);
  });

  it('map a call to the agent node the server names, whatever the trace shows running', () => {
    const entries = entriesOf(doc);
    const both = new Set(['brain', 'other']);
    expect(callViews(views, entries, { name: 'read', toolType: 'builtin', nodeId: 'other' }, both)).toEqual(['other#0']);
    expect(callViews(views, entries, { name: 'read', toolType: 'builtin', nodeId: 'brain' }, new Set(['other']))).toEqual(['brain#0']);
    // A node whose tools do not hold the call lights nothing.
    expect(callViews(views, entries, { name: 'get_order_status', toolType: 'rulechain', targetId: 'order-status', nodeId: 'other' }, both)).toEqual([]);
  });
});

const node = (nodeId: string, flow: 'IN' | 'OUT' | 'DONE', extra: Partial<Frame> = {}): Frame => ({ type: 'node', chainId: 'c', runId: 'r1', nodeId, flow, ...extra }) as Frame;
const event = (e: Record<string, unknown>, runId = 'r1'): Frame => ({ type: 'event', chainId: 'c', runId, event: e }) as unknown as Frame;
const run = (frames: Frame[], from: Live = NO_LIVE) => frames.reduce((l, f) => follow(l, f, doc, views), from);

describe('the live trace', () => {
  it('lights a tool while its call runs, then marks it done or failed', () => {
    let l = run([node('brain', 'IN'), event({ type: 'TOOL_CALL_START', toolCallId: 'a', toolCallName: 'read', metadata: { toolType: 'builtin' } })]);
    expect(l.tools.get('brain#0')).toBe('active');
    expect(l.tools.has('other#0')).toBe(false);
    l = run([event({ type: 'TOOL_CALL_START', toolCallId: 'b', toolCallName: 'get_order_status', metadata: { toolType: 'rulechain', targetId: 'order-status' } })], l);
    // A sub-agent's own calls are not this chain's tools.
    l = run([event({ type: 'TOOL_CALL_START', toolCallId: 'x', toolCallName: 'read', subagentRunId: 's1', metadata: { toolType: 'builtin' } })], l);
    l = run([event({ type: 'TOOL_CALL_RESULT', toolCallId: 'a', content: 'ok' }), event({ type: 'TOOL_CALL_RESULT', toolCallId: 'x', subagentRunId: 's1', content: 'ok' })], l);
    expect(l.tools.get('brain#0')).toBe('done');
    expect(l.tools.get('brain#1')).toBe('active');
    l = run([event({ type: 'TOOL_CALL_RESULT', toolCallId: 'b', content: 'Error', metadata: { isError: true } })], l);
    expect(l.tools.get('brain#1')).toBe('failed');
    // Another run starts afresh.
    expect(run([event({ type: 'RUN_STARTED' }, 'r2')], l).tools.size).toBe(0);
  });

  it('lights the tool of the agent that called it when two agents share its name and run at once', () => {
    let l = run([node('brain', 'IN'), node('other', 'IN'), event({ type: 'TOOL_CALL_START', toolCallId: 'a', toolCallName: 'read', metadata: { toolType: 'builtin', chainId: 'c', nodeId: 'other' } })]);
    expect([...l.tools]).toEqual([['other#0', 'active']]);
    l = run([event({ type: 'TOOL_CALL_RESULT', toolCallId: 'a', content: 'ok', metadata: { chainId: 'c', nodeId: 'other' } })], l);
    expect([...l.tools]).toEqual([['other#0', 'done']]);
    // An agent of another chain (a rule-chain tool's) is none of these.
    l = run([event({ type: 'TOOL_CALL_START', toolCallId: 'b', toolCallName: 'read', metadata: { toolType: 'builtin', chainId: 'order-status', nodeId: 'brain' } })], l);
    expect(l.tools.has('brain#0')).toBe(false);
  });

  it('ends every light when the run ends, in whatever order the frames came', () => {
    const l = run([node('brain', 'IN'), event({ type: 'TOOL_CALL_START', toolCallId: 'a', toolCallName: 'read', metadata: { toolType: 'builtin' } }), event({ type: 'RUN_FINISHED' })]);
    expect(l.active.size).toBe(0);
    expect(l.visited.has('brain')).toBe(true);
    expect(l.tools.size).toBe(0);
  });

  it('pairs the frames of a node into steps, even when OUT comes before IN', () => {
    const l = run([node('brain', 'OUT', { relation: 'Success' }), node('brain', 'IN'), node('brain', 'DONE', { relation: 'Success', durationMs: 12 }), node('end', 'IN'), node('end', 'DONE', { relation: 'Success', durationMs: 0 })]);
    expect(l.steps.map((s) => [s.nodeId, s.relation, s.durationMs, s.done])).toEqual([
      ['brain', 'Success', 12, true],
      ['end', 'Success', 0, true],
    ]);
    expect(l.active.size).toBe(0);
    expect([...l.edges]).toEqual(['e0']);
    // A node that runs twice makes two steps.
    const twice = run([node('end', 'IN'), node('end', 'DONE', { relation: 'Success' })], l);
    expect(twice.steps.filter((s) => s.nodeId === 'end')).toHaveLength(2);
  });
});

describe('the layout', () => {
  it('leaves room under an agent for its model and tools, so that nothing overlaps', () => {
    const keys = doc.nodes.map((n) => n.key);
    const attached = new Map([
      ['brain', 6],
      ['other', 2],
    ]);
    const pos = autoLayout(keys, [['brain', 'end']], 'brain', (k) => agentFootprint(attached.get(k) ?? 0));
    const boxes: { x: number; y: number; w: number; h: number }[] = [];
    for (const k of keys) {
      const p = pos.get(k)!;
      boxes.push({ x: p.x, y: p.y, w: NODE_W, h: NODE_H });
      for (const t of toolPositions(p.x, p.y, NODE_W, NODE_H, attached.get(k) ?? 0)) boxes.push({ x: t.x, y: t.y, w: 136, h: 58 });
    }
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, b] = [boxes[i], boxes[j]];
        expect(a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h, `boxes ${i} and ${j} overlap`).toBe(false);
      }
  });

  it('lays out a chain without agents as before', () => {
    const pos = autoLayout(['a', 'b', 'c'], [['a', 'b'], ['a', 'c']], 'a');
    expect([...pos.values()]).toEqual([
      { x: 0, y: 0 },
      { x: 260, y: 0 },
      { x: 260, y: 110 },
    ]);
  });
});
