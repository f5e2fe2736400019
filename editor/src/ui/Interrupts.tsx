import { useState } from 'react';
import type { InterruptView } from '../agui';
import type { Json } from '../types';

// Answer is one resume entry (AG-UI ResumeEntry).
export interface Answer {
  interruptId: string;
  status: 'resolved' | 'cancelled';
  payload?: Json;
}

interface Props {
  interrupts: InterruptView[];
  busy: boolean;
  onAnswer: (answers: Answer[]) => void;
}

// Interrupts shows what a paused run waits for, each with the answers it
// can take: approve, approve with edited arguments, approve always, deny
// with a reason; or, for a form, the answer. All are sent together, as
// AG-UI asks (every open interrupt is answered by one resume).
export function Interrupts({ interrupts, busy, onAnswer }: Props) {
  const [answers, setAnswers] = useState<Record<string, Answer>>({});
  const set = (a: Answer) => setAnswers((x) => ({ ...x, [a.interruptId]: a }));
  const ready = interrupts.every((i) => answers[i.id]);
  return (
    <div className="interrupts" data-testid="interrupts" role="group" aria-label="The run waits for you">
      {interrupts.map((i) => (
        <InterruptCard key={i.id} interrupt={i} answer={answers[i.id]} onChange={set} />
      ))}
      <button type="button" className="primary" disabled={!ready || busy} onClick={() => onAnswer(interrupts.map((i) => answers[i.id]))}>
        {interrupts.length > 1 ? 'Send the answers' : 'Send the answer'}
      </button>
    </div>
  );
}

function pretty(v: Json | undefined): string {
  return v === undefined ? '{}' : JSON.stringify(v, null, 2);
}

function InterruptCard({ interrupt: i, answer, onChange }: { interrupt: InterruptView; answer?: Answer; onChange: (a: Answer) => void }) {
  const md = i.metadata ?? {};
  const isForm = i.reason === 'form';
  const [args, setArgs] = useState(pretty(md.arguments));
  const [reason, setReason] = useState('');
  const [always, setAlways] = useState(false);
  const [form, setForm] = useState('{}');
  const [problem, setProblem] = useState('');
  const parse = (text: string): Json | undefined => {
    try {
      setProblem('');
      return JSON.parse(text) as Json;
    } catch (e) {
      setProblem(`Not JSON: ${(e as Error).message}`);
      return undefined;
    }
  };
  const chosen = answer ? (answer.status === 'cancelled' ? 'denied' : (answer.payload as { approved?: boolean })?.approved === false ? 'denied' : 'answered') : '';
  return (
    <div className={`interrupt-card ${chosen}`} data-interrupt={i.id}>
      <div className="interrupt-title">
        <span className="badge problem">{isForm ? 'form' : 'approval'}</span> {i.message ?? String(md.tool ?? '')}
      </div>
      {Array.isArray(md.commands) && <pre className="interrupt-commands">{md.commands.join('\n')}</pre>}
      {isForm ? (
        <>
          <label>
            Answer (JSON)
            <textarea aria-label="Answer" rows={4} value={form} onChange={(e) => setForm(e.target.value)} />
          </label>
          {i.responseSchema && <pre className="schema-hint">{JSON.stringify(i.responseSchema)}</pre>}
          <div className="interrupt-buttons">
            <button
              type="button"
              onClick={() => {
                const v = parse(form);
                if (v !== undefined) onChange({ interruptId: i.id, status: 'resolved', payload: v });
              }}
            >
              Answer
            </button>
            <button type="button" onClick={() => onChange({ interruptId: i.id, status: 'cancelled' })}>
              Decline
            </button>
          </div>
        </>
      ) : (
        <>
          <label>
            Arguments
            <textarea aria-label="Arguments" rows={4} value={args} onChange={(e) => setArgs(e.target.value)} />
          </label>
          <label className="inline">
            <input type="checkbox" checked={always} onChange={(e) => setAlways(e.target.checked)} /> Always allow this exact call in this thread
          </label>
          <label>
            Reason (for a denial; the model reads it)
            <input aria-label="Reason" value={reason} onChange={(e) => setReason(e.target.value)} />
          </label>
          <div className="interrupt-buttons">
            <button
              type="button"
              onClick={() => {
                const v = parse(args);
                if (v === undefined) return;
                const edited = JSON.stringify(v) !== JSON.stringify(md.arguments ?? {});
                onChange({ interruptId: i.id, status: 'resolved', payload: { approved: true, ...(edited ? { arguments: v } : {}), ...(always ? { always: true } : {}) } });
              }}
            >
              Approve
            </button>
            <button type="button" onClick={() => onChange({ interruptId: i.id, status: 'resolved', payload: { approved: false, reason } })}>
              Deny
            </button>
          </div>
        </>
      )}
      {problem && <p className="problem-text">{problem}</p>}
      {chosen && <p className="note">{chosen === 'denied' ? 'Will be denied.' : 'Will be approved.'}</p>}
      {i.expiresAt && <p className="note">Expires {new Date(i.expiresAt).toLocaleTimeString()}.</p>}
    </div>
  );
}
