// The server API the editor is built on (README: the API reference).

import { auth } from './auth';
import type { RecordMeta, StoredRecord } from './stored';
import type { ChainDSL, ChainInfo, Components, DiscoveredTool, JsonObject, Problem, RunAnswer, RunBody } from './types';

export class APIError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly problems: Problem[] = [],
    readonly warnings: Problem[] = [],
  ) {
    super(message);
  }
}

async function call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: auth.headers(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  if (path.startsWith('/api/')) auth.saw(res.status);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: reported below with the status
  }
  if (!res.ok) {
    const e = (json ?? {}) as { error?: string; problems?: Problem[]; warnings?: Problem[] };
    throw new APIError(e.error || `${method} ${path}: ${res.status} ${text.slice(0, 200)}`, res.status, e.problems ?? [], e.warnings ?? []);
  }
  return json as T;
}

const enc = encodeURIComponent;

export const api = {
  chains: () => call<ChainInfo[]>('GET', '/api/v1/chains'),
  chain: (id: string) => call<ChainDSL>('GET', `/api/v1/chains/${enc(id)}`),
  save: (id: string, dsl: ChainDSL) => call<ChainInfo & { warnings?: Problem[] }>('PUT', `/api/v1/chains/${enc(id)}`, dsl),
  remove: (id: string) => call<void>('DELETE', `/api/v1/chains/${enc(id)}`),
  components: () => call<Components>('GET', '/api/v1/components'),
  // readOnly: the server was started with --read-only and refuses PUT and DELETE;
  // verifiedIdentity: it decides who calls (--auth), not the user id a request names.
  health: () => call<{ status: string; readOnly?: boolean; verifiedIdentity?: boolean }>('GET', '/healthz'),
  discover: (entry: JsonObject) => call<{ tools: DiscoveredTool[] }>('POST', '/api/v1/tools/mcp/discover', entry),
  cancel: (runId: string) => call<{ runId: string; cancelled: boolean }>('POST', `/api/v1/runs/${enc(runId)}/cancel`),
  // agui answers an SSE stream of AG-UI events: the caller reads the body.
  agui: (id: string, input: unknown, signal: AbortSignal) => stream(`/api/v1/chains/${enc(id)}/agui`, input, signal),
  // run runs any chain once with message data and metadata, and answers
  // its final message (README: Runs).
  run: (id: string, body: RunBody, signal?: AbortSignal) => call<RunAnswer>('POST', `/api/v1/chains/${enc(id)}/run`, body, signal),
  // records lists a chain's recorded runs, newest first; record is one
  // with its events; fork streams a fork's AG-UI events (README: Recorded
  // runs: replay and fork).
  records: (chainId: string) => call<RecordMeta[]>('GET', `/api/v1/records?chain=${enc(chainId)}&limit=20`),
  record: (runId: string) => call<StoredRecord>('GET', `/api/v1/runs/${enc(runId)}/record`),
  fork: (runId: string, body: unknown, signal: AbortSignal) => stream(`/api/v1/runs/${enc(runId)}/fork`, body, signal),
  wsURL: () => {
    const u = new URL('/api/v1/ws', location.href);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    return u.toString();
  },
};

async function stream(path: string, input: unknown, signal: AbortSignal): Promise<Response> {
  const res = await fetch(path, {
    method: 'POST',
    headers: auth.headers({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
    body: JSON.stringify(input),
    signal,
  });
  auth.saw(res.status);
  return res;
}
