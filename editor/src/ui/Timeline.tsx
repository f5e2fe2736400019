import type { RunState, RunView, StepView } from '../agui';
import { showCost } from '../cost';

interface Bar {
  label: string;
  kind: 'turn' | 'tool' | 'error';
  start: number;
  end: number;
  depth: number;
  // detail is an LLM turn's figures: tokens, cost, time to first token.
  detail?: string;
}

// turnDetail is what a turn spent and how long its first token took.
export function turnDetail(s: StepView): string | undefined {
  const parts: string[] = [];
  if (s.inputTokens !== undefined || s.outputTokens !== undefined) parts.push(`${(s.inputTokens ?? 0) + (s.outputTokens ?? 0)} tok`);
  if (s.cost !== undefined) parts.push(showCost(s.cost, s.currency));
  if (s.firstOutput !== undefined) parts.push(`TTFT ${Math.max(0, s.firstOutput - s.start)} ms`);
  return parts.length ? parts.join(' · ') : undefined;
}

// bars lists a run's LLM turns and tool calls in time order, each
// sub-agent's own right under the tool call that started it.
export function bars(state: RunState, run: RunView, now: number, depth = 0): Bar[] {
  const out: Bar[] = [];
  const rows: { start: number; bars: Bar[] }[] = [];
  for (const s of run.steps) {
    if (!/^turn\b/i.test(s.name)) continue;
    rows.push({ start: s.start, bars: [{ label: `${s.name}${s.model ? ` · ${s.model}` : ''}`, kind: 'turn', start: s.start, end: s.end ?? now, depth, detail: turnDetail(s) }] });
  }
  for (const c of Object.values(state.toolCalls)) {
    if (c.run !== run.id) continue;
    const bar: Bar = { label: c.name, kind: c.isError ? 'error' : 'tool', start: c.start, end: c.end ?? now, depth };
    const nested = c.subRuns.flatMap((id) => (state.runs[id] ? bars(state, state.runs[id], now, depth + 1) : []));
    rows.push({ start: c.start, bars: [bar, ...nested] });
  }
  rows.sort((a, b) => a.start - b.start);
  for (const r of rows) out.push(...r.bars);
  return out;
}

export function Timeline({ state, now }: { state: RunState; now: number }) {
  const root = state.runs[state.root];
  const end = root.end ?? now;
  const span = Math.max(1, end - root.start);
  const list = bars(state, root, end);
  const u = state.usage;
  return (
    <div className="timeline" aria-label="Run timeline">
      <div className="timeline-head">
        <span>{(span / 1000).toFixed(2)} s</span>
        <span className="usage" data-testid="usage">
          tokens: {u.inputTokens} in · {u.outputTokens} out · {u.totalTokens} total
          {state.cost !== undefined && <span data-testid="cost"> · cost {showCost(state.cost, state.currency)}</span>}
        </span>
      </div>
      <ul>
        {list.map((b, i) => (
          <li key={i} className={`bar ${b.kind}`} style={{ paddingLeft: `${b.depth * 12}px` }}>
            <span className="bar-label" title={`${b.label}: ${b.end - b.start} ms${b.detail ? ` (${b.detail})` : ''}`}>
              {b.label}
            </span>
            <span className="bar-track">
              <span className="bar-fill" style={{ left: `${((b.start - root.start) / span) * 100}%`, width: `${Math.max(0.5, ((b.end - b.start) / span) * 100)}%` }} />
            </span>
            {b.detail && (
              <span className="bar-detail" data-testid="turn-detail">
                {b.detail}
              </span>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}
