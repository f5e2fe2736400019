import { useEffect, useId, useRef } from 'react';
import { api } from '../api';
import type { Live } from '../live';
import { checkForm, pretty, RUN_METADATA, runBody, type MessageForm, type MessageResult, type MessageRuns } from '../messageRun';
import { Icon } from './Icon';

interface Props {
  chainId: string;
  deployed: boolean;
  runs: MessageRuns;
  setRuns: (f: (r: MessageRuns) => MessageRuns) => void;
  live: Live;
  nodeName: (id: string) => string;
  onRunStart: (runId: string) => void;
}

const KEEP = 20;

// MessageRun sends one message, data and metadata typed as JSON, to any
// chain (POST /api/v1/chains/{id}/run) and shows the final message it
// answers with, and the nodes the live trace saw the run pass.
export function MessageRun({ chainId, deployed, runs, setRuns, live, nodeName, onRunStart }: Props) {
  const id = useId();
  const { form, results } = runs;
  const errors = checkForm(form);
  const running = results.find((r) => !r.answer && r.error === undefined);
  const log = useRef<HTMLDivElement>(null);

  // The trace's steps of a run are kept with its result.
  useEffect(() => {
    if (!live.runId || !results.some((r) => r.runId === live.runId)) return;
    setRuns((rs) => ({ ...rs, results: rs.results.map((r) => (r.runId === live.runId && r.steps !== live.steps ? { ...r, steps: live.steps } : r)) }));
  }, [live.runId, live.steps]);

  useEffect(() => {
    log.current?.scrollTo({ top: log.current.scrollHeight });
  }, [results.length]);

  const setForm = (patch: Partial<MessageForm>) => setRuns((r) => ({ ...r, form: { ...r.form, ...patch } }));
  const settle = (runId: string, patch: Partial<MessageResult>) => setRuns((r) => ({ ...r, results: r.results.map((x) => (x.runId === runId ? { ...x, ...patch, end: Date.now() } : x)) }));

  const send = async () => {
    if (running || !deployed || errors.data || errors.metadata) return;
    const runId = `run-${crypto.randomUUID()}`;
    const sent = runBody(form, runId);
    setRuns((r) => ({ ...r, results: [...r.results.slice(-(KEEP - 1)), { runId, sent, start: Date.now(), steps: [] }] }));
    onRunStart(runId);
    try {
      settle(runId, { answer: await api.run(chainId, sent) });
    } catch (e) {
      settle(runId, { error: (e as Error).message });
    }
  };

  const keys = (e: React.KeyboardEvent) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      void send();
    }
  };

  return (
    <div className="message-run" data-testid="message-run">
      <div className="run-results" ref={log} aria-live="polite">
        {results.length === 0 && <p className="empty">Type the message the chain receives, its data and metadata as JSON, and run it. The answer is the chain’s final message.</p>}
        {results.map((r) => (
          <Result key={r.runId} r={r} nodeName={nodeName} />
        ))}
      </div>
      <form
        className="message-form"
        onSubmit={(e) => {
          e.preventDefault();
          void send();
        }}
      >
        <div className="field">
          <label htmlFor={`${id}-data`}>Message data</label>
          <select aria-label="Send the data as" className="data-kind" value={form.dataAs} onChange={(e) => setForm({ dataAs: e.target.value as MessageForm['dataAs'] })}>
            <option value="json">JSON</option>
            <option value="text">text</option>
          </select>
          <textarea id={`${id}-data`} className="mono" rows={5} spellCheck={false} value={form.data} aria-invalid={errors.data ? true : undefined} aria-describedby={`${id}-data-msg`} onChange={(e) => setForm({ data: e.target.value })} onKeyDown={keys} />
          <p className="msg" id={`${id}-data-msg`} role={errors.data ? 'alert' : undefined}>
            {errors.data}
          </p>
        </div>
        <div className="field">
          <label htmlFor={`${id}-md`}>Metadata (JSON object)</label>
          <textarea id={`${id}-md`} className="mono" rows={2} spellCheck={false} value={form.metadata} placeholder='{"userId": "alice"}' aria-invalid={errors.metadata ? true : undefined} aria-describedby={`${id}-md-msg`} onChange={(e) => setForm({ metadata: e.target.value })} onKeyDown={keys} />
          <p className="msg" id={`${id}-md-msg`} role={errors.metadata ? 'alert' : undefined}>
            {errors.metadata}
          </p>
        </div>
        <div className="chat-buttons">
          {running ? (
            <button type="button" className="danger" onClick={() => void api.cancel(running.runId).catch(() => {})}>
              Stop
            </button>
          ) : (
            <button type="submit" className="primary" disabled={!deployed || !!errors.data || !!errors.metadata} title="Run (Ctrl+Enter)">
              Run
            </button>
          )}
          <button type="button" disabled={!!running || results.length === 0} onClick={() => setRuns((r) => ({ ...r, results: [] }))}>
            Clear
          </button>
        </div>
      </form>
    </div>
  );
}

function Result({ r, nodeName }: { r: MessageResult; nodeName: (id: string) => string }) {
  const a = r.answer;
  const status = !a ? (r.error !== undefined ? 'error' : 'running') : a.outcome;
  const md = Object.entries(a?.metadata ?? {}).filter(([k]) => !RUN_METADATA.has(k));
  return (
    <section className={`run-result ${status}`} data-run-id={r.runId} aria-label={`Run ${r.runId}`}>
      <header>
        <Icon name={status === 'running' ? 'running' : status === 'success' ? 'check' : 'warning'} label={status} />
        <span className="badge" data-testid="outcome">
          {status}
        </span>
        {a?.relation && (
          <span className="relation" data-testid="relation">
            {a.relation}
          </span>
        )}
        <span className="spacer" />
        {r.end !== undefined && <span className="duration">{r.end - r.start} ms</span>}
      </header>
      <details className="sent">
        <summary>Sent</summary>
        <pre>{JSON.stringify({ input: r.sent.input, ...(r.sent.metadata ? { metadata: r.sent.metadata } : {}) }, null, 2)}</pre>
      </details>
      {r.error !== undefined && (
        <p className="msg" role="alert">
          {r.error}
        </p>
      )}
      {a?.error && (
        <p className="msg" role="alert">
          {a.error}
          {a.errorCode ? ` (${a.errorCode})` : ''}
        </p>
      )}
      {a && (
        <>
          <h4>Data</h4>
          <pre className="result-data" data-testid="result-data">
            {pretty(a.data) || '(empty)'}
          </pre>
          <h4>Metadata</h4>
          {md.length ? (
            <table className="kv" data-testid="result-metadata">
              <tbody>
                {md.map(([k, v]) => (
                  <tr key={k}>
                    <th scope="row">{k}</th>
                    <td>{v}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p className="empty">None besides the run’s ids.</p>
          )}
          {(a.ends?.length ?? 0) > 1 && (
            <details>
              <summary>The chain ended {a.ends!.length} times</summary>
              {a.ends!.map((e, i) => (
                <pre key={i}>
                  {e.relation}: {pretty(e.data)}
                  {e.error ? `\n${e.error}` : ''}
                </pre>
              ))}
            </details>
          )}
        </>
      )}
      <h4>Steps</h4>
      {r.steps.length ? (
        <ol className="steps" data-testid="steps">
          {r.steps.map((s, i) => (
            <li key={i} className={s.error || s.relation === 'Failure' ? 'failed' : s.done ? 'done' : 'running'}>
              <span className="step-node">{nodeName(s.nodeId)}</span>
              {s.relation && <span className="badge">{s.relation}</span>}
              {s.durationMs !== undefined && <span className="duration">{s.durationMs} ms</span>}
              {s.error && <span className="msg">{s.error}</span>}
            </li>
          ))}
        </ol>
      ) : (
        <p className="empty">{status === 'running' ? 'Waiting for the trace…' : 'The trace showed no node (it needs the live connection).'}</p>
      )}
    </section>
  );
}
