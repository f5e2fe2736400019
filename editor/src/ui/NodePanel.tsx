import type { Doc, DocNode } from '../dsl';
import { isObject } from '../dsl';
import { fieldsOfForm, type FieldSpec } from '../forms';
import { messageAt, under, type Located } from '../problems';
import { relationOptions } from '../relations';
import { setKeys } from '../tools';
import type { BuiltinInfo, ChainInfo, ComponentForm, Json, JsonObject, RuleNode } from '../types';
import { AgentPanel } from './AgentPanel';
import { FieldInput } from './FieldInput';
import { Icon } from './Icon';

interface Props {
  doc: Doc;
  node: DocNode;
  form: ComponentForm | undefined;
  forms: Map<string, ComponentForm>;
  builtins: BuiltinInfo[];
  chains: ChainInfo[];
  problems: Located[];
  onNode: (f: (n: RuleNode) => RuleNode, tag: string | null) => void;
  onFirst: () => void;
  onConnect: (to: string, type: string) => void;
  onEdgeType: (key: string, type: string) => void;
  onEdgeRemove: (key: string) => void;
}

const idSpec: FieldSpec = { name: 'id', label: 'Node id', desc: 'Unique in the chain; connections and the trace use it.', kind: 'text', required: true, requiredMessage: 'A node needs an id' };
const nameSpec: FieldSpec = { name: 'name', label: 'Name', desc: '', kind: 'text', required: false, requiredMessage: '' };
const debugSpec: FieldSpec = { name: 'debugMode', label: 'Debug mode', desc: 'Report this node’s messages to RuleGo’s debug callback.', kind: 'bool', required: false, requiredMessage: '' };

export function NodePanel(p: Props) {
  const { node: dn, form } = p;
  const n = dn.node;
  const config: JsonObject = isObject(n.configuration) ? n.configuration : {};
  const fields = fieldsOfForm(form);
  const configProblems = under(p.problems, 'configuration');
  const setConfig = (name: string, tag: string | null = `config.${name}`) => (v: Json | undefined) =>
    p.onNode((node) => ({ ...node, configuration: setKeys(isObject(node.configuration) ? node.configuration : {}, { [name]: v }) }), tag);
  const duplicateId = p.doc.nodes.some((o) => o.key !== dn.key && o.node.id === n.id);
  const others = fields.length ? Object.keys(config).filter((k) => !fields.some((f) => f.name === k)) : [];
  const outgoing = p.doc.edges.filter((e) => e.from === dn.key);
  const relations = relationOptions(form, n, outgoing.map((e) => e.type));
  const nameOf = (key: string) => {
    const t = p.doc.nodes.find((x) => x.key === key);
    return t ? t.node.name || t.node.id || key : key;
  };
  const nodeLevel = p.problems.filter((l) => !l.field);

  return (
    <div className="node-panel" data-testid="node-panel">
      <header>
        <h2>{n.name || n.id}</h2>
        <p className="desc">
          <code>{n.type}</code> {form?.desc}
          {!form && <span className="msg"> This server has no component of this type.</span>}
        </p>
        {nodeLevel.map((l, i) => (
          <p key={i} className="msg" role="alert">
            {l.problem.message}
          </p>
        ))}
      </header>
      <FieldInput spec={idSpec} value={n.id} problem={duplicateId ? 'Another node has this id' : messageAt(p.problems, 'id')} onChange={(v) => p.onNode((x) => ({ ...x, id: String(v ?? '') }), 'id')} />
      <FieldInput spec={nameSpec} value={n.name} problem={messageAt(p.problems, 'name')} onChange={(v) => p.onNode((x) => setKeys(x as JsonObject, { name: v }) as RuleNode, 'name')} />
      <div className="row">
        <FieldInput spec={debugSpec} value={n.debugMode} onChange={(v) => p.onNode((x) => setKeys(x as JsonObject, { debugMode: v || undefined }) as RuleNode, 'debug')} />
        <button type="button" disabled={p.doc.firstKey === dn.key} onClick={p.onFirst}>
          {p.doc.firstKey === dn.key ? 'First node' : 'Make first node'}
        </button>
      </div>

      {n.type === 'ai/agent' ? (
        <AgentPanel config={config} fields={fields} problems={configProblems} builtins={p.builtins} chains={p.chains} self={String(p.doc.top.ruleChain && (p.doc.top.ruleChain as JsonObject).id)} setConfig={setConfig} />
      ) : (
        <section aria-label="Configuration">
          <h3>Configuration</h3>
          {fields.length === 0 && !others.length && <p className="empty">Nothing to configure.</p>}
          {fields.map((f) => (
            <FieldInput key={f.name} spec={f} value={config[f.name]} problem={messageAt(configProblems, f.name)} onChange={setConfig(f.name)} path={`configuration.${f.name}`} />
          ))}
        </section>
      )}
      {(others.length > 0 || (!form && Object.keys(config).length > 0)) && (
        <section aria-label="Other configuration">
          <h3>Other configuration</h3>
          <p className="desc">Keys the component form does not describe; kept as they are.</p>
          {(form ? others : Object.keys(config)).map((k) => (
            <FieldInput key={k} spec={{ name: k, label: k, desc: '', kind: 'json', textOk: true, required: false, requiredMessage: '' }} value={config[k]} problem={messageAt(configProblems, k)} onChange={setConfig(k)} />
          ))}
        </section>
      )}

      <section aria-label="Connections">
        <h3>Connections</h3>
        <ul className="connections">
          {outgoing.map((e) => (
            <li key={e.key}>
              <select aria-label={`Relation to ${nameOf(e.to)}`} value={e.type} onChange={(ev) => p.onEdgeType(e.key, ev.target.value)}>
                {[...new Set([...relations, e.type])].map((r) => (
                  <option key={r}>{r}</option>
                ))}
              </select>
              <span> → {nameOf(e.to)}</span>
              <button type="button" aria-label={`Remove the ${e.type} connection to ${nameOf(e.to)}`} onClick={() => p.onEdgeRemove(e.key)}>
                <Icon name="close" />
              </button>
            </li>
          ))}
        </ul>
        <AddConnection doc={p.doc} from={dn.key} relations={relations} onAdd={p.onConnect} />
      </section>
    </div>
  );
}

function AddConnection({ doc, from, relations, onAdd }: { doc: Doc; from: string; relations: string[]; onAdd: (to: string, type: string) => void }) {
  const targets = doc.nodes.filter((n) => n.key !== from);
  if (!targets.length) return null;
  return (
    <form
      className="add-connection"
      onSubmit={(e) => {
        e.preventDefault();
        const f = new FormData(e.currentTarget);
        const type = String(f.get('custom') || f.get('type'));
        if (type) onAdd(String(f.get('to')), type);
        e.currentTarget.reset();
      }}
    >
      <select name="type" aria-label="Relation">
        {relations.map((r) => (
          <option key={r}>{r}</option>
        ))}
      </select>
      <input name="custom" aria-label="Custom relation" placeholder="or custom" size={8} />
      <select name="to" aria-label="Target node">
        {targets.map((t) => (
          <option key={t.key} value={t.key}>
            {t.node.name || t.node.id}
          </option>
        ))}
      </select>
      <button type="submit">Connect</button>
    </form>
  );
}
