import { describe, expect, it } from 'vitest';
import { finalText, newRun, ROOT, type AGUIEvent, type RunState } from './agui';
import { clearChat, eventsURL, loadChat, rejoinRun, RejoinError, replayed, restoredTurns, saveChat } from './rejoin';

// memory is a Storage for the tests.
function memory() {
  const m = new Map<string, string>();
  return { getItem: (k: string) => m.get(k) ?? null, setItem: (k: string, v: string) => void m.set(k, v), removeItem: (k: string) => void m.delete(k), m };
}

// A run as the rejoin route sends it: each frame with its id.
const events: AGUIEvent[] = [
  { type: 'RUN_STARTED', threadId: 't', runId: 'r/1', timestamp: 5000 },
  { type: 'STEP_STARTED', stepName: 'turn 1', timestamp: 5001 },
  { type: 'TEXT_MESSAGE_START', messageId: 'm', role: 'assistant', timestamp: 5002 },
  { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'Once upon ', timestamp: 5003 },
  { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'a time.', timestamp: 5004 },
  { type: 'TEXT_MESSAGE_END', messageId: 'm', timestamp: 5005 },
  { type: 'STEP_FINISHED', stepName: 'turn 1', timestamp: 5006 },
  { type: 'RUN_FINISHED', threadId: 't', runId: 'r/1', timestamp: 5010, outcome: { type: 'success' } },
];
const sse = events.map((e, i) => `id: ${i + 1}\ndata: ${JSON.stringify(e)}\n\n`).join('');

// body streams text in small pieces, frames cut anywhere.
function body(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close();
      c.enqueue(bytes.slice(at, at + 7));
      at += 7;
    },
  });
}

describe('the kept chat', () => {
  it('is kept for the tab and read back', () => {
    const s = memory();
    expect(loadChat(s)).toBeNull();
    const chat = { chainId: 'assistant', threadId: 'th', turns: [{ runId: 'r1', user: 'hi' }, { runId: 'r2', user: 'more' }] };
    saveChat(s, chat);
    expect(loadChat(s)).toEqual(chat);
    const turns = restoredTurns(chat);
    expect(turns.map((t) => [t.runId, t.user, t.state.runs[ROOT].status, t.state.runs[ROOT].items.length])).toEqual([
      ['r1', 'hi', 'running', 0],
      ['r2', 'more', 'running', 0],
    ]);
    clearChat(s);
    expect(loadChat(s)).toBeNull();
  });
  it('is ignored when it is not a chat', () => {
    const s = memory();
    for (const v of ['{', '[]', '{"chainId":"a","threadId":"t","turns":[]}', '{"chainId":"a","turns":[{"runId":"r","user":"u"}]}']) {
      s.m.set('ruleagent.chat', v);
      expect(loadChat(s)).toBeNull();
    }
  });
});

describe('rejoining a run', () => {
  it('reads the run from its first event, with the token, and shows it whole', async () => {
    let asked: { url: string; init: RequestInit } | undefined;
    const fetcher = async (url: string, init: RequestInit) => {
      asked = { url, init };
      return new Response(body(sse), { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
    };
    let s: RunState = newRun(99999);
    const seen: string[] = [];
    await rejoinRun(fetcher, { Authorization: 'Bearer k' }, 'r/1', new AbortController().signal, (e, first) => {
      seen.push(e.type);
      s = replayed(s, e, first);
    });
    expect(asked!.url).toBe('/api/v1/runs/r%2F1/events?after=0');
    expect(eventsURL('r/1')).toBe(asked!.url);
    expect(asked!.init.headers).toEqual({ Authorization: 'Bearer k', Accept: 'text/event-stream' });
    expect(seen).toEqual(events.map((e) => e.type));
    expect(finalText(s)).toBe('Once upon a time.');
    // The run's times are the server's, not the reload's.
    expect(s.runs[ROOT]).toMatchObject({ status: 'finished', start: 5000, end: 5010 });
  });
  it('says why a run cannot be read again', async () => {
    const fetcher = async () => new Response('{"error":"no run \\"r\\" (unknown, or its events expired after their retention)"}', { status: 404 });
    const err = await rejoinRun(fetcher, {}, 'r', new AbortController().signal, () => {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RejoinError);
    expect((err as RejoinError).status).toBe(404);
    expect((err as RejoinError).message).toContain('expired');
  });
});
