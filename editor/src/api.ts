// The server API the editor is built on (README: the API reference).

import type { ChainDSL, ChainInfo, Components, DiscoveredTool, JsonObject, Problem } from './types';

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

// A server started with --token needs it on every call: open the editor as
// /?token=... once; it is kept for the tab's session only.
function token(): string {
  const fromURL = new URLSearchParams(location.search).get('token');
  if (fromURL) {
    sessionStorage.setItem('ruleagent.token', fromURL);
    history.replaceState(null, '', location.pathname);
  }
  return sessionStorage.getItem('ruleagent.token') ?? '';
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const t = token();
  return t ? { ...extra, Authorization: `Bearer ${t}` } : extra;
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
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
  // readOnly: the server was started with --read-only and refuses PUT and DELETE.
  health: () => call<{ status: string; readOnly?: boolean }>('GET', '/healthz'),
  discover: (entry: JsonObject) => call<{ tools: DiscoveredTool[] }>('POST', '/api/v1/tools/mcp/discover', entry),
  cancel: (runId: string) => call<{ runId: string; cancelled: boolean }>('POST', `/api/v1/runs/${enc(runId)}/cancel`),
  agui: (id: string, input: unknown, signal: AbortSignal) =>
    fetch(`/api/v1/chains/${enc(id)}/agui`, {
      method: 'POST',
      headers: headers({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
      body: JSON.stringify(input),
      signal,
    }),
  wsURL: () => {
    const t = token();
    const u = new URL('/api/v1/ws', location.href);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    if (t) u.searchParams.set('token', t);
    return u.toString();
  },
};
