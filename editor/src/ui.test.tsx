import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { Toolbar } from './ui/Toolbar';
import { relationOptions } from './relations';

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
