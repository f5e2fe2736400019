import { useEffect, useRef, useState } from 'react';
import { api, APIError } from '../api';
import { apply, newRun, readSSE, ROOT, type RunState } from '../agui';
import { showCost } from '../cost';
import type { Doc } from '../dsl';
import type { Live } from '../live';
import { forkPoints, forkRequest, nodeLights, runState, type ForkPoint, type RecordMeta, type StoredRecord } from '../stored';
import { RunBody } from './RunView';
import { Timeline } from './Timeline';

interface Props {
  chainId: string;
  doc: Doc | null;
  // onShow puts a recorded run's steps on the canvas (null: the live trace again).
  onShow: (l: Live | null) => void;
}

// StoredRuns opens the chain's recorded runs after the fact: the run as it
// streamed, its timeline, tokens and cost, its steps on the canvas; and
// forks one from an LLM step, edited, as a new run.
export function StoredRuns({ chainId, doc, onShow }: Props) {
  const [list, setList] = useState<RecordMeta[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [rec, setRec] = useState<StoredRecord | null>(null);
  const [point, setPoint] = useState<ForkPoint | null>(null);

  const refresh = () => {
    setError(null);
    api.records(chainId).then(setList, (e: Error) => setError(e instanceof APIError && e.status === 503 ? 'This server records no runs (serve --record-runs).' : e.message));
  };
  useEffect(refresh, [chainId]);
  useEffect(() => () => onShow(null), []); // eslint-disable-line react-hooks/exhaustive-deps

  const open = async (id: string) => {
    setError(null);
    try {
      const r = await api.record(id);
      setRec(r);
      setPoint(null);
      onShow(nodeLights(r, doc));
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const close = () => {
    setRec(null);
    setPoint(null);
    onShow(null);
  };

  if (rec) {
    const s = runState(rec);
    const root = s.runs[ROOT];
    const m = rec.meta;
    return (
      <div className="stored-run" data-testid="stored-run" data-run-id={m.runId}>
        <div className="stored-head">
          <button type="button" onClick={close}>
            All recorded runs
          </button>
          <span>
            {m.runId} · {m.outcome}
            {m.parentRunId && <> · forked from {m.parentRunId}</>}
          </span>
        </div>
        <div className={`assistant run-${root.status}`}>
          <RunBody state={s} run={root} />
        </div>
        <Timeline state={s} now={root.end ?? root.start} />
        {m.replayable ? (
          <ForkSteps rec={rec} point={point} setPoint={setPoint} />
        ) : (
          <p className="note">This run’s record is incomplete: it cannot be forked.</p>
        )}
        {error && <p className="error">{error}</p>}
      </div>
    );
  }
  return (
    <div className="stored-runs" data-testid="stored-runs">
      <div className="stored-head">
        <span>Recorded runs of this chain</span>
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </div>
      {error && <p className="error">{error}</p>}
      {list && list.length === 0 && <p className="empty">No recorded runs yet.</p>}
      <ul>
        {(list ?? []).map((m) => (
          <li key={m.runId}>
            <button type="button" className="stored-item" onClick={() => void open(m.runId)} data-run-id={m.runId}>
              <span>{new Date(m.startedAt).toLocaleString()}</span>
              <span className={`outcome ${m.outcome}`}>{m.outcome}</span>
              <span>
                {m.inputTokens + m.outputTokens} tok{m.cost !== undefined && <> · {showCost(m.cost, m.currency)}</>}
              </span>
              {m.parentRunId && <span>fork of {m.parentRunId}</span>}
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}

function ForkSteps({ rec, point, setPoint }: { rec: StoredRecord; point: ForkPoint | null; setPoint: (p: ForkPoint | null) => void }) {
  const points = forkPoints(rec);
  if (!points.length) return null;
  return (
    <div className="fork-steps">
      <p className="hint">Fork from an LLM step: the turns before it are replayed from the record, it and the turns after run live.</p>
      <ul>
        {points.map((p) => (
          <li key={`${p.agent}/${p.step}`}>
            <button type="button" aria-pressed={point === p || (point?.agent === p.agent && point.step === p.step)} onClick={() => setPoint(p)}>
              Fork from turn {p.step}
              {p.sub && ` of ${p.agent.split('>').pop()}`}
            </button>
          </li>
        ))}
      </ul>
      {point && <ForkForm key={`${point.agent}/${point.step}`} runId={rec.meta.runId} point={point} />}
    </div>
  );
}

function ForkForm({ runId, point }: { runId: string; point: ForkPoint }) {
  const system = point.messages[0]?.role === 'system' ? point.messages[0].content : undefined;
  const tools = point.messages.filter((m) => m.role === 'tool' && m.toolCallId);
  const [prompt, setPrompt] = useState(system ?? '');
  const [model, setModel] = useState('');
  const [results, setResults] = useState<Record<string, string>>(() => Object.fromEntries(tools.map((m) => [m.toolCallId!, m.content])));
  const [fork, setFork] = useState<RunState | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const abort = useRef<AbortController | null>(null);
  useEffect(() => () => abort.current?.abort(), []);

  const start = async () => {
    setBusy(true);
    setError(null);
    setFork(newRun(Date.now()));
    const ctrl = new AbortController();
    abort.current = ctrl;
    try {
      const res = await api.fork(runId, forkRequest(point, { systemPrompt: system === undefined ? undefined : prompt, model: model.trim(), toolResults: results }), ctrl.signal);
      if (!res.ok || !res.body) {
        const text = await res.text();
        let message = `${res.status} ${text.slice(0, 300)}`;
        try {
          message = (JSON.parse(text) as { error?: string }).error ?? message;
        } catch {
          // not JSON: the status and text say it
        }
        throw new APIError(message, res.status);
      }
      await readSSE(res.body, (e) => setFork((s) => apply(s ?? newRun(Date.now()), e, Date.now())));
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const root = fork?.runs[ROOT];
  return (
    <form
      className="fork-form"
      data-testid="fork-form"
      onSubmit={(e) => {
        e.preventDefault();
        void start();
      }}
    >
      {system !== undefined && (
        <label>
          System prompt
          <textarea aria-label="System prompt" rows={3} value={prompt} onChange={(e) => setPrompt(e.target.value)} />
        </label>
      )}
      {tools.map((m) => (
        <label key={m.toolCallId}>
          Result of {m.toolCallId}
          <textarea aria-label={`Result of ${m.toolCallId}`} rows={2} value={results[m.toolCallId!] ?? ''} onChange={(e) => setResults((r) => ({ ...r, [m.toolCallId!]: e.target.value }))} />
        </label>
      ))}
      <label>
        Model (empty: the agent’s)
        <input aria-label="Model" value={model} onChange={(e) => setModel(e.target.value)} />
      </label>
      <button type="submit" className="primary" disabled={busy}>
        {busy ? 'Forking…' : `Fork from turn ${point.step}`}
      </button>
      {error && <p className="error">{error}</p>}
      {fork && root && (
        <div className={`assistant run-${root.status}`} data-testid="fork-run">
          <RunBody state={fork} run={root} />
          {fork.interrupts.length > 0 && <p className="note">The fork is paused for an answer: POST /api/v1/runs/ID/resume answers it.</p>}
        </div>
      )}
    </form>
  );
}
