import type { Doc } from '../dsl';
import { relationOptions } from '../relations';
import type { ComponentForm } from '../types';

// The inspector of one selected connection: its relation type.
export function EdgePanel({ doc, edgeKey, forms, onType, onRemove }: { doc: Doc; edgeKey: string; forms: Map<string, ComponentForm>; onType: (t: string) => void; onRemove: () => void }) {
  const e = doc.edges.find((x) => x.key === edgeKey)!;
  const from = doc.nodes.find((n) => n.key === e.from)!;
  const to = doc.nodes.find((n) => n.key === e.to)!;
  const options = relationOptions(forms.get(from.node.type), from.node, [e.type]);
  return (
    <div className="edge-panel">
      <h2>Connection</h2>
      <p>
        {from.node.name || from.node.id} → {to.node.name || to.node.id}
      </p>
      <label>
        Relation type
        <input list="edge-relations" value={e.type} onChange={(ev) => ev.target.value && onType(ev.target.value)} />
        <datalist id="edge-relations">
          {options.map((o) => (
            <option key={o} value={o} />
          ))}
        </datalist>
      </label>
      <button type="button" className="danger" onClick={onRemove}>
        Delete connection
      </button>
    </div>
  );
}
