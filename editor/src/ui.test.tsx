import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { Toolbar } from './ui/Toolbar';
import { relationOptions } from './relations';
import { FieldInput } from './ui/FieldInput';
import { addNode } from './edit';
import { newChain } from './dsl';

const noop = () => {};
const props = { canUndo: false, canRedo: false, open: true, onUndo: noop, onRedo: noop, onLayout: noop, onFit: noop, onExport: noop, onDeploy: noop, onHelp: noop };

function deployButton(html: string): string {
  const m = html.match(/<button[^>]*>Deploy<\/button>/);
  expect(m).not.toBeNull();
  return m![0];
}

describe('the toolbar', () => {
  it('offers Deploy on a writable server', () => {
    const html = renderToStaticMarkup(<Toolbar {...props} />);
    expect(deployButton(html)).not.toContain('disabled');
    expect(html).not.toContain('read-only');
  });
  it('turns Deploy off and says why on a read-only server', () => {
    const html = renderToStaticMarkup(<Toolbar {...props} readOnly />);
    expect(deployButton(html)).toContain('disabled');
    expect(deployButton(html)).toContain('--read-only');
    expect(html).toContain('>read-only</span>');
  });
});

describe('relation choices', () => {
  it('offers an ai/intent node its intents, then its own relations', () => {
    const node = { id: 'route', type: 'ai/intent', name: 'Route', configuration: { intents: [{ name: 'refund' }, { name: 'shipping' }, { description: 'no name' }] } };
    const form = { type: 'ai/intent', category: 'ai', label: 'AI Intent', fields: [], relationTypes: ['Other', 'Failure'] };
    expect(relationOptions(form as never, node as never, ['refund'])).toEqual(['refund', 'shipping', 'Other', 'Failure']);
  });
});

describe('a field the chain does not set', () => {
  const flag = { name: 'parallelToolCalls', label: 'Parallel tool calls', desc: '', kind: 'bool' as const, required: false, requiredMessage: '', defaultValue: true };
  it('shows the default, marked as such, without writing it', () => {
    const html = renderToStaticMarkup(<FieldInput spec={flag} value={undefined} onChange={noop} />);
    expect(html).toMatch(/<input type="checkbox"[^>]*checked=""/);
    expect(html).toContain('>default</span>');
    expect(html).not.toContain('Reset');
  });
  it('shows a value the chain sets, even one equal to the default, with a reset', () => {
    const on = renderToStaticMarkup(<FieldInput spec={flag} value={true} onChange={noop} />);
    expect(on).toMatch(/checked=""/);
    expect(on).toContain('aria-label="Reset Parallel tool calls to its default"');
    const off = renderToStaticMarkup(<FieldInput spec={flag} value={false} onChange={noop} />);
    expect(off).not.toMatch(/checked=""/);
  });
});

describe('a new node', () => {
  it('starts with an empty configuration: the component defaults apply without being written', () => {
    const [doc, key] = addNode(newChain('c', 'c'), 'ai/agent', 'Agent', { x: 0, y: 0 });
    expect(doc.nodes.find((n) => n.key === key)!.node).toEqual({ id: 'agent1', type: 'ai/agent', name: 'Agent', configuration: {} });
  });
});
