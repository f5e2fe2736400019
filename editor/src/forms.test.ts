import { describe, expect, it } from 'vitest';
import components from './testdata/components.json';
import { fieldsOfForm, fieldsOfSchema, fromText, toText, validateConfig, validateValue } from './forms';
import type { Components } from './types';

const data = components as unknown as Components;
const form = (type: string) => data.nodes.find((n) => n.type === type)!;

describe('fields from RuleGo component forms', () => {
  const cases: { type: string; field: string; kind: string; required: boolean; message?: string }[] = [
    { type: 'jsFilter', field: 'jsScript', kind: 'text', required: true, message: 'This field is required' },
    { type: 'ai/agent', field: 'systemPrompt', kind: 'textarea', required: false },
    { type: 'ai/agent', field: 'maxStep', kind: 'integer', required: false },
    { type: 'ai/agent', field: 'parallelToolCalls', kind: 'bool', required: false },
    { type: 'ai/agent', field: 'params', kind: 'json', required: false },
    { type: 'ai/agent', field: 'tools', kind: 'json', required: false },
    { type: 'restApiCall', field: 'requestMethod', kind: 'select', required: false },
    { type: 'restApiCall', field: 'headers', kind: 'json', required: false },
    { type: 'sendEmail', field: 'email', kind: 'group', required: false },
    { type: 'switch', field: 'cases', kind: 'json', required: true },
    { type: 'groupAction', field: 'nodeIds', kind: 'json', required: true },
    { type: 'mqttClient', field: 'qos', kind: 'integer', required: false },
  ];
  for (const c of cases) {
    it(`${c.type}.${c.field} is ${c.kind}${c.required ? ', required' : ''}`, () => {
      const f = fieldsOfForm(form(c.type)).find((x) => x.name === c.field)!;
      expect(f.kind).toBe(c.kind);
      expect(f.required).toBe(c.required);
      if (c.message) expect(f.requiredMessage).toBe(c.message);
    });
  }

  it('keeps labels, descriptions and defaults', () => {
    const url = fieldsOfForm(form('ai/agent')).find((f) => f.name === 'url')!;
    expect(url.label).toBe('LLM base URL');
    expect(url.desc).toMatch(/OpenAI-compatible/);
    expect(url.defaultValue).toBe('${global.llm_url}');
  });

  it('gives a select its options', () => {
    const f = fieldsOfForm(form('restApiCall')).find((x) => x.name === 'requestMethod')!;
    expect(f.options!.map((o) => o.value)).toEqual(['GET', 'POST', 'PUT', 'DELETE', 'PATCH']);
  });

  it('builds sub-fields of a struct, with their own required rules', () => {
    const email = fieldsOfForm(form('sendEmail')).find((x) => x.name === 'email')!;
    const from = email.fields!.find((f) => f.name === 'from')!;
    expect(from.required).toBe(true);
    expect(validateValue(email, { from: '', to: 'a@b' })).toBe('From: This field is required');
    expect(validateValue(email, { from: 'x@y', to: 'a@b', subject: 's', body: 'b' })).toBeNull();
  });

  it('counts an absent key with a default as set: RuleGo fills the default in', () => {
    const script = fieldsOfForm(form('jsFilter')).find((f) => f.name === 'jsScript')!;
    expect(script.required).toBe(true);
    expect(validateValue(script, undefined)).toBeNull();
    expect(validateValue(script, '')).toBe('This field is required');
    const url = fieldsOfForm(form('restApiCall')).find((f) => f.name === 'restEndpointUrlPattern')!;
    expect(validateValue(url, undefined)).toBe('This field is required');
  });
});

describe('validation messages', () => {
  const fields = fieldsOfForm(form('jsFilter'));
  it('says a required field is missing', () => {
    // Absent, the script is RuleGo's default; empty, it is missing.
    expect(validateConfig(fields, {})).toEqual({});
    expect(validateConfig(fields, { jsScript: '' })).toEqual({ jsScript: 'This field is required' });
    expect(validateConfig(fields, { jsScript: 'return true' })).toEqual({});
  });
  const maxStep = fieldsOfForm(form('ai/agent')).find((f) => f.name === 'maxStep')!;
  const params = fieldsOfForm(form('ai/agent')).find((f) => f.name === 'params')!;
  const table: { name: string; field: typeof maxStep; text: string; ok: boolean; value?: unknown; message?: RegExp }[] = [
    { name: 'a whole number', field: maxStep, text: '12', ok: true, value: 12 },
    { name: 'a fraction in an integer field', field: maxStep, text: '1.5', ok: false, message: /whole number/ },
    { name: 'not a number', field: maxStep, text: 'ten', ok: false, message: /number/ },
    { name: 'empty removes the key', field: maxStep, text: '', ok: true, value: undefined },
    { name: 'JSON object', field: params, text: '{"temperature": 0}', ok: true, value: { temperature: 0 } },
    { name: 'broken JSON', field: params, text: '{"temperature": }', ok: false, message: /Invalid JSON/ },
  ];
  for (const c of table) {
    it(c.name, () => {
      const r = fromText(c.field, c.text);
      expect(r.ok).toBe(c.ok);
      if (r.ok) expect(r.value).toEqual(c.value);
      else expect(r.message).toMatch(c.message!);
    });
  }
  it('lets untyped RuleGo fields hold text or JSON', () => {
    const ids = fieldsOfForm(form('groupAction')).find((f) => f.name === 'nodeIds')!;
    expect(fromText(ids, 'a,b')).toEqual({ ok: true, value: 'a,b' });
    expect(fromText(ids, '["a","b"]')).toEqual({ ok: true, value: ['a', 'b'] });
    expect(toText(ids, 'a,b')).toBe('a,b');
  });
});

describe('fields from a built-in tool config schema', () => {
  const bash = data.builtins!.find((b) => b.name === 'bash')!;
  const fields = fieldsOfSchema(bash.configSchema);
  const by = (n: string) => fields.find((f) => f.name === n)!;
  it('maps JSON Schema types to inputs', () => {
    expect(by('workDir').kind).toBe('text');
    expect(by('maxOutputSize').kind).toBe('integer');
    expect(by('allow').kind).toBe('list');
    expect(by('env').kind).toBe('json');
    expect(by('timeout').kind).toBe('json');
    expect(by('timeout').textOk).toBe(true);
    expect(by('mode').defaultValue).toBe('deny');
  });
  it('reads list fields one item a line', () => {
    expect(fromText(by('allow'), 'ls\n grep \n\n')).toEqual({ ok: true, value: ['ls', 'grep'] });
    expect(toText(by('allow'), ['ls', 'grep'])).toBe('ls\ngrep');
  });
  it('reads a duration or milliseconds', () => {
    expect(fromText(by('timeout'), '30s')).toEqual({ ok: true, value: '30s' });
    expect(fromText(by('timeout'), '1500')).toEqual({ ok: true, value: 1500 });
  });
});
