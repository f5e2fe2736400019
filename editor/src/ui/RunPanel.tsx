import { useEffect, useRef, useState } from 'react';
import { api, APIError } from '../api';
import { auth } from '../auth';
import { apply, finalText, newRun, readSSE, ROOT, type AGUIEvent, type RunState } from '../agui';
import { chatStore, clearChat, rejoinRun, RejoinError, replayed, saveChat } from '../rejoin';
import { RunBody } from './RunView';
import { Timeline } from './Timeline';
import { Interrupts, type Answer } from './Interrupts';
import { ChatUser } from './ChatUser';
import { forwardedProps } from '../chatUser';

export interface Turn {
  runId: string;
  user: string;
  state: RunState;
}

export interface Thread {
  threadId: string;
  turns: Turn[];
  // rejoin marks a thread restored after a reload: its turns' events are
  // read again from the server (../rejoin.ts) when the panel opens.
  rejoin?: boolean;
}

export function newThread(): Thread {
  return { threadId: crypto.randomUUID(), turns: [] };
}

interface Props {
  chainId: string;
  deployed: boolean;
  thread: Thread;
  setThread: (f: (t: Thread) => Thread) => void;
  onRunStart: (runId: string) => void;
  // user is who the chat runs as (forwardedProps.ruleagent.userId).
  user: string;
  verifiedIdentity: boolean;
  onUser: (user: string) => void;
}

export function RunPanel({ chainId, deployed, thread, setThread, onRunStart, user, verifiedIdentity, onUser }: Props) {
  const [input, setInput] = useState('');
  const [running, setRunning] = useState<string | null>(null);
  const [stopping, setStopping] = useState(false);
  const [now, setNow] = useState(() => Date.now());
  const abort = useRef<AbortController | null>(null);
  const log = useRef<HTMLDivElement>(null);
  const rejoining = useRef(false);

  useEffect(() => {
    if (!running) return;
    const t = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(t);
  }, [running]);

  useEffect(() => {
    log.current?.scrollTo({ top: log.current.scrollHeight });
  }, [thread]);
  const last = thread.turns[thread.turns.length - 1];
  // A run waiting for answers takes them first: new input would be refused.
  const waiting = !!last && last.state.interrupts.length > 0;

  const update = (runId: string, f: (s: RunState) => RunState) =>
    setThread((t) => ({ ...t, turns: t.turns.map((x) => (x.runId === runId ? { ...x, state: f(x.state) } : x)) }));

  // A thread restored after a reload reads its turns' events again, one
  // turn after the other; the last one's run may still be going, and is
  // followed live until it ends (Stop cancels it).
  useEffect(() => {
    if (!thread.rejoin || rejoining.current || thread.turns.length === 0) return;
    rejoining.current = true;
    setThread((t) => ({ ...t, rejoin: false }));
    const turns = thread.turns;
    const ctrl = new AbortController();
    abort.current = ctrl;
    setRunning(turns[turns.length - 1].runId);
    void (async () => {
      for (const t of turns) {
        try {
          await rejoinRun(fetch, auth.headers(), t.runId, ctrl.signal, (e, first) => update(t.runId, (s) => replayed(s, e, first)));
        } catch (e) {
          if (e instanceof RejoinError) auth.saw(e.status);
          const message = ctrl.signal.aborted
            ? 'Stopped.'
            : e instanceof RejoinError && e.status === 404
              ? 'This run can no longer be shown: the server keeps its events an hour after it ended.'
              : `This run could not be shown again: ${(e as Error).message}`;
          update(t.runId, (s) => ({ ...s, runs: { ...s.runs, [ROOT]: { ...s.runs[ROOT], status: ctrl.signal.aborted ? 'cancelled' : 'error', error: message, end: s.runs[ROOT].end ?? Date.now() } } }));
          if (ctrl.signal.aborted) break;
        }
      }
      setRunning(null);
      abort.current = null;
    })();
    // Read once per restored thread (the ref holds through StrictMode's
    // second mount); the reading ends with its runs.
  }, [thread.rejoin]);

  const history = () =>
    thread.turns.flatMap((t, i) => [
      { id: `u${i}`, role: 'user', content: t.user },
      ...(finalText(t.state) ? [{ id: `a${i}`, role: 'assistant', content: finalText(t.state) }] : []),
    ]);

  // stream runs one AG-UI request and folds its events into turn runId.
  const stream = async (runId: string, input: Record<string, unknown>) => {
    setRunning(runId);
    setStopping(false);
    onRunStart(runId);
    const ctrl = new AbortController();
    abort.current = ctrl;
    try {
      const res = await api.agui(chainId, { threadId: thread.threadId, tools: [], context: [], state: {}, forwardedProps: forwardedProps(user), ...input }, ctrl.signal);
      if (!res.ok || !res.body) {
        const body = await res.text();
        let message = `${res.status} ${body.slice(0, 300)}`;
        try {
          message = (JSON.parse(body) as { error?: string }).error ?? message;
        } catch {
          // not JSON: the status and text say it
        }
        throw new APIError(message, res.status);
      }
      await readSSE(res.body, (e: AGUIEvent) => update(runId, (s) => apply(s, e, Date.now())));
    } catch (e) {
      const message = ctrl.signal.aborted ? 'Stopped.' : (e as Error).message;
      update(runId, (s) =>
        s.runs[ROOT].status === 'running' ? { ...s, runs: { ...s.runs, [ROOT]: { ...s.runs[ROOT], status: ctrl.signal.aborted ? 'cancelled' : 'error', error: message, end: Date.now() } } } : s,
      );
    } finally {
      setRunning(null);
      abort.current = null;
    }
  };

  const send = async () => {
    const text = input.trim();
    if (!text || running || waiting) return;
    const runId = crypto.randomUUID();
    const messages = [...history(), { id: `u${thread.turns.length}`, role: 'user', content: text }];
    setThread((t) => ({ ...t, turns: [...t.turns, { runId, user: text, state: newRun(Date.now()) }] }));
    // The tab keeps the chat, so that a reload shows it again (../rejoin.ts).
    saveChat(chatStore, { chainId, threadId: thread.threadId, turns: [...thread.turns.map((t) => ({ runId: t.runId, user: t.user })), { runId, user: text }] });
    setInput('');
    await stream(runId, { runId, messages });
  };

  // answer resumes the last turn's paused run with the person's answers;
  // its events continue the same turn.
  const answer = async (answers: Answer[]) => {
    const turn = thread.turns[thread.turns.length - 1];
    if (!turn || running) return;
    await stream(turn.runId, { runId: crypto.randomUUID(), messages: history(), resume: answers });
  };

  const stop = async () => {
    if (!running) return;
    setStopping(true);
    const ctrl = abort.current;
    try {
      await api.cancel(running);
    } catch {
      // Not running any more (404), or the server is gone: end the stream.
      ctrl?.abort();
      return;
    }
    // The run ends with RUN_FINISHED (cancelled); stop reading if it does not.
    setTimeout(() => ctrl?.abort(), 5000);
  };

  return (
    <div className="run-panel" data-testid="run-panel">
      <div className="chat-log" ref={log} aria-live="polite">
        {thread.turns.length === 0 && <p className="empty">Send a message to run the chain. The conversation is kept while this page is open.</p>}
        {thread.turns.map((t) => (
          <div key={t.runId} className="chat-turn" data-run-id={t.runId}>
            <div className="user-text">{t.user}</div>
            <div className={`assistant run-${t.state.runs[ROOT].status}`}>
              <RunBody state={t.state} run={t.state.runs[ROOT]} />
              {t.state.runs[ROOT].status === 'cancelled' && <p className="note">Run cancelled.</p>}
              {t === last && t.state.interrupts.length > 0 && <Interrupts key={t.state.interrupts.map((i) => i.id).join()} interrupts={t.state.interrupts} busy={!!running} onAnswer={(a) => void answer(a)} />}
            </div>
          </div>
        ))}
      </div>
      {last && (
        <details className="timeline-box" open>
          <summary>Timeline and tokens of the last run</summary>
          <Timeline state={last.state} now={now} />
        </details>
      )}
      <ChatUser user={user} verifiedIdentity={verifiedIdentity} disabled={!!running} onChange={onUser} />
      <form
        className="chat-input"
        onSubmit={(e) => {
          e.preventDefault();
          void send();
        }}
      >
        <textarea
          aria-label="Message"
          placeholder="Message (Enter sends, Shift+Enter for a new line)"
          value={input}
          rows={2}
          disabled={!deployed}
          onChange={(e) => setInput(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
              e.preventDefault();
              void send();
            }
          }}
        />
        <div className="chat-buttons">
          {running ? (
            <button type="button" className="danger" onClick={stop} disabled={stopping}>
              {stopping ? 'Stopping…' : 'Stop'}
            </button>
          ) : (
            <button type="submit" className="primary" disabled={!deployed || !input.trim() || waiting} title={waiting ? 'Answer what the run waits for first' : undefined}>
              Send
            </button>
          )}
          <button type="button" disabled={!!running || thread.turns.length === 0} onClick={() => (clearChat(chatStore), setThread(() => newThread()))}>
            New thread
          </button>
        </div>
      </form>
    </div>
  );
}
