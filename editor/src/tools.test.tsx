import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import components from './testdata/components.json';
import { addTool, bindingProblem, functionName, remoteName, moveTool, pickBuiltin, pickTarget, removeTool, setBinding, toolProblems, type ToolEntry } from './tools';
import type { ChainInfo, Components } from './types';
import { ToolsEditor } from './ui/ToolsEditor';
import { locate, under } from './problems';
import { entryFor } from './ui/toolActions';

const data = components as unknown as Components;
const builtins = data.builtins!;
const reviewer: ChainInfo = { id: 'code-reviewer', name: 'Code Reviewer', description: 'Reviews code.', isAgent: true };
const orders: ChainInfo = {
  id: 'order-status',
  name: 'Order status',
  description: 'Looks an order up.',
  inputSchema: { type: 'object', properties: { orderId: { type: 'string' }, userId: { type: 'string' } }, required: ['orderId', 'userId'] },
};

describe('the tools array', () => {
  it('adds, reorders and removes entries, keeping unknown keys', () => {
    let list: ToolEntry[] = [{ type: 'builtin', name: 'read', custom: 1 }];
    list = addTool(list, 'agent');
    list = addTool(list, 'mcp');
    expect(list.map((t) => t.type)).toEqual(['builtin', 'agent', 'mcp']);
    list = moveTool(list, 2, -1);
    expect(list.map((t) => t.type)).toEqual(['builtin', 'mcp', 'agent']);
    expect(moveTool(list, 0, -1)).toBe(list);
    list = removeTool(list, 1);
    expect(list).toEqual([{ type: 'builtin', name: 'read', custom: 1 }, { type: 'agent', targetId: '' }]);
  });

  it('picks a builtin, dropping the config of another', () => {
    const read = builtins.find((b) => b.name === 'read')!;
    expect(pickBuiltin({ type: 'builtin', name: '' }, read)).toEqual({ type: 'builtin', name: 'read' });
    expect(pickBuiltin({ type: 'builtin', name: 'bash', config: { mode: 'allow' } }, read)).toEqual({ type: 'builtin', name: 'read' });
    expect(pickBuiltin({ type: 'builtin', name: 'read', config: { maxReadLines: 5 } }, read).config).toEqual({ maxReadLines: 5 });
  });

  it('fills a sub-agent from its target chain', () => {
    const t = pickTarget({ type: 'agent', targetId: '' }, reviewer);
    expect(t).toEqual({ type: 'agent', targetId: 'code-reviewer', name: 'Code_Reviewer', description: 'Reviews code.' });
  });

  it('fills a rule-chain tool with the chain input schema, dropping bindings of parameters it lacks', () => {
    let t: ToolEntry = { type: 'rulechain', name: '', targetId: '', bind: { gone: 'metadata.x' } };
    t = pickTarget(t, orders);
    expect(t.parameters).toEqual(orders.inputSchema);
    expect(t.bind).toBeUndefined();
    t = setBinding(t, 'userId', 'metadata.userId');
    expect(t.bind).toEqual({ userId: 'metadata.userId' });
    t = setBinding(t, 'userId', '');
    expect(t.bind).toBeUndefined();
  });

  it('reads the server-side name of a discovered MCP tool', () => {
    expect(remoteName({ name: 'fs__read_file' })).toBe('read_file');
    expect(remoteName({ name: 'fs__a__b' })).toBe('a__b');
    expect(remoteName({ name: 'x__echo', remoteName: 'echo' })).toBe('echo');
    expect(remoteName({ name: 'plain' })).toBe('plain');
  });

  it('makes chain names valid function names', () => {
    expect(functionName('Code Reviewer')).toBe('Code_Reviewer');
    expect(functionName('  résumé (v2) ')).toBe('r_sum_v2');
    expect(functionName('***')).toBe('tool');
  });

  const problems: { name: string; entry: ToolEntry; want: Record<string, string> }[] = [
    { name: 'a builtin needs a name', entry: { type: 'builtin', name: '' }, want: { name: 'Pick a built-in tool' } },
    { name: 'an unknown builtin', entry: { type: 'builtin', name: 'nope' }, want: { name: 'No built-in tool named nope' } },
    { name: 'a rulechain needs name and target', entry: { type: 'rulechain', name: '' }, want: { name: 'A rule-chain tool needs a name', targetId: 'Pick the chain to run' } },
    { name: 'an agent needs a target', entry: { type: 'agent', targetId: '' }, want: { targetId: 'Pick the agent to call' } },
    { name: 'mcp needs a server', entry: { type: 'mcp', config: {} }, want: { server: 'Give the server: self, an http(s) URL or stdio:<command>' } },
    { name: 'bad function name', entry: { type: 'agent', targetId: 'x', name: 'has space' }, want: { name: 'Letters, digits, _ and - only (at most 64)' } },
    { name: 'bad binding source', entry: { type: 'agent', targetId: 'x', bind: { u: 'user' } }, want: { 'bind.u': 'Use metadata.<key>, vars.<key>, global.<key> or const:<value>' } },
    { name: 'a good entry', entry: { type: 'agent', targetId: 'x', bind: { u: 'const:7' } }, want: {} },
  ];
  for (const c of problems) it(c.name, () => expect(toolProblems(c.entry, builtins)).toEqual(c.want));

  it('accepts the binding sources the server does', () => {
    for (const s of ['metadata.userId', 'vars.tenant', 'global.region', 'const:42']) expect(bindingProblem(s)).toBeNull();
    expect(bindingProblem('msg.userId')).not.toBeNull();
  });
});

describe('the tools editor', () => {
  const render = (tools: ToolEntry[], problems = under([], '')) =>
    renderToStaticMarkup(<ToolsEditor tools={tools} onChange={() => {}} builtins={builtins} chains={[reviewer, orders]} self="me" problems={problems} />);

  it('renders one card per tool with its type fields', () => {
    const html = render([
      { type: 'builtin', name: 'bash', config: { mode: 'allow', allow: ['ls'] } },
      { type: 'rulechain', name: 'get_order_status', targetId: 'order-status', parameters: orders.inputSchema!, bind: { userId: 'metadata.userId' } },
      { type: 'mcp', name: 'fs', config: { server: 'self' } },
    ]);
    expect(html.match(/class="tool-card/g)).toHaveLength(3);
    expect(html).toContain('bash configuration');
    expect(html).toContain('data-field="config.allow"');
    expect(html).toMatch(/data-field="bind.userId"[^>]*value="metadata.userId"/);
    expect(html).toContain('Discover tools');
    expect(html).toContain('+ Sub-agent');
  });

  it('follows a schema error pointer to the config field', () => {
    const l = locate({ path: 'metadata.nodes[2].configuration.tools[0].config', message: 'at /maxReadLines: got string, want integer' });
    expect(l).toMatchObject({ node: 2, field: 'configuration.tools[0].config.maxReadLines' });
    expect(locate({ path: 'metadata.connections[1].toId', message: 'no node x' })).toMatchObject({ connection: 1 });
    expect(locate({ path: 'ruleChain.id', message: 'bad id' }).node).toBeUndefined();
  });

  it('shows a server problem on the tool field its path points to', () => {
    const located = [locate({ path: 'metadata.nodes[0].configuration.tools[0].config.mode', message: 'mode: want deny or allow' })];
    const html = render([{ type: 'builtin', name: 'bash', config: { mode: 'maybe' } }], under(under(located, 'configuration'), 'tools'));
    expect(html).toMatch(/data-field="config.mode"[^>]*aria-invalid="true"|aria-invalid="true"[^>]*data-field="config.mode"/);
    expect(html).toContain('mode: want deny or allow');
  });
});

describe('a tool added from the canvas or the palette', () => {
  it('is a new entry of the type, a builtin by name, or a chain filled in from it', () => {
    expect(entryFor('mcp', [])).toEqual({ type: 'mcp', name: '', config: { server: '' } });
    expect(entryFor({ type: 'builtin', name: 'read' }, [])).toEqual({ type: 'builtin', name: 'read' });
    expect(entryFor({ type: 'rulechain', targetId: 'order-status' }, [orders])).toMatchObject({ type: 'rulechain', targetId: 'order-status', name: 'Order_status', parameters: orders.inputSchema });
    expect(entryFor({ type: 'agent', targetId: 'gone' }, [])).toEqual({ type: 'agent', targetId: 'gone' });
    expect(entryFor({ type: 'nope' }, [])).toBeNull();
  });
});
