import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { DemoBadge } from './ui/DemoNotice';

describe('the demo model badge', () => {
  it('says so, and what to set, when the demo model answers', () => {
    const html = renderToStaticMarkup(<DemoBadge on />);
    expect(html).toContain('>demo model</span>');
    expect(html).toContain('OPENAI_BASE_URL');
  });
  it('shows nothing when a real model answers', () => {
    expect(renderToStaticMarkup(<DemoBadge on={false} />)).toBe('');
  });
});
