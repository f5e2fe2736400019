import { chainOf, isObject, type Doc } from '../dsl';
import type { FieldSpec } from '../forms';
import type { Located } from '../problems';
import type { Json, JsonObject, Problem } from '../types';
import { FieldInput } from './FieldInput';

const spec = (name: string, label: string, kind: FieldSpec['kind'], desc = ''): FieldSpec => ({ name, label, desc, kind, required: false, requiredMessage: '' });

// What the inspector shows with nothing selected: the chain's own settings
// and every problem the server reported.
export function ChainPanel({ doc, located, warnings, selected, onChain }: { doc: Doc; located: Located[]; warnings: Problem[]; selected: number; onChain: (patch: JsonObject, tag: string | null) => void }) {
  const c = chainOf(doc);
  const info: JsonObject = isObject(c.additionalInfo) ? c.additionalInfo : {};
  const setInfo = (k: string) => (v: Json | undefined) => {
    const next = { ...info };
    if (v === undefined) delete next[k];
    else next[k] = v;
    onChain({ additionalInfo: next }, `chain.${k}`);
  };
  const nodeName = (i: number) => doc.nodes[i]?.node.name || doc.nodes[i]?.node.id || `node ${i}`;
  return (
    <div className="chain-panel">
      <h2>Chain</h2>
      {selected > 1 && <p className="note">{selected} nodes selected.</p>}
      <p className="desc">
        Id <code>{String(c.id)}</code>. Rename it from the chain list.
      </p>
      <FieldInput spec={spec('name', 'Name', 'text')} value={c.name} onChange={(v) => onChain({ name: v ?? '' }, 'chain.name')} />
      <FieldInput spec={spec('description', 'Description', 'textarea', 'Also what a sub-agent tool pointing here tells the model.')} value={info.description} onChange={setInfo('description')} />
      <FieldInput spec={spec('root', 'Root chain', 'bool')} value={c.root} onChange={(v) => onChain({ root: v === true }, null)} />
      <FieldInput spec={spec('disabled', 'Disabled', 'bool')} value={c.disabled} onChange={(v) => onChain({ disabled: v === true }, null)} />
      {located.length > 0 && (
        <section aria-label="Problems">
          <h3>Problems</h3>
          <ul className="problems">
            {located.map((l, i) => (
              <li key={i} className="msg">
                {l.node !== undefined ? <strong>{nodeName(l.node)}: </strong> : null}
                <code>{l.problem.path}</code> {l.problem.message}
              </li>
            ))}
          </ul>
        </section>
      )}
      {warnings.length > 0 && (
        <section aria-label="Warnings">
          <h3>Warnings</h3>
          <ul className="problems">
            {warnings.map((w, i) => (
              <li key={i}>
                <code>{w.path}</code> {w.message}
              </li>
            ))}
          </ul>
        </section>
      )}
    </div>
  );
}
