import { useState } from 'react';
import { api, APIError } from '../api';
import { isObject } from '../dsl';
import { fieldsOfSchema, type FieldSpec } from '../forms';
import { messageAt, under, type Located } from '../problems';
import {
  addTool,
  bindingsOf,
  moveTool,
  parameterNames,
  pickBuiltin,
  pickTarget,
  remoteName,
  removeTool,
  setBinding,
  setKeys,
  TOOL_TYPES,
  toolProblems,
  type ToolEntry,
  type ToolType,
} from '../tools';
import type { BuiltinInfo, ChainInfo, Json, JsonObject } from '../types';
import type { DiscoveredTool } from '../types';
import { FieldInput } from './FieldInput';
import { Icon } from './Icon';

interface Props {
  tools: ToolEntry[];
  onChange: (tools: ToolEntry[], tag?: string) => void;
  builtins: BuiltinInfo[];
  chains: ChainInfo[];
  self: string;
  // problems are the server's, relative to configuration.tools.
  problems: Located[];
}

const ADD_LABEL: Record<ToolType, string> = {
  builtin: 'Built-in tool',
  rulechain: 'Rule chain',
  agent: 'Sub-agent',
  mcp: 'MCP server',
};

export function ToolsEditor({ tools, onChange, builtins, chains, self, problems }: Props) {
  return (
    <section className="tools-editor" aria-label="Tools">
      {tools.length === 0 && <p className="empty">No tools: the agent can only answer from its prompt.</p>}
      <ol className="tool-list">
        {tools.map((t, i) => (
          <ToolCard
            key={i}
            index={i}
            count={tools.length}
            entry={t}
            builtins={builtins}
            chains={chains.filter((c) => c.id !== self)}
            problems={under(problems, `[${i}]`)}
            onChange={(e, tag) => onChange(tools.map((x, j) => (j === i ? e : x)), tag ? `tool${i}.${tag}` : undefined)}
            onMove={(by) => onChange(moveTool(tools, i, by))}
            onRemove={() => onChange(removeTool(tools, i))}
          />
        ))}
      </ol>
      <div className="tool-add" role="group" aria-label="Add a tool">
        {TOOL_TYPES.map((type) => (
          <button key={type} type="button" data-add-tool={type} onClick={() => onChange(addTool(tools, type))}>
            + {ADD_LABEL[type]}
          </button>
        ))}
      </div>
    </section>
  );
}

interface CardProps {
  index: number;
  count: number;
  entry: ToolEntry;
  builtins: BuiltinInfo[];
  chains: ChainInfo[];
  problems: Located[];
  onChange: (e: ToolEntry, tag?: string) => void;
  onMove: (by: -1 | 1) => void;
  onRemove: () => void;
}

const text = (label: string, name: string, desc = '', required = false): FieldSpec => ({ name, label, desc, kind: 'text', required, requiredMessage: 'This field is required' });

function ToolCard({ index, count, entry, builtins, chains, problems, onChange, onMove, onRemove }: CardProps) {
  const type = String(entry.type ?? '');
  const own = toolProblems(entry, builtins);
  const at = (field: string) => own[field] ?? messageAt(problems, field);
  const set = (k: string, tag?: string) => (v: Json | undefined) => onChange(setKeys(entry, { [k]: v }), tag ?? k);
  const title = String(entry.name || entry.targetId || '(new)');
  const general = problems.filter((p) => p.field === '').map((p) => p.problem.message).join('; ');
  return (
    <li className={`tool-card tool-${type}`} data-tool-index={index} tabIndex={-1} aria-label={`Tool ${index + 1}: ${type} ${title}`}>
      <div className="tool-head">
        <span className={`badge type-${type}`}>{type}</span>
        <span className="tool-title">{title}</span>
        <span className="spacer" />
        <button type="button" aria-label={`Move tool ${index + 1} up`} disabled={index === 0} onClick={() => onMove(-1)}>
          <Icon name="up" />
        </button>
        <button type="button" aria-label={`Move tool ${index + 1} down`} disabled={index === count - 1} onClick={() => onMove(1)}>
          <Icon name="down" />
        </button>
        <button type="button" aria-label={`Remove tool ${index + 1}`} onClick={onRemove}>
          <Icon name="close" />
        </button>
      </div>
      {general && <p className="msg">{general}</p>}
      {type === 'builtin' && <BuiltinFields entry={entry} builtins={builtins} at={at} onChange={onChange} problems={problems} />}
      {(type === 'rulechain' || type === 'agent') && <ChainFields entry={entry} chains={chains} at={at} onChange={onChange} />}
      {type === 'mcp' && <MCPFields entry={entry} at={at} onChange={onChange} problems={problems} />}
      <FieldInput spec={{ ...text('Timeout', 'timeout', 'Per-call timeout: milliseconds or a duration such as 30s.'), kind: 'json', textOk: true }} value={entry.timeout} problem={at('timeout')} onChange={set('timeout')} path={`tools[${index}].timeout`} />
    </li>
  );
}

type At = (field: string) => string | null;

function BuiltinFields({ entry, builtins, at, onChange, problems }: { entry: ToolEntry; builtins: BuiltinInfo[]; at: At; onChange: CardProps['onChange']; problems: Located[] }) {
  const b = builtins.find((x) => x.name === entry.name);
  const config: JsonObject = isObject(entry.config) ? entry.config : {};
  const configProblems = under(problems, 'config');
  return (
    <>
      <div className="field">
        <label>
          Built-in tool
          <select
            data-field="builtin"
            value={String(entry.name ?? '')}
            aria-invalid={at('name') ? true : undefined}
            onChange={(e) => {
              const next = builtins.find((x) => x.name === e.target.value);
              onChange(next ? pickBuiltin(entry, next) : setKeys(entry, { name: '' }));
            }}
          >
            <option value="">Pick a tool…</option>
            {builtins.map((x) => (
              <option key={x.name} value={x.name}>
                {x.name}
              </option>
            ))}
          </select>
        </label>
        <p className="desc">{b?.description}</p>
        <p className="msg">{at('name')}</p>
      </div>
      <FieldInput spec={text('Description for the model', 'description', 'Replaces the built-in description for this agent.')} value={entry.description} onChange={(v) => onChange(setKeys(entry, { description: v }), 'description')} problem={at('description')} />
      {b && (
        <fieldset className="group">
          <legend>{b.name} configuration</legend>
          {fieldsOfSchema(b.configSchema).map((f) => (
            <FieldInput
              key={f.name}
              spec={f}
              value={config[f.name]}
              path={`config.${f.name}`}
              problem={messageAt(configProblems, f.name)}
              onChange={(v) => {
                const next = setKeys(config, { [f.name]: v });
                onChange(setKeys(entry, { config: Object.keys(next).length ? next : undefined }), `config.${f.name}`);
              }}
            />
          ))}
        </fieldset>
      )}
    </>
  );
}

function ChainFields({ entry, chains, at, onChange }: { entry: ToolEntry; chains: ChainInfo[]; at: At; onChange: CardProps['onChange'] }) {
  const isAgent = entry.type === 'agent';
  const target = chains.find((c) => c.id === entry.targetId);
  const params = parameterNames(entry);
  const bind = bindingsOf(entry);
  const [paramText, setParamText] = useState<string | null>(null);
  const [paramError, setParamError] = useState<string | null>(null);
  const shownParams = paramText ?? (entry.parameters === undefined ? '' : typeof entry.parameters === 'string' ? entry.parameters : JSON.stringify(entry.parameters, null, 2));
  const options = [...chains].sort((a, b) => Number(!!b.isAgent === isAgent) - Number(!!a.isAgent === isAgent) || a.id.localeCompare(b.id));
  return (
    <>
      <div className="field">
        <label>
          {isAgent ? 'Agent to call' : 'Chain to run'}
          <select
            data-field="targetId"
            value={String(entry.targetId ?? '')}
            aria-invalid={at('targetId') ? true : undefined}
            onChange={(e) => {
              const c = chains.find((x) => x.id === e.target.value);
              if (c) {
                setParamText(null);
                onChange(pickTarget(entry, c));
              }
            }}
          >
            <option value="">Pick a chain…</option>
            {options.map((c) => (
              <option key={c.id} value={c.id}>
                {c.isAgent ? '[agent] ' : ''}
                {c.name || c.id} ({c.id})
              </option>
            ))}
          </select>
        </label>
        <p className="desc">{target?.description}</p>
        <p className="msg">{at('targetId')}</p>
      </div>
      <FieldInput spec={text('Tool name', 'name', isAgent ? 'Defaults to the chain’s name.' : 'The function name the model sees.', !isAgent)} value={entry.name} problem={at('name')} onChange={(v) => onChange(setKeys(entry, { name: v }), 'name')} />
      <FieldInput spec={{ ...text('Description', 'description', 'When the model should use it.'), kind: 'textarea' }} value={entry.description} problem={at('description')} onChange={(v) => onChange(setKeys(entry, { description: v }), 'description')} />
      <div className="field json">
        <label>
          Parameters (JSON Schema)
          <textarea
            className="mono"
            data-field="parameters"
            rows={Math.min(10, Math.max(3, shownParams.split('\n').length))}
            value={shownParams}
            placeholder={isAgent ? 'Defaults to the chain’s input schema, or {message}' : '{"type":"object","properties":{}}'}
            spellCheck={false}
            onChange={(e) => {
              setParamText(e.target.value);
              if (!e.target.value.trim()) {
                setParamError(null);
                onChange(setKeys(entry, { parameters: undefined }), 'parameters');
                return;
              }
              try {
                const v = JSON.parse(e.target.value) as Json;
                setParamError(null);
                onChange(setKeys(entry, { parameters: v }), 'parameters');
              } catch (err) {
                setParamError(`Invalid JSON: ${(err as Error).message}`);
              }
            }}
          />
        </label>
        <p className="msg">{paramError ?? at('parameters')}</p>
      </div>
      <fieldset className="group bindings">
        <legend>Parameter binding</legend>
        <p className="desc">A bound parameter is filled in from the message, never by the model (it does not see it): metadata.&lt;key&gt;, vars.&lt;key&gt;, global.&lt;key&gt; or const:&lt;value&gt;.</p>
        {params.length === 0 && Object.keys(bind).length === 0 && <p className="empty">No parameters to bind.</p>}
        <table>
          <tbody>
            {[...new Set([...params, ...Object.keys(bind)])].map((p) => (
              <tr key={p}>
                <th scope="row">
                  <code>{p}</code>
                </th>
                <td>
                  <input
                    type="text"
                    aria-label={`Bind ${p}`}
                    data-field={`bind.${p}`}
                    value={bind[p] ?? ''}
                    placeholder="filled in by the model"
                    list="bind-sources"
                    onChange={(e) => onChange(setBinding(entry, p, e.target.value), `bind.${p}`)}
                  />
                  <p className="msg">{at(`bind.${p}`)}</p>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <datalist id="bind-sources">
          {params.map((p) => (
            <option key={p} value={`metadata.${p}`} />
          ))}
        </datalist>
      </fieldset>
    </>
  );
}

function MCPFields({ entry, at, onChange, problems }: { entry: ToolEntry; at: At; onChange: CardProps['onChange']; problems: Located[] }) {
  const config: JsonObject = isObject(entry.config) ? entry.config : {};
  const filter = Array.isArray(config.tools) ? config.tools.map(String) : [];
  const [found, setFound] = useState<DiscoveredTool[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const configProblems = under(problems, 'config');
  const setConfig = (patch: Record<string, Json | undefined>, tag: string) => {
    const next = setKeys(config, patch);
    onChange(setKeys(entry, { config: next }), tag);
  };
  const discover = async () => {
    setBusy(true);
    setError(null);
    try {
      // Without the filter, so every tool of the server can be ticked.
      setFound((await api.discover(setKeys(entry, { config: setKeys(config, { tools: undefined }) }))).tools);
    } catch (e) {
      setFound(null);
      setError(e instanceof APIError ? e.message : `Discovery failed: ${(e as Error).message}`);
    } finally {
      setBusy(false);
    }
  };
  const toggle = (remote: string, on: boolean) => {
    const next = on ? [...filter, remote] : filter.filter((t) => t !== remote);
    setConfig({ tools: next.length ? next : undefined }, 'config.tools');
  };
  return (
    <>
      <FieldInput spec={text('Name prefix', 'name', 'The model sees <name>__<tool>.')} value={entry.name} problem={at('name')} onChange={(v) => onChange(setKeys(entry, { name: v }), 'name')} />
      <FieldInput
        spec={text('Server', 'server', '"self" (this server’s own chains), an http(s) URL, or stdio:<command line>.', true)}
        value={config.server}
        path="config.server"
        problem={at('server') ?? messageAt(configProblems, 'server')}
        onChange={(v) => setConfig({ server: v ?? '' }, 'config.server')}
        suggestions={['self', 'http://127.0.0.1:3001/mcp', 'stdio:']}
      />
      <FieldInput
        spec={{ ...text('Tool filter', 'tools', 'Names or globs of the server’s tools to offer; empty offers them all.'), kind: 'list' }}
        value={config.tools}
        path="config.tools"
        problem={messageAt(configProblems, 'tools')}
        onChange={(v) => setConfig({ tools: v }, 'config.tools')}
      />
      <div className="discover">
        <button type="button" onClick={discover} disabled={busy || !config.server}>
          {busy ? 'Discovering…' : 'Discover tools'}
        </button>
        {error && (
          <p className="msg" role="alert">
            {error}
          </p>
        )}
        {found && (
          <ul className="discovered" aria-label="Tools of the server">
            {found.length === 0 && <li>The server offers no tools.</li>}
            {found.map((t) => {
              const remote = remoteName(t);
              return (
                <li key={t.name}>
                  <label>
                    <input type="checkbox" checked={filter.includes(remote)} onChange={(e) => toggle(remote, e.target.checked)} />
                    <code>{t.name}</code> {t.description}
                  </label>
                </li>
              );
            })}
          </ul>
        )}
      </div>
    </>
  );
}

