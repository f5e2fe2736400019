// Rejoining a chat after the page reloads. The tab keeps the chat it is in
// (its chain, thread and each turn's run id; not the events) in
// sessionStorage, like the token: a reload finds it, a closed tab forgets
// it. On load the Run panel reads each turn's events again from the
// server's event log (GET /api/v1/runs/{id}/events, README: Rejoining a
// run) and folds them into the turn as they come: a finished run whole, a
// run still going whole and then live, until its terminal event.

import { apply, newRun, readSSE, ROOT, type AGUIEvent, type RunState } from './agui';

export interface SavedTurn {
  runId: string;
  user: string;
}

export interface SavedChat {
  chainId: string;
  threadId: string;
  turns: SavedTurn[];
}

type Store = Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>;

const KEY = 'ruleagent.chat';

export const chatStore: Store | null = typeof sessionStorage === 'undefined' ? null : sessionStorage;

export function saveChat(store: Store | null, chat: SavedChat): void {
  try {
    store?.setItem(KEY, JSON.stringify(chat));
  } catch {
    // A full or disabled storage: the chat is not kept across a reload.
  }
}

export function clearChat(store: Store | null): void {
  store?.removeItem(KEY);
}

const isStr = (v: unknown): v is string => typeof v === 'string' && v !== '';

// loadChat returns the kept chat, or null when there is none or it is not
// one (an older page's, or edited by hand).
export function loadChat(store: Store | null): SavedChat | null {
  const raw = store?.getItem(KEY);
  if (!raw) return null;
  try {
    const v = JSON.parse(raw) as Partial<SavedChat>;
    if (!isStr(v.chainId) || !isStr(v.threadId) || !Array.isArray(v.turns)) return null;
    const turns = v.turns.filter((t): t is SavedTurn => !!t && isStr(t.runId) && typeof t.user === 'string');
    return turns.length ? { chainId: v.chainId, threadId: v.threadId, turns } : null;
  } catch {
    return null;
  }
}

// eventsURL is the rejoin route of run runId, from its first event.
export function eventsURL(runId: string): string {
  return `/api/v1/runs/${encodeURIComponent(runId)}/events?after=0`;
}

// replayed folds one event read again into a turn's state: its run starts
// when its first event was sent, not when the page reloaded.
export function replayed(s: RunState, e: AGUIEvent, first: boolean): RunState {
  const ts = typeof e.timestamp === 'number' ? e.timestamp : Date.now();
  const base = first ? { ...s, runs: { ...s.runs, [ROOT]: { ...s.runs[ROOT], start: ts } } } : s;
  return apply(base, e, ts);
}

// RejoinError is why a run could not be read again (its status: 404 when
// its events expired or the server keeps none).
export class RejoinError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

type Fetch = (url: string, init: RequestInit) => Promise<Response>;

// rejoinRun reads run runId's events from the start, then its live ones,
// calling onEvent with each, and returns after its terminal event (or when
// signal aborts).
export async function rejoinRun(fetcher: Fetch, headers: Record<string, string>, runId: string, signal: AbortSignal, onEvent: (e: AGUIEvent, first: boolean) => void): Promise<void> {
  const res = await fetcher(eventsURL(runId), { method: 'GET', headers: { ...headers, Accept: 'text/event-stream' }, signal });
  if (!res.ok || !res.body) {
    const text = await res.text();
    let message = `${res.status} ${text.slice(0, 200)}`;
    try {
      message = (JSON.parse(text) as { error?: string }).error ?? message;
    } catch {
      // not JSON: the status and text say it
    }
    throw new RejoinError(message, res.status);
  }
  let first = true;
  await readSSE(res.body, (e) => {
    onEvent(e, first);
    first = false;
  });
}

// restoredTurns are a kept chat's turns, empty until their events are read
// again.
export function restoredTurns(chat: SavedChat): { runId: string; user: string; state: RunState }[] {
  return chat.turns.map((t) => ({ runId: t.runId, user: t.user, state: newRun(Date.now()) }));
}
