import { useId, useRef } from 'react';
import { splitTemplate, variablesOf } from '../template';

// A code editor for the system prompt: a textarea over a highlighted copy
// of its text, so template variables stand out while typing stays native
// (undo, selection, IME, screen readers).
export function PromptEditor({ value, onChange, label, desc }: { value: string; onChange: (v: string) => void; label: string; desc: string }) {
  const id = useId();
  const back = useRef<HTMLPreElement>(null);
  const vars = [...new Set(variablesOf(value))];
  return (
    <div className="field prompt">
      <label htmlFor={id}>{label}</label>
      <div className="prompt-editor">
        <pre ref={back} aria-hidden="true" className="prompt-back">
          {splitTemplate(value).map((p, i) =>
            p.variable ? (
              <mark key={i} className={p.known ? 'var' : 'var unknown'}>
                {p.text}
              </mark>
            ) : (
              <span key={i}>{p.text}</span>
            ),
          )}
          {'\n'}
        </pre>
        <textarea
          id={id}
          data-field="systemPrompt"
          aria-describedby={`${id}-desc`}
          spellCheck={false}
          value={value}
          onChange={(e) => onChange(e.target.value)}
          onScroll={(e) => {
            if (back.current) back.current.scrollTop = e.currentTarget.scrollTop;
          }}
        />
      </div>
      <p className="desc" id={`${id}-desc`}>
        {desc}
        {vars.length > 0 && (
          <span className="vars">
            {' '}Variables: {vars.map((v) => <code key={v}>{v}</code>)}
          </span>
        )}
      </p>
    </div>
  );
}
