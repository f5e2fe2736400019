// The Run panel's message mode: one message (data and metadata, typed as
// JSON) sent to POST /api/v1/chains/{id}/run, for any chain, and the final
// message it answers with, beside the nodes the live trace saw it pass.

import { isObject } from './dsl';
import { parseJSON } from './jsonText';
import type { Json, JSONSchema, JsonObject, RunAnswer, RunBody } from './types';

export type DataKind = 'json' | 'text';

export interface MessageForm {
  data: string;
  dataAs: DataKind;
  metadata: string;
}

export interface FormErrors {
  data?: string;
  metadata?: string;
}

// Step is one node the run passed, from the WebSocket trace.
export interface Step {
  nodeId: string;
  relation?: string;
  error?: string;
  durationMs?: number;
  // entered, told and done: the trace's IN, OUT and DONE frames seen.
  entered?: boolean;
  told?: boolean;
  done: boolean;
}

export interface MessageResult {
  runId: string;
  // sent is the body as it went, to show beside the answer.
  sent: RunBody;
  start: number;
  end?: number;
  answer?: RunAnswer;
  // error is why there is no answer (the server refused the request).
  error?: string;
  steps: Step[];
}

export interface MessageRuns {
  form: MessageForm;
  results: MessageResult[];
}

// newMessageRuns starts a chain's form from its input schema, if it
// declares one (an object with each property empty), else from {}.
export function newMessageRuns(schema?: JSONSchema | JsonObject): MessageRuns {
  return { form: { data: JSON.stringify(example(schema as JSONSchema | undefined) ?? {}, null, 2), dataAs: 'json', metadata: '{}' }, results: [] };
}

function example(s: JSONSchema | undefined): Json | undefined {
  if (!s || typeof s !== 'object') return undefined;
  if (s.default !== undefined) return s.default;
  if (s.enum?.length) return s.enum[0];
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') : s.type;
  switch (t) {
    case 'object': {
      const out: JsonObject = {};
      for (const [k, p] of Object.entries(s.properties ?? {})) out[k] = example(p) ?? '';
      return out;
    }
    case 'array':
      return [];
    case 'string':
      return '';
    case 'integer':
    case 'number':
      return 0;
    case 'boolean':
      return false;
  }
  return s.properties ? example({ ...s, type: 'object' }) : undefined;
}

// checkForm says what is wrong with the typed data and metadata, before
// anything is sent.
export function checkForm(f: MessageForm): FormErrors {
  const out: FormErrors = {};
  if (f.dataAs === 'text') {
    if (!f.data.trim()) out.data = 'Type the message text.';
  } else if (!f.data.trim()) {
    out.data = 'Type the message data as a JSON object, such as {"orderId": "A-1001"}.';
  } else {
    const p = parseJSON(f.data);
    if (!p.ok) out.data = `Invalid JSON: ${p.message}`;
    else if (!isObject(p.value)) out.data = 'The data must be a JSON object; send other values as text.';
  }
  if (f.metadata.trim()) {
    const p = parseJSON(f.metadata);
    if (!p.ok) out.metadata = `Invalid JSON: ${p.message}`;
    else if (!isObject(p.value)) out.metadata = 'The metadata must be a JSON object of keys and values.';
  }
  return out;
}

// runBody is the request for a checked form. Metadata values that are not
// strings become their JSON on the server (message metadata is strings).
export function runBody(f: MessageForm, runId: string): RunBody {
  const body: RunBody = { input: f.dataAs === 'text' ? f.data : (JSON.parse(f.data) as Json), runId };
  const md = f.metadata.trim() ? (JSON.parse(f.metadata) as JsonObject) : {};
  if (Object.keys(md).length) body.metadata = md;
  return body;
}

// pretty shows message data: indented when it is JSON, as it is otherwise.
export function pretty(data: string): string {
  const t = data.trim();
  if (!t.startsWith('{') && !t.startsWith('[')) return data;
  try {
    return JSON.stringify(JSON.parse(t), null, 2);
  } catch {
    return data;
  }
}

// The metadata the server adds to every run, shown apart from the chain's.
export const RUN_METADATA = new Set(['runId', 'threadId']);
