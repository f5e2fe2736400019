import { Icon } from './Icon';
import type { Item, RunState, RunView as Run, ToolCallView } from '../agui';

// One run's messages, reasoning and tool calls; a tool call that started a
// sub-agent shows that run inside its card, recursively and live.
export function RunBody({ state, run }: { state: RunState; run: Run }) {
  return (
    <div className="run-body">
      {run.items.map((it, i) => (
        <RunItem key={i} state={state} item={it} />
      ))}
      {run.status === 'running' && run.items.length === 0 && <p className="thinking">Thinking…</p>}
      {run.error && (
        <p className="msg run-error" role="alert">
          {run.error}
        </p>
      )}
    </div>
  );
}

function RunItem({ state, item }: { state: RunState; item: Item }) {
  if (item.kind === 'text') return item.text ? <div className="assistant-text">{item.text}</div> : null;
  if (item.kind === 'reasoning')
    return (
      <details className="reasoning">
        <summary>Reasoning{item.done ? '' : '…'}</summary>
        <div>{item.text}</div>
      </details>
    );
  const call = state.toolCalls[item.key];
  return call ? <ToolCard state={state} call={call} /> : null;
}

function pretty(s: string): string {
  try {
    return JSON.stringify(JSON.parse(s), null, 2);
  } catch {
    return s;
  }
}

function ToolCard({ state, call }: { state: RunState; call: ToolCallView }) {
  const status = call.result === undefined ? 'running' : call.isError ? 'error' : 'done';
  return (
    <details className={`tool-call ${status}`} open={call.subRuns.length > 0 || status === 'running'} data-tool-call={call.name}>
      <summary>
        <span className="status">
          <Icon name={status === 'running' ? 'running' : status === 'error' ? 'warning' : 'check'} label={status} />
        </span>
        <code className="name">{call.name}</code>
        {call.toolType && <span className={`badge type-${call.toolType}`}>{call.toolType}</span>}
        {call.targetId && <span className="target">→ {call.targetId}</span>}
        <span className="spacer" />
        {call.durationMs !== undefined && <span className="duration">{call.durationMs ? `${call.durationMs} ms` : '<1 ms'}</span>}
      </summary>
      <div className="tool-call-body">
        <h4>Arguments</h4>
        <pre>{pretty(call.args) || '{}'}</pre>
        {call.subRuns.map((id) => {
          const sub = state.runs[id];
          return sub ? (
            <div key={id} className={`sub-run ${sub.status}`} data-sub-run={sub.name ?? id}>
              <h4>
                Sub-agent {sub.name} <span className="run-status">{sub.status}</span>
              </h4>
              <RunBody state={state} run={sub} />
            </div>
          ) : null;
        })}
        {call.result !== undefined && (
          <>
            <h4>
              {call.isError ? `Error${call.errorKind ? ` (${call.errorKind})` : ''}` : 'Result'}
              {call.truncated ? ' (truncated)' : ''}
            </h4>
            <pre className="result">{pretty(call.result)}</pre>
          </>
        )}
      </div>
    </details>
  );
}
