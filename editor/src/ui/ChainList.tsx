import { useState } from 'react';
import type { ChainInfo } from '../types';
import { Icon } from './Icon';

interface Props {
  chains: ChainInfo[];
  open: string | null;
  draft: string | null;
  onOpen: (id: string) => void;
  onNew: () => void;
  onRename: (id: string) => void;
  onDuplicate: (id: string) => void;
  onDelete: (id: string) => void;
  onImport: (file: File) => void;
}

export function ChainList(p: Props) {
  const [filter, setFilter] = useState('');
  const shown = p.chains.filter((c) => `${c.id} ${c.name}`.toLowerCase().includes(filter.toLowerCase()));
  return (
    <section className="chain-list" aria-label="Chains">
      <div className="section-head">
        <h2>Chains</h2>
        <button type="button" onClick={p.onNew} title="New chain (Alt+N)">
          New
        </button>
        <label className="button" title="Import a chain file">
          Import
          <input
            type="file"
            accept=".json,application/json"
            data-testid="import-file"
            className="visually-hidden"
            onChange={(e) => {
              const f = e.target.files?.[0];
              if (f) p.onImport(f);
              e.target.value = '';
            }}
          />
        </label>
      </div>
      <input type="search" placeholder="Filter chains" aria-label="Filter chains" value={filter} onChange={(e) => setFilter(e.target.value)} />
      <ul>
        {p.draft && !p.chains.some((c) => c.id === p.draft) && (
          <li className="current draft">
            <span className="chain-name">{p.draft}</span> <span className="badge">not deployed</span>
          </li>
        )}
        {shown.map((c) => (
          <li key={c.id} className={c.id === p.open ? 'current' : ''} data-chain={c.id}>
            <button type="button" className="chain-open" onClick={() => p.onOpen(c.id)} aria-current={c.id === p.open ? 'true' : undefined} title={c.description ?? c.id}>
              <span className="chain-name">{c.name || c.id}</span>
              {c.isAgent && (
                <span className="badge agent" title="An agent: the chain has an ai/agent node">
                  agent
                </span>
              )}
              {c.endpoints && c.endpoints.length > 0 && (
                <span
                  className="badge endpoint"
                  title={c.endpoints.map((e) => `${e.type} ${e.address ?? ''} ${(e.routes ?? []).join(' ')}`.replace(/\s+/g, ' ').trim()).join('\n')}
                >
                  {c.endpoints.map((e) => e.type).join(', ')}
                </span>
              )}
              {c.error && (
                <span className="badge problem" title={c.error}>
                  !
                </span>
              )}
              <span className="chain-id">{c.id}</span>
            </button>
            <span className="chain-actions">
              <button type="button" aria-label={`Rename ${c.id}`} title="Rename" onClick={() => p.onRename(c.id)}>
                <Icon name="edit" />
              </button>
              <button type="button" aria-label={`Duplicate ${c.id}`} title="Duplicate" onClick={() => p.onDuplicate(c.id)}>
                <Icon name="copy" />
              </button>
              <button type="button" aria-label={`Delete ${c.id}`} title="Delete" onClick={() => p.onDelete(c.id)}>
                <Icon name="delete" />
              </button>
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}
