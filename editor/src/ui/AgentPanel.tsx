import type { FieldSpec } from '../forms';
import { messageAt, under, type Located } from '../problems';
import { toolsOf } from '../tools';
import type { BuiltinInfo, ChainInfo, Json, JsonObject } from '../types';
import { FieldInput } from './FieldInput';
import { PromptEditor } from './PromptEditor';
import { ToolsEditor } from './ToolsEditor';

interface Props {
  config: JsonObject;
  fields: FieldSpec[];
  problems: Located[];
  builtins: BuiltinInfo[];
  chains: ChainInfo[];
  self: string;
  setConfig: (name: string, tag?: string | null) => (v: Json | undefined) => void;
}

const MODEL: [string, string, string][] = [
  ['url', '${global.llm_url}', 'llm_url (or OPENAI_BASE_URL)'],
  ['key', '${global.api_key}', 'api_key (or OPENAI_API_KEY)'],
  ['model', '${global.model}', 'model (or OPENAI_MODEL)'],
];
const LIMITS = ['maxStep', 'maxToolOutputLength', 'maxToolCalls', 'timeout', 'maxDepth', 'maxConcurrentSubagents', 'repeatLimit'];
const HANDLED = new Set(['url', 'key', 'model', 'systemPrompt', 'tools', ...LIMITS]);

// The ai/agent node's panel: model, prompt, limits and tools first, the
// rest of its form after.
export function AgentPanel({ config, fields, problems, builtins, chains, self, setConfig }: Props) {
  const spec = (name: string): FieldSpec => fields.find((f) => f.name === name) ?? { name, label: name, desc: '', kind: 'text', required: false, requiredMessage: '' };
  const field = (name: string, extra: Partial<React.ComponentProps<typeof FieldInput>> = {}) => (
    <FieldInput key={name} spec={spec(name)} value={config[name]} problem={messageAt(problems, name)} onChange={setConfig(name)} path={`configuration.${name}`} {...extra} />
  );
  const prompt = spec('systemPrompt');
  const toolProblems = under(problems, 'tools');
  const toolsMessage = problems.filter((l) => l.field === 'tools').map((l) => l.problem.message);
  return (
    <div className="agent-panel">
      <section aria-label="Model">
        <h3>Model</h3>
        {MODEL.map(([name, global, where]) =>
          field(name, {
            suggestions: [global],
            hint: (
              <span className="hint">
                {' '}
                <code>{global}</code> comes from <code>--global {where}</code>.
              </span>
            ),
          }),
        )}
      </section>
      <section aria-label="System prompt">
        <PromptEditor label={prompt.label} desc={prompt.desc} value={typeof config.systemPrompt === 'string' ? config.systemPrompt : ''} onChange={(v) => setConfig('systemPrompt')(v)} />
        <p className="msg">{messageAt(problems, 'systemPrompt')}</p>
      </section>
      <section aria-label="Limits">
        <h3>Limits</h3>
        <div className="grid2">{LIMITS.filter((n) => fields.some((f) => f.name === n)).map((n) => field(n))}</div>
      </section>
      <section aria-label="Tools editor">
        <h3>Tools</h3>
        {toolsMessage.map((m, i) => (
          <p key={i} className="msg" role="alert">
            {m}
          </p>
        ))}
        <ToolsEditor
          tools={toolsOf(config)}
          builtins={builtins}
          chains={chains}
          self={self}
          problems={toolProblems}
          onChange={(list, tag) => setConfig('tools', tag ? `tools.${tag}` : null)(list.length || 'tools' in config ? list : undefined)}
        />
      </section>
      <details className="advanced" open={problems.some((l) => !HANDLED.has((l.field ?? '').split(/[.[]/)[0]))}>
        <summary>More settings</summary>
        {fields.filter((f) => !HANDLED.has(f.name)).map((f) => field(f.name))}
      </details>
    </div>
  );
}
