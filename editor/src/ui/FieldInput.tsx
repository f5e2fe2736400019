import { useEffect, useId, useState } from 'react';
import { fromText, toText, validateValue, type FieldSpec } from '../forms';
import type { Json, JsonObject } from '../types';
import { isObject } from '../dsl';

interface Props {
  spec: FieldSpec;
  value: Json | undefined;
  // onChange gets undefined to remove the key (RuleGo then uses its default).
  // It is called only for what the person changes: an absent key shows the
  // default and stays absent until then.
  onChange: (v: Json | undefined) => void;
  // problem is the server's message for this field, if any.
  problem?: string | null;
  // list suggests values (a datalist), such as ${global.model}.
  suggestions?: string[];
  hint?: React.ReactNode;
  // path names the field in data-field attributes, for tests and focus.
  path?: string;
}

export function FieldInput({ spec, value, onChange, problem, suggestions, hint, path }: Props) {
  const id = useId();
  const [draft, setDraft] = useState(() => toText(spec, value));
  const [parseError, setParseError] = useState<string | null>(null);
  const shown = toText(spec, value);

  // Follow outside changes (undo, another node) unless the draft means the same.
  useEffect(() => {
    const parsed = fromText(spec, draft);
    if (!parsed.ok || toText(spec, parsed.value) !== shown) {
      setDraft(shown);
      setParseError(null);
    }
  }, [shown]);

  const message = parseError ?? validateValue(spec, value) ?? problem ?? null;
  const absent = value === undefined;
  const textDefault = typeof spec.defaultValue === 'string' && spec.defaultValue !== '' ? spec.defaultValue : null;
  // Focusing an absent field with a text default offers the default to
  // edit, without writing it: only a change writes the key.
  const offerDefault = () => {
    if (absent && textDefault !== null && draft === '') setDraft(textDefault);
  };
  const withdrawDefault = () => {
    if (absent && draft === textDefault) setDraft('');
  };
  const describedBy = `${id}-desc ${id}-msg`;
  const common = {
    id,
    'aria-describedby': describedBy,
    'aria-invalid': message ? true : undefined,
    'data-field': path ?? spec.name,
  };

  const setText = (text: string) => {
    setDraft(text);
    const parsed = fromText(spec, text);
    if (!parsed.ok) {
      setParseError(parsed.message);
      return;
    }
    setParseError(null);
    onChange(parsed.value);
  };

  let input: React.ReactNode;
  switch (spec.kind) {
    case 'bool':
      input = <input type="checkbox" {...common} checked={(absent ? spec.defaultValue : value) === true} onChange={(e) => onChange(e.target.checked)} />;
      break;
    case 'select':
      input = (
        <select {...common} value={value === undefined || value === null ? '' : JSON.stringify(value)} onChange={(e) => onChange(e.target.value === '' ? undefined : (JSON.parse(e.target.value) as Json))}>
          <option value="">(default{spec.defaultValue !== undefined ? `: ${String(spec.defaultValue)}` : ''})</option>
          {(spec.options ?? []).map((o) => (
            <option key={JSON.stringify(o.value)} value={JSON.stringify(o.value)}>
              {o.label}
            </option>
          ))}
        </select>
      );
      break;
    case 'group': {
      const obj: JsonObject = isObject(value) ? value : {};
      return (
        <fieldset className="field group" data-field={path ?? spec.name}>
          <legend>
            {spec.label}
            {spec.required && <span className="req" aria-label="required"> *</span>}
          </legend>
          {spec.desc && <p className="desc">{spec.desc}</p>}
          {(spec.fields ?? []).map((sub) => (
            <FieldInput
              key={sub.name}
              spec={sub}
              value={obj[sub.name]}
              path={`${path ?? spec.name}.${sub.name}`}
              onChange={(v) => {
                const next = { ...obj };
                if (v === undefined) delete next[sub.name];
                else next[sub.name] = v;
                onChange(next);
              }}
            />
          ))}
          {problem && <p className="msg">{problem}</p>}
        </fieldset>
      );
    }
    case 'json':
      // A value such as 30 or "30s" reads better on one line.
      if (spec.textOk && (value === undefined || value === null || typeof value !== 'object')) {
        input = <input {...common} type="text" value={draft} placeholder={placeholder(spec)} onFocus={offerDefault} onBlur={withdrawDefault} onChange={(e) => setText(e.target.value)} />;
        break;
      }
    // falls through
    case 'textarea':
    case 'code':
    case 'list':
      input = (
        <textarea
          {...common}
          className={spec.kind === 'textarea' ? '' : 'mono'}
          rows={spec.kind === 'textarea' ? 4 : Math.min(10, Math.max(2, draft.split('\n').length))}
          value={draft}
          spellCheck={spec.kind === 'textarea'}
          placeholder={placeholder(spec)}
          onFocus={offerDefault}
          onBlur={withdrawDefault}
          onChange={(e) => setText(e.target.value)}
        />
      );
      break;
    default:
      input = (
        <>
          <input
            {...common}
            type="text"
            inputMode={spec.kind === 'integer' || spec.kind === 'number' ? 'decimal' : undefined}
            value={draft}
            placeholder={placeholder(spec)}
            list={suggestions ? `${id}-list` : undefined}
            onFocus={spec.kind === 'text' ? offerDefault : undefined}
            onBlur={spec.kind === 'text' ? withdrawDefault : undefined}
            onChange={(e) => setText(e.target.value)}
          />
          {suggestions && (
            <datalist id={`${id}-list`}>
              {suggestions.map((s) => (
                <option key={s} value={s} />
              ))}
            </datalist>
          )}
        </>
      );
  }
  return (
    <div className={`field ${spec.kind}${message ? ' has-msg' : ''}`}>
      <label htmlFor={id}>
        {spec.label}
        {spec.required && <span className="req" aria-label="required"> *</span>}
      </label>
      {spec.defaultValue !== undefined &&
        (absent ? (
          <span className="default-mark" title="Not set: the component's default applies. Changing it writes it into the chain.">
            default
          </span>
        ) : (
          <button type="button" className="reset" aria-label={`Reset ${spec.label} to its default`} title="Remove this setting from the chain: the component's default applies" onClick={() => onChange(undefined)}>
            reset
          </button>
        ))}
      {input}
      <p className="desc" id={`${id}-desc`}>
        {spec.desc}
        {hint}
      </p>
      <p className="msg" id={`${id}-msg`} role={message ? 'alert' : undefined}>
        {message}
      </p>
    </div>
  );
}

function placeholder(spec: FieldSpec): string | undefined {
  if (spec.defaultValue === undefined) return spec.kind === 'list' ? 'one per line' : undefined;
  return typeof spec.defaultValue === 'string' ? spec.defaultValue : JSON.stringify(spec.defaultValue);
}
