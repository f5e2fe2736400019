// Form generation: RuleGo's component forms (and the JSON Schemas of the
// built-in tools' configs) become a list of field specs, which the node
// panel renders and validates. Values are kept as the DSL holds them.

import type { ComponentForm, ComponentFormField, Json, JSONSchema, JsonObject } from './types';
import { isObject } from './dsl';

export type FieldKind = 'text' | 'textarea' | 'code' | 'select' | 'number' | 'integer' | 'bool' | 'list' | 'json' | 'group';

export interface FieldSpec {
  name: string;
  label: string;
  desc: string;
  kind: FieldKind;
  required: boolean;
  requiredMessage: string;
  defaultValue?: Json;
  options?: { label: string; value: Json }[];
  // fields of a group (a RuleGo struct field with sub-fields).
  fields?: FieldSpec[];
  // textOk lets a json field also hold plain text (RuleGo fields of no type,
  // such as "comma-separated ids or an array").
  textOk?: boolean;
}

const REQUIRED = 'This field is required';

export function fieldFromForm(f: ComponentFormField): FieldSpec {
  const rule = (f.rules ?? []).find((r) => r.required);
  const spec: FieldSpec = {
    name: f.name,
    label: f.label || f.name,
    desc: f.desc ?? '',
    kind: kindOf(f),
    required: !!rule || !!f.required,
    requiredMessage: rule?.message || REQUIRED,
  };
  if (f.defaultValue !== undefined && f.defaultValue !== null) spec.defaultValue = f.defaultValue;
  if (f.component?.type === 'select') spec.options = f.component.options ?? [];
  if (spec.kind === 'group') spec.fields = (f.fields ?? []).map(fieldFromForm);
  if (f.type === '') spec.textOk = true;
  return spec;
}

function kindOf(f: ComponentFormField): FieldKind {
  switch (f.component?.type) {
    case 'select':
      return 'select';
    case 'textarea':
      return 'textarea';
    case 'codeEditor':
      return 'code';
  }
  switch (f.type) {
    case 'string':
      return 'text';
    case 'bool':
      return 'bool';
    case 'int':
    case 'int8':
    case 'int16':
    case 'int32':
    case 'int64':
    case 'uint':
    case 'uint8':
    case 'uint16':
    case 'uint32':
    case 'uint64':
      return 'integer';
    case 'float':
    case 'float32':
    case 'float64':
      return 'number';
    case 'struct':
      return f.fields && f.fields.length ? 'group' : 'json';
    default:
      return 'json';
  }
}

export function fieldsOfForm(form: ComponentForm | undefined): FieldSpec[] {
  return (form?.fields ?? []).map(fieldFromForm);
}

// fieldsOfSchema turns an object schema's properties into field specs.
export function fieldsOfSchema(schema: JSONSchema | undefined): FieldSpec[] {
  if (!schema?.properties) return [];
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, p]) => {
    const types = (Array.isArray(p.type) ? p.type : [p.type]).filter((t) => t && t !== 'null') as string[];
    let kind: FieldKind = 'json';
    if (p.enum) kind = 'select';
    else if (types.length === 1) {
      const t = types[0];
      if (t === 'string') kind = 'text';
      else if (t === 'integer') kind = 'integer';
      else if (t === 'number') kind = 'number';
      else if (t === 'boolean') kind = 'bool';
      else if (t === 'array' && p.items && p.items.type === 'string') kind = 'list';
    }
    const spec: FieldSpec = {
      name,
      label: name,
      desc: p.description ?? '',
      kind,
      required: required.has(name),
      requiredMessage: REQUIRED,
      // A value such as 30 or "30s" is typed as text, read back as a number
      // when it is one.
      textOk: kind === 'json' && types.every((t) => t === 'string' || t === 'integer' || t === 'number'),
    };
    if (p.default !== undefined) spec.defaultValue = p.default;
    if (p.enum) spec.options = p.enum.map((v) => ({ label: String(v), value: v }));
    return spec;
  });
}

export function isEmpty(v: Json | undefined): boolean {
  return v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0);
}

// validateValue returns the message to show under a field, or null.
// An absent key with a default is not missing: RuleGo fills the default in.
export function validateValue(f: FieldSpec, v: Json | undefined): string | null {
  if (v === undefined && !isEmpty(f.defaultValue)) return null;
  if (isEmpty(v)) return f.required ? f.requiredMessage : null;
  switch (f.kind) {
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v) ? null : 'Enter a whole number';
    case 'number':
      return typeof v === 'number' && Number.isFinite(v) ? null : 'Enter a number';
    case 'bool':
      return typeof v === 'boolean' ? null : 'Want true or false';
    case 'group':
      if (!isObject(v)) return 'Want an object';
      for (const sub of f.fields ?? []) {
        const m = validateValue(sub, v[sub.name]);
        if (m) return `${sub.label}: ${m}`;
      }
      return null;
  }
  return null;
}

// validateConfig checks a whole configuration; the result maps field
// names to messages.
export function validateConfig(fields: FieldSpec[], config: JsonObject | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of fields) {
    const m = validateValue(f, config?.[f.name]);
    if (m) out[f.name] = m;
  }
  return out;
}

// The text a json field shows, and how typed text becomes a value again.
export function toText(f: FieldSpec, v: Json | undefined): string {
  if (v === undefined || v === null) return '';
  if (f.kind === 'list') return Array.isArray(v) ? v.join('\n') : String(v);
  if (f.kind === 'json') return typeof v === 'string' && f.textOk ? v : JSON.stringify(v, null, 2);
  return String(v);
}

export type Parsed = { ok: true; value: Json | undefined } | { ok: false; message: string };

export function fromText(f: FieldSpec, text: string): Parsed {
  if (text.trim() === '') return { ok: true, value: undefined };
  switch (f.kind) {
    case 'integer':
    case 'number': {
      const n = Number(text);
      if (!Number.isFinite(n)) return { ok: false, message: 'Enter a number' };
      if (f.kind === 'integer' && !Number.isInteger(n)) return { ok: false, message: 'Enter a whole number' };
      return { ok: true, value: n };
    }
    case 'list':
      return { ok: true, value: text.split('\n').map((s) => s.trim()).filter(Boolean) };
    case 'json':
      try {
        return { ok: true, value: JSON.parse(text) as Json };
      } catch (e) {
        if (f.textOk) return { ok: true, value: text };
        return { ok: false, message: `Invalid JSON: ${(e as Error).message}` };
      }
    default:
      return { ok: true, value: text };
  }
}
