import { useMemo, useState } from 'react';
import type { BuiltinInfo, ChainInfo, ComponentForm, JsonObject } from '../types';
import { NODE_MIME, TOOL_MIME } from './Canvas';

// category names RuleGo leaves as a Go package path get a readable one.
function categoryOf(f: ComponentForm): string {
  if (f.type === 'ai/agent' || f.type.startsWith('ai/')) return 'ai';
  const c = f.category || 'other';
  return c.includes('/') ? 'other' : c;
}

const ORDER = ['ai', 'common', 'flow', 'filter', 'transform', 'action', 'external', 'other'];

interface Props {
  forms: ComponentForm[];
  onAdd: (type: string) => void;
  builtins: BuiltinInfo[];
  chains: ChainInfo[];
  // onAddTool adds a tools entry to the selected agent (Enter on an item).
  onAddTool: (entry: JsonObject) => void;
}

export function Palette({ forms, onAdd, builtins, chains, onAddTool }: Props) {
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
  // Agent tools: entries of an agent's tools array, dropped onto the agent.
  const tools = useMemo(() => {
    const all: { key: string; label: string; desc: string; entry: JsonObject }[] = [
      ...builtins.map((b) => ({ key: `builtin:${b.name}`, label: b.name, desc: `built-in: ${b.description ?? ''}`, entry: { type: 'builtin', name: b.name } })),
      ...chains.map((c) => ({ key: `chain:${c.id}`, label: c.id, desc: `${c.isAgent ? 'sub-agent' : 'rule chain'}: ${c.description ?? c.name}`, entry: { type: c.isAgent ? 'agent' : 'rulechain', targetId: c.id } })),
      { key: 'mcp', label: 'MCP server', desc: 'the tools of an MCP server', entry: { type: 'mcp' } },
    ];
    const needle = q.trim().toLowerCase();
    return needle ? all.filter((t) => `${t.label} ${t.desc}`.toLowerCase().includes(needle)) : all;
  }, [builtins, chains, q]);
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
      <details className="palette-tools" open={q !== ''}>
        <summary>Agent tools</summary>
        <p className="desc">Drop onto an agent node, or select the agent and press Enter.</p>
        <ul>
          {tools.map((t) => (
            <li
              key={t.key}
              className="palette-item tool-item"
              draggable
              tabIndex={0}
              role="button"
              data-tool-item={t.key}
              title={t.desc}
              aria-label={`Add the tool ${t.label} to an agent`}
              onDragStart={(e) => {
                e.dataTransfer.setData(TOOL_MIME, JSON.stringify(t.entry));
                e.dataTransfer.effectAllowed = 'copy';
              }}
              onKeyDown={(e) => {
                if (e.key === 'Enter' || e.key === ' ') {
                  e.preventDefault();
                  onAddTool(t.entry);
                }
              }}
              onDoubleClick={() => onAddTool(t.entry)}
            >
              <span className="palette-type">{t.label}</span>
              <span className="palette-desc">{t.desc}</span>
            </li>
          ))}
        </ul>
      </details>
    </section>
  );
}
