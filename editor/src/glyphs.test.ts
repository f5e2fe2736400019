import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// Characters the editor may show as text: typographic punctuation that
// every text font has (DejaVu, Liberation). Symbols such as ⏳, ✓, ✕ or ●
// need an emoji or symbol font that a plain Debian Chromium lacks, where
// they render as empty boxes: the editor draws those as SVG icons (ui/Icon).
const ALLOWED = new Set([...'…‘’“”–—·→']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'testdata' ? [] : sources(p);
    return /\.(tsx?|css)$/.test(e.name) && !/\.test\.tsx?$/.test(e.name) ? [p] : [];
  });
}

// shown drops comments, which never reach the page.
function shown(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

describe('glyphs', () => {
  it('the editor shows no character that needs an emoji or symbol font', () => {
    const found: string[] = [];
    for (const file of sources(join(__dirname))) {
      shown(readFileSync(file, 'utf8'))
        .split('\n')
        .forEach((line, i) => {
          for (const ch of line) if (ch > '\u007f' && !ALLOWED.has(ch)) found.push(`${file.slice(__dirname.length + 1)}:${i + 1}: ${ch} (U+${ch.codePointAt(0)!.toString(16).toUpperCase()})`);
        });
    }
    expect(found).toEqual([]);
  });
});
