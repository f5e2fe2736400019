import { useMemo, useState } from 'react';
import type { ComponentForm } from '../types';
import { NODE_MIME } from './Canvas';

// category names RuleGo leaves as a Go package path get a readable one.
function categoryOf(f: ComponentForm): string {
  if (f.type === 'ai/agent' || f.type.startsWith('ai/')) return 'ai';
  const c = f.category || 'other';
  return c.includes('/') ? 'other' : c;
}

const ORDER = ['ai', 'common', 'flow', 'filter', 'transform', 'action', 'external', 'other'];

export function Palette({ forms, onAdd }: { forms: ComponentForm[]; onAdd: (type: string) => void }) {
  const [q, setQ] = useState('');
  const groups = useMemo(() => {
    const m = new Map<string, ComponentForm[]>();
    const needle = q.trim().toLowerCase();
    for (const f of forms) {
      if (f.disabled || f.type.startsWith('test/')) continue;
      if (needle && !`${f.type} ${f.label} ${f.desc}`.toLowerCase().includes(needle)) continue;
      const c = categoryOf(f);
      m.set(c, [...(m.get(c) ?? []), f]);
    }
    return [...m.entries()].sort((a, b) => (ORDER.indexOf(a[0]) + 99) % 99 - (ORDER.indexOf(b[0]) + 99) % 99 || a[0].localeCompare(b[0]));
  }, [forms, q]);
  return (
    <section className="palette" aria-label="Palette">
      <h2>Nodes</h2>
      <input type="search" placeholder="Search nodes" aria-label="Search nodes" value={q} onChange={(e) => setQ(e.target.value)} />
      <p className="desc">Drag onto the canvas, or press Enter to add.</p>
      {groups.map(([cat, list]) => (
        <details key={cat} open={cat === 'ai' || cat === 'flow' || q !== ''}>
          <summary>{cat}</summary>
          <ul>
            {list.map((f) => (
              <li
                key={f.type}
                className="palette-item"
                draggable
                tabIndex={0}
                role="button"
                data-type={f.type}
                title={f.desc}
                aria-label={`Add ${f.type}`}
                onDragStart={(e) => {
                  e.dataTransfer.setData(NODE_MIME, f.type);
                  e.dataTransfer.effectAllowed = 'copy';
                }}
                onKeyDown={(e) => {
                  if (e.key === 'Enter' || e.key === ' ') {
                    e.preventDefault();
                    onAdd(f.type);
                  }
                }}
                onDoubleClick={() => onAdd(f.type)}
              >
                <span className="palette-type">{f.type}</span>
                <span className="palette-desc">{f.desc}</span>
              </li>
            ))}
          </ul>
        </details>
      ))}
    </section>
  );
}
