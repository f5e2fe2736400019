import { useCallback, useEffect, useRef, useState } from 'react';

// Modal questions on the native <dialog>: focus moves into it, Escape
// cancels, and the page behind cannot be reached until it closes.
export interface Ask {
  title: string;
  message?: string;
  // input asks for a value, prefilled with it.
  input?: string;
  inputLabel?: string;
  choices?: string[];
  ok?: string;
  danger?: boolean;
}

type Pending = Ask & { resolve: (v: string | null) => void };

export function useDialog(): [(a: Ask) => Promise<string | null>, React.ReactNode] {
  const [pending, setPending] = useState<Pending | null>(null);
  const ask = useCallback((a: Ask) => new Promise<string | null>((resolve) => setPending({ ...a, resolve })), []);
  const node = pending ? <DialogView key={pending.title} p={pending} done={(v) => (setPending(null), pending.resolve(v))} /> : null;
  return [ask, node];
}

function DialogView({ p, done }: { p: Pending; done: (v: string | null) => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const [value, setValue] = useState(p.input ?? '');
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  return (
    <dialog ref={ref} className="dialog" aria-labelledby="dialog-title" onCancel={(e) => (e.preventDefault(), done(null))}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          done(p.input !== undefined ? value.trim() : 'ok');
        }}
      >
        <h2 id="dialog-title">{p.title}</h2>
        {p.message && <p>{p.message}</p>}
        {p.input !== undefined && (
          <label>
            {p.inputLabel ?? 'Value'}
            <input autoFocus value={value} onChange={(e) => setValue(e.target.value)} list={p.choices ? 'dialog-choices' : undefined} />
          </label>
        )}
        {p.choices && (
          <>
            <datalist id="dialog-choices">
              {p.choices.map((c) => (
                <option key={c} value={c} />
              ))}
            </datalist>
            <div className="choices" role="group" aria-label="Choices">
              {p.choices.map((c) => (
                <button key={c} type="button" data-choice={c} onClick={() => done(c)}>
                  {c}
                </button>
              ))}
            </div>
          </>
        )}
        <div className="dialog-buttons">
          <button type="button" onClick={() => done(null)}>
            Cancel
          </button>
          <button type="submit" className={p.danger ? 'danger' : 'primary'} autoFocus={p.input === undefined} disabled={p.input !== undefined && !value.trim()}>
            {p.ok ?? 'OK'}
          </button>
        </div>
      </form>
    </dialog>
  );
}
